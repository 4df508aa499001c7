'use strict';
// Takes a resource's lock in etcd the way this project's writers do (docs/user/wire-protocol.md),
// with the npm etcd3 client's raw KV, lease and watch calls:
//
//   key    <prefix><encoded resource>/<lease id in lower-case hex>, put under our lease
//   holder the key with the oldest create revision under <prefix><encoded resource>/
//   token  the header revision of the read that found our key the oldest
//
// This is etcd's own concurrency.Mutex algorithm (which etcdctl lock and the v3lock Lock RPC run)
// on the layout of the Java class dev.fencedwrites.etcd.LockKeys, so Java, Go and Node.js writers
// queue on one another and the enforcer can verify every token.
const { Etcd3 } = require('etcd3');

const DEFAULT_PREFIX = 'fenced-writes/locks/';

// etcd's protobuf enums, by number (rpc.proto).
const COMPARE_EQUAL = 0;
const TARGET_CREATE = 1;
const SORT_ASCEND = 1;
const SORT_DESCEND = 2;
const SORT_BY_CREATE = 2;

/**
 * Encodes a resource id like Java's URLEncoder.encode(resource, UTF_8) (LockKeys.encode): the
 * bytes a-z A-Z 0-9 . - * _ stay, a space becomes '+', every other byte of the UTF-8 form becomes
 * %XX in upper-case hex. A string is taken as its UTF-8 bytes; a Buffer as it is.
 */
function encodeResource(resource) {
  const bytes = Buffer.isBuffer(resource) ? resource : Buffer.from(resource, 'utf8');
  let out = '';
  for (const b of bytes) {
    const keep = (b >= 0x61 && b <= 0x7a) || (b >= 0x41 && b <= 0x5a) || (b >= 0x30 && b <= 0x39)
      || b === 0x2e || b === 0x2d || b === 0x2a || b === 0x5f;
    if (keep) {
      out += String.fromCharCode(b);
    } else if (b === 0x20) {
      out += '+';
    } else {
      out += '%' + b.toString(16).toUpperCase().padStart(2, '0');
    }
  }
  return out;
}

/** The lock's name, <prefix><encoded resource>; the waiters' keys are under name + '/'. */
function lockName(prefix, resource) {
  return prefix + encodeResource(resource);
}

/** The end of the key range holding every key that starts with `prefix` (etcd's "prefix + 1"). */
function prefixEnd(prefix) {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] < 0xff) {
      end[i] += 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]); // every key
}

/** An etcd client for comma-separated endpoints (http://host:port), each call bounded by `requestTimeoutMs`. */
function connect(endpoints, requestTimeoutMs = 10000) {
  return new Etcd3({
    hosts: endpoints.split(',').map((e) => e.trim()).filter((e) => e !== ''),
    defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + requestTimeoutMs }),
  });
}

/**
 * Acquires `resource`'s lock under a new lease of `ttlSeconds` (kept alive by the client).
 * `onQueued(info)` is called once our key is in etcd, before any waiting: {lockKey, createRevision,
 * holder} where holder is the key that held the lock then (ours when uncontended).
 *
 * Resolves to {token, leaseId (decimal string), lockKey, waitedOn: [predecessor keys], lease};
 * release with `release(held)`. Rejects when etcd fails or the lease ends while waiting (our key
 * gone), after revoking the lease.
 */
async function acquire(client, { prefix = DEFAULT_PREFIX, resource, ttlSeconds = 30, onQueued = () => {} }) {
  const name = lockName(prefix, resource);
  const dir = Buffer.from(name + '/');
  const dirEnd = prefixEnd(dir);
  const lease = client.lease(ttlSeconds, { autoKeepAlive: true });
  lease.on('lost', () => {}); // a lost lease shows as our key gone; the event must not be unhandled
  const leaseId = await lease.grant();
  const lockKey = `${name}/${BigInt(leaseId).toString(16)}`;
  const myKey = Buffer.from(lockKey);
  try {
    // 1. Put our key under the lease if absent and read the oldest key, in one transaction.
    const oldest = { key: dir, range_end: dirEnd, sort_order: SORT_ASCEND, sort_target: SORT_BY_CREATE, limit: 1 };
    const put = await client.kv.txn({
      compare: [{ key: myKey, target: TARGET_CREATE, result: COMPARE_EQUAL, create_revision: 0 }],
      success: [{ request_put: { key: myKey, value: Buffer.alloc(0), lease: leaseId } }, { request_range: oldest }],
      failure: [{ request_range: { key: myKey } }, { request_range: oldest }],
    });
    const myRev = put.succeeded ? BigInt(put.header.revision) : BigInt(put.responses[0].response_range.kvs[0].create_revision);
    const first = put.responses[1].response_range.kvs;
    const holder = first.length === 0 ? lockKey : first[0].key.toString('utf8');
    onQueued({ lockKey, createRevision: myRev.toString(), holder });
    if (first.length === 0 || BigInt(first[0].create_revision) === myRev) {
      // 2a. Ours is the oldest at this transaction's revision: that revision is the token.
      return { token: put.header.revision, leaseId, lockKey, waitedOn: [], lease };
    }
    // 2b. Wait: while a key older than ours exists, wait for the newest such key's delete, then look again.
    const waitedOn = [];
    for (;;) {
      const check = await client.kv.txn({
        compare: [{ key: myKey, target: TARGET_CREATE, result: COMPARE_EQUAL, create_revision: myRev.toString() }],
        success: [{ request_range: { key: dir, range_end: dirEnd, max_create_revision: (myRev - 1n).toString(),
          sort_order: SORT_DESCEND, sort_target: SORT_BY_CREATE, limit: 1 } }],
        failure: [],
      });
      if (!check.succeeded) {
        throw new Error(`the lock key ${lockKey} is gone: lease ${leaseId} expired or was revoked while waiting`);
      }
      const older = check.responses[0].response_range.kvs;
      if (older.length === 0) {
        // Our key exists at this revision and no older one does: ours is the oldest, the token is this revision.
        return { token: check.header.revision, leaseId, lockKey, waitedOn, lease };
      }
      const predecessor = older[0].key;
      waitedOn.push(predecessor.toString('utf8'));
      // Watching from the revision after the check cannot miss a delete that came after it.
      await deleted(client, predecessor, (BigInt(check.header.revision) + 1n).toString());
    }
  } catch (error) {
    await lease.revoke().catch(() => {});
    throw error;
  }
}

/** Resolves once `key` is deleted at or after `fromRevision` (or the watch ends: the caller looks again). */
function deleted(client, key, fromRevision) {
  return new Promise((resolve, reject) => {
    // No event filter: etcd3 1.1.2's ignore('put') sends NODELETE (its operationNames table is swapped).
    const watcher = client.watch().key(key).startRevision(fromRevision).watcher();
    const done = (error) => {
      watcher.removeAllListeners();
      watcher.on('error', () => {});
      watcher.cancel().catch(() => {});
      if (error) {
        reject(error);
      } else {
        resolve();
      }
    };
    watcher.on('delete', () => done());
    watcher.on('end', () => done());
    watcher.on('error', (error) => done(error));
  });
}

/** Releases a held lock: revoking the lease deletes our key, which lets the next waiter in. */
async function release(held) {
  await held.lease.revoke();
}

module.exports = { DEFAULT_PREFIX, encodeResource, lockName, connect, acquire, release };
