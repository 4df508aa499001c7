'use strict';
// Publishes fenced writes with kafkajs, values serialized by Confluent's AvroSerializer.
//
// Environment: KAFKA_BOOTSTRAP, SCHEMA_REGISTRY_URL, TOPIC, SCHEMA_FILE (the .avsc to register
// under <TOPIC>-value). Standard input: a JSON array of {key, headers: {name: text}, value}; a null
// value is sent as a null record value. The records are sent one at a time, each acknowledged by
// all in-sync replicas before the next, so their order on a partition is the array's order.
// Standard output: {"registered": id} once, then one line per record with where it landed.
const fs = require('fs');
const { Partitioners } = require('kafkajs');
const { AvroSerializer, SerdeType, SubjectNameStrategyType } = require('@confluentinc/schemaregistry');
const { env, emit, run, kafka, registry } = require('./common');

run(async () => {
  const topic = env('TOPIC');
  const records = JSON.parse(fs.readFileSync(0, 'utf8'));
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
  // Kafka's Java client partitions keyed records by murmur2 of the key; so does this partitioner.
  const producer = kafka('interop-produce').producer({ createPartitioner: Partitioners.DefaultPartitioner, allowAutoTopicCreation: false });
  await producer.connect();
  try {
    for (const record of records) {
      const value = record.value === null ? null : await serializer.serialize(topic, record.value);
      const [ack] = await producer.send({ topic, acks: -1, messages: [{ key: record.key, value, headers: record.headers || {} }] });
      emit({ key: record.key, partition: ack.partition, offset: ack.baseOffset, valueBytes: value === null ? null : value.toString('base64') });
    }
  } finally {
    await producer.disconnect();
  }
});
