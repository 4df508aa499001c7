'use strict';
// A fenced writer in Node.js: takes real etcd locks (lock.js), publishes each acquisition's FENCE
// marker and its writes with kafkajs, values serialized by Confluent's AvroSerializer.
//
// Environment: KAFKA_BOOTSTRAP, SCHEMA_REGISTRY_URL, TOPIC, SCHEMA_FILE (the .avsc to register
// under <TOPIC>-value), ETCD_ENDPOINTS, LOCK_PREFIX (default fenced-writes/locks/).
// Standard input: a JSON array of steps, run in order; a holder is a writer name (fence.writer)
// and holds at most one lock per key:
//   {"acquire": holder, "key": k, "ttl": s?, "background": bool?}  takes k's lock under a new lease
//       and sends its marker (fence.op=FENCE, fence.seq=0). With background the next steps run
//       while it waits; the first step that needs the lock waits for it.
//   {"release": holder, "key": k}  revokes the lease (which deletes the lock key)
//   {"write": holder, "key": k, "seq": n, "value": {...}|null}  sends a record under the holder's
//       lock on k: fence.token, fence.lease (decimal), fence.seq, fence.op=WRITE, fence.writer.
//       After a release the holder still sends its old token: a writer that lost its lock.
// Every record is acknowledged by all in-sync replicas before the next step.
// Standard output: {"registered": id} once; {"queued": ...} when a lock key is in etcd;
// {"acquired": ...} with token and lease; {"sent": ...} per record with where it landed;
// {"released": ...}.
const fs = require('fs');
const { Partitioners } = require('kafkajs');
const { AvroSerializer, SerdeType, SubjectNameStrategyType } = require('@confluentinc/schemaregistry');
const { env, emit, fail, run, kafka, registry } = require('./common');
const lock = require('./lock');

run(async () => {
  const topic = env('TOPIC');
  const prefix = process.env.LOCK_PREFIX || lock.DEFAULT_PREFIX;
  const steps = JSON.parse(fs.readFileSync(0, 'utf8'));
  const client = registry();
  // The serializer's own auto-registration derives a schema from the message (records named
  // Record1, numbers as int), so the contract's schema is registered here and then used by id.
  const id = await client.register(`${topic}-value`, { schemaType: 'AVRO', schema: fs.readFileSync(env('SCHEMA_FILE'), 'utf8') });
  emit({ registered: id });
  const serializer = new AvroSerializer(client, SerdeType.VALUE, {
    autoRegisterSchemas: false,
    useSchemaId: id,
    subjectNameStrategyType: SubjectNameStrategyType.TOPIC,
  });
  const etcd = lock.connect(env('ETCD_ENDPOINTS'));
  // Kafka's Java client partitions keyed records by murmur2 of the key; so does this partitioner.
  const producer = kafka('interop-produce').producer({ createPartitioner: Partitioners.DefaultPartitioner, allowAutoTopicCreation: false });
  await producer.connect();
  const locks = new Map(); // holder + key -> promise of the held lock (marker sent)
  const name = (holder, key) => `${holder}\u0000${key}`;

  async function send(key, value, headers) {
    const bytes = value === null ? null : await serializer.serialize(topic, value);
    const [ack] = await producer.send({ topic, acks: -1, messages: [{ key, value: bytes, headers }] });
    return { partition: ack.partition, offset: ack.baseOffset, valueBytes: bytes === null ? null : bytes.toString('base64') };
  }

  function headers(holder, held, seq, op) {
    return { 'fence.token': held.token, 'fence.lease': held.leaseId, 'fence.seq': String(seq), 'fence.op': op, 'fence.writer': holder };
  }

  async function held(holder, key) {
    const pending = locks.get(name(holder, key));
    if (pending === undefined) {
      fail(`${holder} never acquired the lock of ${key}`);
    }
    return pending;
  }

  try {
    for (const step of steps) {
      if (step.acquire !== undefined) {
        const holder = step.acquire;
        let queued;
        const isQueued = new Promise((resolve) => { queued = resolve; });
        const acquisition = lock.acquire(etcd, {
          prefix, resource: step.key, ttlSeconds: step.ttl || 30,
          onQueued: (info) => {
            emit({ queued: holder, key: step.key, ...info });
            queued();
          },
        }).then(async (lease) => {
          emit({ acquired: holder, key: step.key, token: lease.token, lease: lease.leaseId, lockKey: lease.lockKey, waitedOn: lease.waitedOn });
          const marker = await send(step.key, null, headers(holder, lease, 0, 'FENCE'));
          emit({ sent: holder, key: step.key, op: 'FENCE', token: lease.token, seq: 0, ...marker });
          return lease;
        });
        locks.set(name(holder, step.key), acquisition);
        if (step.background) {
          acquisition.catch(() => {}); // awaited (and reported) by the step that needs it
          await Promise.race([isQueued, acquisition]);
        } else {
          await acquisition;
        }
      } else if (step.release !== undefined) {
        const lease = await held(step.release, step.key);
        await lock.release(lease);
        emit({ released: step.release, key: step.key, lease: lease.leaseId });
      } else if (step.write !== undefined) {
        const lease = await held(step.write, step.key);
        const where = await send(step.key, step.value, headers(step.write, lease, step.seq, 'WRITE'));
        emit({ sent: step.write, key: step.key, op: 'WRITE', token: lease.token, seq: step.seq, ...where });
      } else {
        fail(`unknown step ${JSON.stringify(step)}: expected acquire, release or write`);
      }
    }
  } finally {
    await producer.disconnect();
    for (const pending of locks.values()) {
      const lease = await pending.catch(() => null);
      if (lease !== null) {
        await lease.lease.revoke().catch(() => {});
      }
    }
    etcd.close();
  }
});
