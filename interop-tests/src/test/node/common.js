'use strict';
// Shared by the interop scripts: settings from the environment, JSON lines on stdout, clear failures.
const { Kafka, logLevel } = require('kafkajs');
const { SchemaRegistryClient } = require('@confluentinc/schemaregistry');

/** The value of environment variable `name`; exits with a message naming it when it is not set. */
function env(name) {
  const value = process.env[name];
  if (value === undefined || value === '') {
    fail(`environment variable ${name} is not set`);
  }
  return value;
}

/** Prints one JSON object as one line on stdout, the only thing the scripts print there. */
function emit(object) {
  process.stdout.write(JSON.stringify(object, (key, value) => (typeof value === 'bigint' ? value.toString() : value)) + '\n');
}

function fail(message) {
  process.stderr.write(`interop: ${message}\n`);
  process.exit(2);
}

/** Runs `main`, turning any rejection into a one-line message and exit code 1. */
function run(main) {
  main().then(
    () => process.exit(0),
    (error) => {
      process.stderr.write(`interop: ${error && error.stack ? error.stack : error}\n`);
      process.exit(1);
    });
}

function kafka(clientId) {
  return new Kafka({
    clientId,
    brokers: env('KAFKA_BOOTSTRAP').split(','),
    logLevel: logLevel.WARN,
    // kafkajs logs through console.info and friends; stdout is for the JSON lines only.
    logCreator: () => ({ namespace, label, log }) => {
      const { message, ...extra } = log;
      process.stderr.write(`kafkajs ${label} [${namespace}] ${message} ${JSON.stringify(extra)}\n`);
    },
    retry: { retries: 5 },
  });
}

function registry() {
  return new SchemaRegistryClient({ baseURLs: [env('SCHEMA_REGISTRY_URL')], maxRetries: 2 });
}

/** Header values are UTF-8 decimal strings or text by the wire contract; Buffers become strings. */
function headersToStrings(headers) {
  const out = {};
  for (const [name, value] of Object.entries(headers || {})) {
    out[name] = Array.isArray(value) ? value.map(String) : value === null || value === undefined ? null : value.toString('utf8');
  }
  return out;
}

module.exports = { env, emit, fail, run, kafka, registry, headersToStrings };
