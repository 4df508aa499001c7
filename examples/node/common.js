'use strict';
// Shared by the interop scripts: settings from the environment, JSON lines on stdout, clear failures.
const { Kafka, logLevel } = require('kafkajs');
const { SchemaRegistryClient } = require('@confluentinc/schemaregistry');

/** The value of environment variable `name`; fails naming it when it is not set. */
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

/** A failure the scripts foresee: printed as one line, without a stack, exit code 2. */
class Failure extends Error {}

function fail(message) {
  throw new Failure(message);
}

/**
 * Exits with `code` once stdout and stderr are written out: process.exit() alone drops what a
 * pipe has not taken yet (a write to a full pipe finishes later), and stdout carries the results.
 */
function exitAfterFlush(code) {
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

/** Runs `main`, then exits: 0 on success, 2 on a Failure, 1 on anything else (with its stack). */
function run(main) {
  main().then(
    () => exitAfterFlush(0),
    (error) => {
      const foreseen = error instanceof Failure;
      process.stderr.write(`interop: ${foreseen ? error.message : error && error.stack ? error.stack : error}\n`);
      exitAfterFlush(foreseen ? 2 : 1);
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
