"""A fenced writer in Python, on Debian's packages only: python3-etcd3 for the lock (fenced_lock.py),
python3-confluent-kafka (librdkafka) with its DEFAULT partitioner for the records, and Confluent's
Avro serializer for the values (Avro in the Confluent wire format, the contract's schema registered
under <TOPIC>-value). Run it with Debian's /usr/bin/python3.

librdkafka's default partitioner (consistent_random: CRC32 of the key) is not Kafka's murmur2, so
most keys land on another partition than the Java client's; the enforcer re-routes them to the
partition that owns the key's fence (docs/user/wire-protocol.md).

Environment: KAFKA_BOOTSTRAP, SCHEMA_REGISTRY_URL, TOPIC, SCHEMA_FILE (the .avsc to register),
ETCD_ENDPOINTS, LOCK_PREFIX (default fenced-writes/locks/), WRITER_ID (client.id).
Standard input: one JSON command per line, run in order; a holder is a writer name (fence.writer)
and holds at most one lock per key:
  {"acquire": holder, "key": k, "ttl": s?}  takes k's lock under a new lease (waiting for the
      previous holder's key to go) and sends its marker (fence.op=FENCE, fence.seq=0, null value)
  {"write": holder, "key": k, "seq": n, "value": {...}|null}  sends a record under the holder's
      lock: fence.token, fence.lease (decimal), fence.seq, fence.op=WRITE, fence.writer. After a
      release the holder still sends its old token: a writer that lost its lock. While the lease
      is held but lost (no keep-alive within the TTL), the write is refused, not sent.
  {"release": holder, "key": k}  revokes the lease (which deletes the lock key)
Every record is acknowledged by all in-sync replicas before the next command.
Standard output, one JSON object a line and nothing else: {"registered": id} once; then per
command {"queued": ...} and {"acquired": ...}, {"sent": ...} with the partition the record landed
on, {"refused": ...} or {"released": ...}. A failure: one line on stderr, exit 2.
"""
import base64
import datetime
import json
import os
import sys

from confluent_kafka import Producer
from confluent_kafka.avro import CachedSchemaRegistryClient
from confluent_kafka.avro.serializer.message_serializer import MessageSerializer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

import fenced_lock

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


class Failure(Exception):
    """A failure the script foresees: printed as one line, exit code 2."""


def env(name):
    value = os.environ.get(name, "")
    if not value:
        raise Failure("environment variable %s is not set" % name)
    return value


def emit(obj):
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


class Writer:
    def __init__(self):
        self.topic = env("TOPIC")
        self.prefix = os.environ.get("LOCK_PREFIX") or fenced_lock.DEFAULT_PREFIX
        schema_text = open(env("SCHEMA_FILE"), encoding="utf-8").read()
        # The contract's schema text as it is: a registry that keys schemas by their text (Apicurio)
        # then gives every client the same id. The legacy client would send its own rendering.
        subject = self.topic + "-value"
        self.schema_id = SchemaRegistryClient({"url": env("SCHEMA_REGISTRY_URL")}).register_schema(
            subject, Schema(schema_text, "AVRO"))
        # Confluent's serializer for Debian's python3-avro (the newer AvroSerializer needs fastavro,
        # which Debian does not package): magic byte 0, the 4-byte schema id, Avro binary.
        self.serializer = MessageSerializer(CachedSchemaRegistryClient({"url": env("SCHEMA_REGISTRY_URL")}))
        self.timestamp_fields = {field["name"] for field in json.loads(schema_text)["fields"]
                                 if isinstance(field["type"], dict) and field["type"].get("logicalType") == "timestamp-millis"}
        emit({"registered": self.schema_id})
        self.etcd = fenced_lock.connect(env("ETCD_ENDPOINTS"))
        # No "partitioner" setting: librdkafka's default. acks=all and idempotence keep each
        # writer's records in order and once, as producer-lib's defaults do.
        self.producer = Producer({"bootstrap.servers": env("KAFKA_BOOTSTRAP"), "acks": "all", "enable.idempotence": True,
                                  "client.id": os.environ.get("WRITER_ID") or "python-fenced-writer"})
        self.locks = {}  # (holder, key) -> fenced_lock.Held

    def send(self, key, value, holder, held, seq, op):
        headers = [("fence.token", str(held.token).encode()), ("fence.lease", str(held.lease.id).encode()),
                   ("fence.seq", str(seq).encode()), ("fence.op", op.encode()), ("fence.writer", holder.encode("utf-8"))]
        data = None if value is None else self.serializer.encode_record_with_schema_id(self.schema_id, self.record(value))
        delivered = []
        self.producer.produce(self.topic, key=key.encode("utf-8"), value=data, headers=headers,
                              on_delivery=lambda error, message: delivered.append((error, message)))
        self.producer.flush(60)
        if not delivered:
            raise Failure("no delivery report for %s within 60 s" % key)
        error, message = delivered[0]
        if error is not None:
            raise Failure("could not send %s to %s: %s" % (key, self.topic, error))
        return {"partition": message.partition(), "offset": message.offset(),
                "valueBytes": None if data is None else base64.b64encode(data).decode("ascii")}

    def record(self, value):
        """A JSON value as python3-avro takes it: timestamp-millis fields as aware datetimes."""
        record = dict(value)
        for name in self.timestamp_fields:
            record[name] = EPOCH + datetime.timedelta(milliseconds=record[name])
        return record

    def acquire(self, holder, key, ttl_s):
        held = fenced_lock.acquire(self.etcd, key, self.prefix, ttl_s,
                                   on_queued=lambda info: emit(dict({"queued": holder, "key": key}, **info)))
        self.locks[(holder, key)] = held
        emit({"acquired": holder, "key": key, "token": held.token, "lease": str(held.lease.id), "lockKey": held.lock_key,
              "waitedOn": held.waited_on})
        marker = self.send(key, None, holder, held, 0, "FENCE")
        emit(dict({"sent": holder, "key": key, "op": "FENCE", "token": held.token, "seq": 0}, **marker))

    def held(self, holder, key):
        held = self.locks.get((holder, key))
        if held is None:
            raise Failure("%s never acquired the lock of %s" % (holder, key))
        return held

    def write(self, holder, key, seq, value):
        held = self.held(holder, key)
        lost = held.lease.lost()
        if lost is not None and lost != "released":
            emit({"refused": holder, "key": key, "seq": seq, "reason": lost})
            return
        where = self.send(key, value, holder, held, seq, "WRITE")
        emit(dict({"sent": holder, "key": key, "op": "WRITE", "token": held.token, "seq": seq}, **where))

    def run(self, command):
        if "acquire" in command:
            self.acquire(command["acquire"], command["key"], int(command.get("ttl", 30)))
        elif "write" in command:
            self.write(command["write"], command["key"], int(command["seq"]), command.get("value"))
        elif "release" in command:
            held = self.held(command["release"], command["key"])
            fenced_lock.release(held)
            emit({"released": command["release"], "key": command["key"], "lease": str(held.lease.id)})
        else:
            raise Failure("unknown command %s: expected acquire, write or release" % json.dumps(command))

    def close(self):
        self.producer.flush(30)
        for held in self.locks.values():
            if held.lease.lost() is None:
                fenced_lock.release(held)
        self.etcd.close()


def main():
    writer = Writer()
    try:
        for line in sys.stdin:
            if line.strip():
                writer.run(json.loads(line))
    finally:
        writer.close()


if __name__ == "__main__":
    try:
        main()
    except Failure as failure:
        sys.stderr.write("python-writer: %s\n" % failure)
        sys.exit(2)
