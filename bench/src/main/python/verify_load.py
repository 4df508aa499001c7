"""Load for timing ./fence verify: KEYS real etcd locks (fenced_lock.py, the lock layout the
enforcer verifies), then WRITES_PER_KEY Avro BillingSummary writes under each, sent asynchronously with
Kafka's murmur2 partitioner (no re-routing), so the pipeline holds real accepted records and rows.

Usage (from the repository, with ./fence up running):
  set -a; . .fence/stack.env; set +a
  /usr/bin/python3 bench/src/main/python/verify_load.py KEYS WRITES_PER_KEY
Prints the records sent and the time taken.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "interop-tests", "src", "test", "python"))
import fenced_lock  # noqa: E402
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.avro import CachedSchemaRegistryClient  # noqa: E402
from confluent_kafka.avro.serializer.message_serializer import MessageSerializer  # noqa: E402
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient  # noqa: E402
import datetime  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..")
SCHEMA = os.path.join(ROOT, "schemas", "avro", "BillingSummary.avsc")


def main():
    keys, per_key = int(sys.argv[1]), int(sys.argv[2])
    topic = "fenced-writes"
    schema_text = open(SCHEMA, encoding="utf-8").read()
    schema_id = SchemaRegistryClient({"url": os.environ["SCHEMA_REGISTRY_URL"]}).register_schema(
        topic + "-value", Schema(schema_text, "AVRO"))
    serializer = MessageSerializer(CachedSchemaRegistryClient({"url": os.environ["SCHEMA_REGISTRY_URL"]}))
    etcd = fenced_lock.connect(os.environ["ETCD_ENDPOINTS"])
    producer = Producer({"bootstrap.servers": os.environ["KAFKA_BOOTSTRAP"], "acks": "all", "enable.idempotence": True,
                         "partitioner": "murmur2_random", "linger.ms": 20, "queue.buffering.max.messages": 500000})
    started = time.time()
    held = []
    for k in range(keys):
        key = "load-%06d" % k
        lock = fenced_lock.acquire(etcd, key, fenced_lock.DEFAULT_PREFIX, 600)
        held.append((key, lock))
    print("took %d locks in %.1f s" % (keys, time.time() - started), flush=True)
    sent = 0
    computed = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)
    for seq in range(1, per_key + 1):
        for key, lock in held:
            value = serializer.encode_record_with_schema_id(schema_id, {
                "customerId": key, "billingPeriod": "2026-12", "amountMinor": seq, "currency": "EUR", "lineItems": 1,
                "computedAt": computed, "computedBy": "verify-load"})
            headers = [("fence.token", str(lock.token).encode()), ("fence.lease", str(lock.lease.id).encode()),
                       ("fence.seq", str(seq).encode()), ("fence.writer", b"verify-load")]
            while True:
                try:
                    producer.produce(topic, key=key.encode(), value=value, headers=headers)
                    break
                except BufferError:
                    producer.poll(0.1)
            sent += 1
        producer.poll(0)
    producer.flush(120)
    print(json.dumps({"sent": sent, "seconds": round(time.time() - started, 1)}), flush=True)
    for _, lock in held:
        fenced_lock.release(lock)
    etcd.close()


if __name__ == "__main__":
    main()
