"""A resource's lock in etcd, taken the way this project's writers take it (docs/user/wire-protocol.md),
with Debian's python3-etcd3 (0.12) and its raw gRPC stubs:

  key    <prefix><encoded resource>/<lease id in lower-case hex>, put under our lease
  holder the key with the oldest create revision under <prefix><encoded resource>/
  token  the header revision of the transaction that found our key the oldest

This is etcd's own concurrency.Mutex algorithm (what etcdctl lock and the v3lock Lock RPC run) on
the layout of the Java class dev.fencedwrites.etcd.LockKeys, so Java, Go, Node.js and Python
writers queue on one another and the enforcer can verify every token. python3-etcd3's own lock()
uses one key per name with no queue and no encoding: its tokens would not verify. Its
transaction() hides the header revision, hence the raw KV stub here.
"""
import threading
import time
from urllib.parse import urlsplit

import etcd3
from etcd3 import etcdrpc
from etcd3.events import DeleteEvent

DEFAULT_PREFIX = "fenced-writes/locks/"

_KEEP = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-*_")


def encode_resource(resource):
    """Encodes a resource id as Java's URLEncoder.encode(resource, UTF_8) does (LockKeys.encode).

    The bytes a-z A-Z 0-9 . - * _ stay, a space becomes '+', every other byte of the UTF-8 form
    becomes %XX in upper-case hex. A str is taken as its UTF-8 bytes, bytes as they are. Not
    urllib.parse.quote: it keeps '/' and '~' and writes a space as %20, which is another lock.
    """
    data = resource.encode("utf-8") if isinstance(resource, str) else bytes(resource)
    return "".join(chr(b) if b in _KEEP else "+" if b == 0x20 else "%%%02X" % b for b in data)


def lock_name(prefix, resource):
    """The lock's name, <prefix><encoded resource>; the waiters' keys are under name + '/'."""
    return prefix + encode_resource(resource)


def connect(endpoints, timeout_s=10):
    """An etcd client for the first endpoint of a comma-separated list (http://host:port) that answers.

    python3-etcd3 0.12 talks to one member; with several endpoints the first that answers a status
    request is used. Every unary call is bounded by timeout_s seconds.
    """
    errors = []
    for endpoint in [e.strip() for e in endpoints.split(",") if e.strip()]:
        url = urlsplit(endpoint if "://" in endpoint else "http://" + endpoint)
        client = etcd3.client(host=url.hostname, port=url.port or 2379, timeout=timeout_s)
        try:
            client.status()
            return client
        except Exception as error:  # noqa: BLE001 - try the next member; all failures are reported below
            errors.append("%s: %s" % (endpoint, error))
            client.close()
    raise RuntimeError("no etcd endpoint of %r answered: %s" % (endpoints, "; ".join(errors)))


class Lease:
    """A granted lease kept alive every TTL/3 on a daemon thread.

    Lost when etcd answers a keep-alive with TTL 0 (expired or revoked), or when no keep-alive was
    acknowledged for a whole TTL: the local deadline is the send time of the last acknowledged
    keep-alive plus the TTL, on a monotonic clock, so it never passes later than etcd's expiry.
    Failed keep-alives are retried and counted.
    """

    def __init__(self, client, ttl_s):
        self.client = client
        self.ttl_s = ttl_s
        sent = time.monotonic()
        self.id = client.lease(ttl_s).id
        self.deadline = sent + ttl_s
        self.keepalive_failures = 0
        self.lost_reason = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep_alive, name="keep-alive-%x" % self.id, daemon=True)
        self._thread.start()

    def lost(self):
        """Why the lease is lost, or None while it is held."""
        if self.lost_reason is None and time.monotonic() >= self.deadline:
            self.lost_reason = "no keep-alive acknowledged within the TTL of %d s" % self.ttl_s
        return self.lost_reason

    def _keep_alive(self):
        while not self._stop.wait(self.ttl_s / 3.0) and self.lost() is None:
            sent = time.monotonic()
            try:
                for response in self.client.refresh_lease(self.id):
                    if response.TTL <= 0:
                        self.lost_reason = "etcd says lease %d is not found (expired or revoked)" % self.id
                    else:
                        self.deadline = sent + self.ttl_s
            except Exception:  # noqa: BLE001 - a transient stream error; the deadline decides
                self.keepalive_failures += 1

    def revoke(self):
        """Stops the keep-alive and revokes the lease, which deletes every key attached to it."""
        self._stop.set()
        if self.lost_reason is None:
            self.lost_reason = "released"
        self.client.revoke_lease(self.id)


