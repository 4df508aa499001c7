package dev.fencedwrites.producer;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * One acquisition of an etcd lock under a lease, by the algorithm of etcd's own lock
 * ({@code clientv3/concurrency.Mutex}, which the v3lock {@code Lock} RPC runs server-side), on the
 * same keys: the waiter key {@code <name>/<lease id in hex>} is put under the lease, and the key
 * with the oldest create revision under {@code <name>/} holds the lock. Clients using the
 * {@code Lock} RPC on the same names therefore exclude and queue with this one.
 *
 * <p>Two differences, both on the client side of the same keys:
 * <ul>
 *   <li>Every "am I the owner" check is one transaction that also requires our own key to exist
 *       with the create revision we put it at, so an answer can never come for a key that expired
 *       while waiting (etcd 3.4's {@code Lock} RPC could give one, which cost a read-back).</li>
 *   <li>A waiter watches its predecessor's key from "now" (a synced watcher, told of the delete at
 *       once) and re-checks after the watch is created, instead of watching from a past revision:
 *       etcd puts such a watcher in its unsynced group, served only every 100 ms.</li>
 * </ul>
 *
 * <p>The token is the header revision of the transaction that found our key the oldest: our key
 * existed at that revision and every older one had been deleted, so a later holder's token (taken
 * after our key's delete) is strictly larger.
 */
final class EtcdLock {
    /** A held lock: the token (the revision at which we were found the owner) and our key. */
    record Held(long token, ByteSequence key) {
    }

    private final Client client;
    private final Duration requestTimeout;
    private final ByteSequence prefix;
    private final ByteSequence myKey;
    private final long leaseId;
    private final CompletableFuture<Held> result = new CompletableFuture<>();
    private Watch.Watcher watcher; // guarded by this
    private ByteSequence watched; // guarded by this: the predecessor the watcher waits on
    private long generation; // guarded by this: bumped by every new watch or re-check
    private volatile long myRev;

    private EtcdLock(Client client, Duration requestTimeout, String name, long leaseId) {
        this.client = client;
        this.requestTimeout = requestTimeout;
        this.prefix = ByteSequence.from(name + "/", StandardCharsets.UTF_8);
        this.myKey = ByteSequence.from(name + "/" + Long.toHexString(leaseId), StandardCharsets.UTF_8);
        this.leaseId = leaseId;
    }

    /**
     * Starts acquiring lock {@code name} under {@code leaseId}. Cancelling (or otherwise completing)
     * the future stops the waiting; the caller then revokes the lease, which deletes the waiter key.
     */
    static CompletableFuture<Held> lock(Client client, Duration requestTimeout, String name, long leaseId) {
        EtcdLock lock = new EtcdLock(client, requestTimeout, name, leaseId);
        lock.result.whenComplete((held, error) -> lock.closeWatcher());
        lock.enqueue();
        return lock.result;
    }

