'use strict';
// Reads a topic from the beginning with kafkajs (read_committed) and decodes each value with
// Confluent's AvroDeserializer, through the schema registry.
//
// Environment: KAFKA_BOOTSTRAP, SCHEMA_REGISTRY_URL, TOPIC, KEY_PREFIX (only records whose key
// starts with it), EXPECT (stop after that many), TIMEOUT_MS (give up after, default 60000).
// Standard output: one line per record: topic, partition, offset, key, headers (as text), the
// schema id from the value's wire-format prefix and the decoded value (null for a null value);
// a value that does not decode is printed with "error" instead. Avro longs are decoded exactly, as
// BigInt, and printed as decimal strings: with avsc's default long type the deserializer refuses a
// long beyond 2^53 ("potential precision loss").
const avsc = require('avsc');
const { AvroDeserializer, SerdeType, SubjectNameStrategyType } = require('@confluentinc/schemaregistry');
const { env, emit, fail, run, kafka, registry, headersToStrings } = require('./common');

/** An Avro long as a JS BigInt (avsc hands over the 8-byte little-endian two's complement). */
function exactLong() {
  return avsc.types.LongType.__with({
    fromBuffer: (buffer) => buffer.readBigInt64LE(),
    toBuffer: (value) => {
      const buffer = Buffer.alloc(8);
      buffer.writeBigInt64LE(BigInt(value));
      return buffer;
    },
    fromJSON: (json) => BigInt(json),
    toJSON: (value) => value.toString(),
    isValid: (value) => typeof value === 'bigint',
    compare: (a, b) => (a === b ? 0 : a < b ? -1 : 1),
  });
}

run(async () => {
  const topic = env('TOPIC');
  const prefix = env('KEY_PREFIX');
  const expect = Number(env('EXPECT'));
  const timeoutMs = Number(process.env.TIMEOUT_MS || 60000);
  const deserializer = new AvroDeserializer(registry(), SerdeType.VALUE, {
    subjectNameStrategyType: SubjectNameStrategyType.TOPIC,
    registry: { long: exactLong() }, // avsc's forSchema options pass through the deserializer's config
  });
  const consumer = kafka('interop-consume').consumer({ groupId: `interop-${process.pid}-${Date.now()}`, readUncommitted: false });
  await consumer.connect();
  let seen = 0;
  let done;
  const finished = new Promise((resolve) => { done = resolve; });
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ topic: from, partition, message }) => {
      const key = message.key === null ? null : message.key.toString('utf8');
      if (key === null || !key.startsWith(prefix)) {
        return;
      }
      const line = { topic: from, partition, offset: message.offset, key, headers: headersToStrings(message.headers) };
      if (message.value === null) {
        line.value = null;
      } else {
        line.schemaId = message.value.length >= 5 && message.value[0] === 0 ? message.value.readInt32BE(1) : null;
        try {
          line.value = await deserializer.deserialize(from, message.value);
        } catch (error) {
          line.error = String(error && error.message ? error.message : error);
        }
      }
      emit(line);
      if (++seen >= expect) {
        done();
      }
    },
  });
  const timer = setTimeout(() => done('timeout'), timeoutMs);
  const outcome = await finished;
  clearTimeout(timer);
  await consumer.disconnect();
  if (outcome === 'timeout') {
    fail(`read ${seen} of ${expect} records with key prefix ${prefix} from ${topic} within ${timeoutMs} ms`);
  }
});