class Held:
    """A held lock: the fencing token, the lease, our key and the keys we waited on."""

    def __init__(self, token, lease, lock_key, waited_on):
        self.token = token
        self.lease = lease
        self.lock_key = lock_key
        self.waited_on = waited_on


def _txn(client, compare, success, failure=()):
    request = etcdrpc.TxnRequest(compare=compare, success=list(success), failure=list(failure))
    return client.kvstub.Txn(request, client.timeout, credentials=client.call_credentials, metadata=client.metadata)


def _range(key, range_end, **options):
    return etcdrpc.RequestOp(request_range=etcdrpc.RangeRequest(key=key, range_end=range_end, **options))


def _create_revision_is(key, revision):
    return etcdrpc.Compare(key=key, target=etcdrpc.Compare.CREATE, result=etcdrpc.Compare.EQUAL, create_revision=revision)


def acquire(client, resource, prefix=DEFAULT_PREFIX, ttl_s=30, on_queued=lambda info: None):
    """Acquires resource's lock under a new lease of ttl_s seconds; returns a Held.

    on_queued(info) is called once our key is in etcd, before any waiting, with lockKey,
    createRevision and holder (the key that held the lock then: ours when uncontended). Raises
    RuntimeError when our key goes while waiting (the lease expired), after revoking the lease.
    """
    name = lock_name(prefix, resource)
    lo = (name + "/").encode("utf-8")
    hi = (name + "0").encode("utf-8")  # '0' is '/' + 1: the end of the range of keys under name + '/'
    lease = Lease(client, ttl_s)
    lock_key = "%s/%x" % (name, lease.id)
    me = lock_key.encode("utf-8")
    oldest = _range(lo, hi, limit=1, sort_order=etcdrpc.RangeRequest.ASCEND, sort_target=etcdrpc.RangeRequest.CREATE)
    try:
        # 1. Put our key under the lease if absent and read the oldest key, in one transaction.
        put = etcdrpc.RequestOp(request_put=etcdrpc.PutRequest(key=me, value=b"", lease=lease.id))
        first = _txn(client, [_create_revision_is(me, 0)], [put, oldest], [_range(me, b""), oldest])
        my_rev = first.header.revision if first.succeeded else first.responses[0].response_range.kvs[0].create_revision
        kvs = first.responses[1].response_range.kvs
        on_queued({"lockKey": lock_key, "createRevision": my_rev,
                   "holder": kvs[0].key.decode("utf-8") if kvs else lock_key})
        if not kvs or kvs[0].create_revision == my_rev:
            # 2a. Ours is the oldest at this transaction's revision: that revision is the token.
            return Held(first.header.revision, lease, lock_key, [])
        # 2b. While a key older than ours exists, wait for the newest such key's delete, then look again.
        waited_on = []
        predecessor_range = _range(lo, hi, limit=1, max_create_revision=my_rev - 1,
                                   sort_order=etcdrpc.RangeRequest.DESCEND, sort_target=etcdrpc.RangeRequest.CREATE)
        while True:
            check = _txn(client, [_create_revision_is(me, my_rev)], [predecessor_range])
            if not check.succeeded:
                raise RuntimeError("the lock key %s is gone: lease %d expired or was revoked while waiting"
                                   % (lock_key, lease.id))
            older = check.responses[0].response_range.kvs
            if not older:
                # Our key exists at this revision and no older one does: the token is this revision.
                return Held(check.header.revision, lease, lock_key, waited_on)
            predecessor = older[0].key.decode("utf-8")
            if not waited_on or waited_on[-1] != predecessor:
                waited_on.append(predecessor)
            _wait_for_delete(client, older[0].key, check.header.revision + 1, ttl_s)
    except BaseException:
        try:
            lease.revoke()
        except Exception:  # noqa: BLE001 - the original error is the one to report
            pass
        raise


def _wait_for_delete(client, key, from_revision, timeout_s):
    """Returns once key is deleted at or after from_revision, or after timeout_s (the caller looks again).

    Watching from the revision after the check cannot miss a delete that came after it; the bound
    lets the caller notice its own key gone (a lease that expired while waiting).
    """
    deleted = threading.Event()

    def on_response(response):
        # An error (the watch stream broke, or the revision was compacted) also ends the wait.
        if isinstance(response, Exception) or any(isinstance(event, DeleteEvent) for event in response.events):
            deleted.set()

    watch_id = client.add_watch_callback(key, on_response, start_revision=from_revision)
    try:
        deleted.wait(timeout_s)
    finally:
        client.cancel_watch(watch_id)


def release(held):
    """Releases a held lock: revoking the lease deletes our key, which lets the next waiter in."""
    held.lease.revoke()