    /** Puts our key (if absent) and reads the oldest key under the name, in one transaction. */
    private void enqueue() {
        GetOption owner = GetOption.builder().isPrefix(true).withSortField(GetOption.SortTarget.CREATE)
                .withSortOrder(GetOption.SortOrder.ASCEND).withLimit(1).build();
        client.getKVClient().txn()
                .If(new Cmp(myKey, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
                .Then(Op.put(myKey, ByteSequence.EMPTY, PutOption.builder().withLeaseId(leaseId).build()), Op.get(prefix, owner))
                .Else(Op.get(myKey, GetOption.DEFAULT), Op.get(prefix, owner))
                .commit().orTimeout(requestTimeout.toMillis(), TimeUnit.MILLISECONDS)
                .whenComplete((response, error) -> {
                    if (error != null) {
                        result.completeExceptionally(error);
                        return;
                    }
                    List<GetResponse> gets = response.getGetResponses();
                    if (response.isSucceeded()) {
                        myRev = response.getHeader().getRevision();
                    } else {
                        myRev = gets.get(0).getKvs().get(0).getCreateRevision();
                    }
                    List<KeyValue> oldest = gets.get(gets.size() - 1).getKvs();
                    if (oldest.isEmpty() || oldest.get(0).getCreateRevision() == myRev) {
                        // Our key was put (or found) in this very transaction, under our lease, and is the oldest.
                        result.complete(new Held(response.getHeader().getRevision(), myKey));
                    } else {
                        check(0);
                    }
                });
    }

    /**
     * One transaction: our key must still exist at {@link #myRev}; then the newest key older than
     * ours is our predecessor. None: we hold the lock. Issued for generation {@code gen} of the
     * wait; an answer for an older generation is dropped, a newer check being under way.
     */
    private void check(long gen) {
        if (result.isDone()) {
            return;
        }
        GetOption predecessor = GetOption.builder().isPrefix(true).withMaxCreateRevision(myRev - 1)
                .withSortField(GetOption.SortTarget.CREATE).withSortOrder(GetOption.SortOrder.DESCEND).withLimit(1).build();
        client.getKVClient().txn()
                .If(new Cmp(myKey, Cmp.Op.EQUAL, CmpTarget.createRevision(myRev)))
                .Then(Op.get(prefix, predecessor))
                .commit().orTimeout(requestTimeout.toMillis(), TimeUnit.MILLISECONDS)
                .whenComplete((response, error) -> checked(response, error, gen));
    }

    private void checked(TxnResponse response, Throwable error, long gen) {
        ByteSequence predecessor = null;
        synchronized (this) {
            if (gen != generation || result.isDone()) {
                return;
            }
            if (error == null && response.isSucceeded()) {
                List<KeyValue> older = response.getGetResponses().get(0).getKvs();
                if (!older.isEmpty()) {
                    predecessor = older.get(0).getKey();
                    if (watcher != null && predecessor.equals(watched)) {
                        return; // the watch, created before this check, sees the delete, which comes after this revision
                    }
                }
            }
        }
        // jetcd is called and the result completed outside the monitor: listeners may run inline.
        if (error != null) {
            result.completeExceptionally(error);
        } else if (!response.isSucceeded()) {
            result.completeExceptionally(new LeaseAcquisitionException("the lock key " + myKey.toString(StandardCharsets.UTF_8)
                    + " is gone: the lease expired or was revoked while waiting", null));
        } else if (predecessor == null) {
            result.complete(new Held(response.getHeader().getRevision(), myKey));
        } else {
            watchDelete(predecessor);
        }
    }

    /**
     * Watches {@code key} from now (a synced watcher); once etcd confirms the watch, checks again,
     * since the key may have gone between the check that named it and the watch.
     */
    private void watchDelete(ByteSequence key) {
        long gen = nextGeneration(-1);
        if (gen < 0) {
            return;
        }
        // requireLeader: a member cut off from its leader ends the watch (and so this wait) instead of going silent.
        WatchOption option = WatchOption.builder().withCreateNotify(true).withNoPut(true).withRequireLeader(true).build();
        Watch.Listener listener = Watch.listener((WatchResponse response) -> {
            if (response.isCreatedNotify()) {
                check(gen);
                return;
            }
            for (WatchEvent event : response.getEvents()) {
                if (event.getEventType() == WatchEvent.EventType.DELETE) {
                    recheck(gen);
                    return;
                }
            }
        }, error -> {
            synchronized (this) {
                if (gen != generation) {
                    return;
                }
            }
            result.completeExceptionally(error);
        }, () -> recheck(gen));
        Watch.Watcher created = client.getWatchClient().watch(key, option, listener);
        boolean current;
        synchronized (this) {
            current = gen == generation && !result.isDone();
            if (current) {
                watcher = created;
                watched = key;
            }
        }
        if (!current) {
            created.close();
        }
    }

    /** The watched key was deleted (or the watch ended): stop watching it and check again. */
    private void recheck(long gen) {
        long next = nextGeneration(gen);
        if (next >= 0) {
            check(next);
        }
    }

    /**
     * Starts a new generation of the wait: takes the current watcher out under the monitor and
     * closes it outside. Nothing happens once the result is done or, with {@code expected >= 0},
     * once the wait has moved past generation {@code expected}.
     *
     * @return the new generation, or -1 when nothing happened
     */
    private long nextGeneration(long expected) {
        long next;
        Watch.Watcher previous;
        synchronized (this) {
            if (result.isDone() || (expected >= 0 && expected != generation)) {
                return -1;
            }
            previous = watcher;
            watcher = null;
            watched = null;
            next = ++generation;
        }
        if (previous != null) {
            previous.close();
        }
        return next;
    }

    private void closeWatcher() {
        Watch.Watcher previous;
        synchronized (this) {
            previous = watcher;
            watcher = null;
            watched = null;
        }
        if (previous != null) {
            previous.close();
        }
    }
}
