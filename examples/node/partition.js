'use strict';
// Prints the partition kafkajs' DefaultPartitioner picks for each key, without a broker.
// Environment: PARTITIONS. Standard input: a JSON array of keys. Standard output: one JSON
// object {key: partition}.
const fs = require('fs');
const { Partitioners } = require('kafkajs');
const { env, emit, run } = require('./common');

run(async () => {
  const count = Number(env('PARTITIONS'));
  const partitionMetadata = Array.from({ length: count }, (_, id) => ({ partitionId: id, leader: 0 }));
  const partitioner = Partitioners.DefaultPartitioner();
  const picked = {};
  for (const key of JSON.parse(fs.readFileSync(0, 'utf8'))) {
    picked[key] = partitioner({ topic: 't', partitionMetadata, message: { key } });
  }
  emit(picked);
});
