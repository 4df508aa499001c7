'use strict';
// Prints lock.js' encoding of resource ids, without etcd, for comparison with Java's LockKeys.
// Standard input: {"strings": [text, ...], "bytes": [base64, ...]}: ids as text (taken as their
// UTF-8) and as raw bytes. Standard output: one JSON object {"strings": [...], "bytes": [...]}
// with each id's encoding, in the same order.
const fs = require('fs');
const { emit, run } = require('./common');
const { encodeResource } = require('./lock');

run(async () => {
  const input = JSON.parse(fs.readFileSync(0, 'utf8'));
  emit({
    strings: input.strings.map((text) => encodeResource(text)),
    bytes: input.bytes.map((base64) => encodeResource(Buffer.from(base64, 'base64'))),
  });
});
