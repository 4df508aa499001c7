package dev.fencedwrites.enforcer;

import dev.fencedwrites.etcd.LockKeys;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Takes real locks in etcd for a test workload, so that its fencing tokens are ones the enforcer's
 * token verification accepts: a few writers, each with its own lease, take turns
 * holding each resource's lock on {@link LockKeys}' layout.
 *
 * <p>One transaction per acquisition, in the shape of etcd's {@code concurrency.Mutex}
 * {@code tryAcquire}: it deletes the previous holder's key of that resource (its release), puts the
 * new holder's key {@code <prefix><encoded resource>/<lease hex>} under the new holder's lease and
 * reads the oldest key under the resource's prefix. The token is that transaction's revision, at
 * which the new key is the oldest, as with producer-lib's uncontended {@code EtcdLock}.
 *
 * <p>Cost: each transaction waits for etcd's WAL fsync, about 18 ms each on this loaded test
 * machine when taken one at a time (4 093 took 75 s). So acquisitions are taken ahead, in
 * {@value #BATCH}-long chains per resource, all resources' chains at once, which lets etcd commit
 * many in one fsync; the workload then draws them in order. A token drawn later than it was taken
 * is still one its lease held at revision = token, which is all verification asks. producer-lib's
 * {@code FencingLeaseClient} would add a lease grant, keep-alives and a marker per acquisition.
 * Not thread-safe.
 */
final class RealLocks implements AutoCloseable {
    /** How long the writers' leases live; longer than any test, so no lock key expires while it runs. */
    private static final long LEASE_TTL_SECONDS = 3_600;
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    /** Acquisitions taken ahead per resource when one runs out. */
    static final int BATCH = 8;

    /** One lock acquisition: the fencing token (etcd revision) and the lease of the writer that took it. */
    record Acquisition(String resource, long token, long lease) {
    }

    private final Client client;
    private final String prefix;
    private final List<String> resources;
    private final long[] leases;
    private final Random random;
    /** Per resource, every acquisition taken, in token order; the last one holds the lock in etcd. */
    private final Map<String, List<Acquisition>> taken = new HashMap<>();
    /** Per resource, the acquisitions taken ahead and not drawn yet. */
    private final Map<String, ArrayDeque<Acquisition>> ready = new HashMap<>();
    private int acquisitions;
    private int rounds;
    private long nanos;

    /**
     * Grants one lease per writer.
     *
     * @param endpoint  etcd's client URL
     * @param prefix    the lock prefix the enforcer verifies under ({@code etcd.lock.prefix})
     * @param resources the resources (record keys) whose locks are taken ahead together
     * @param writers   how many writers (leases) take turns, at least 2 so a takeover always changes the lease
     * @param seed      seeds the choice of the next holder
     */
    RealLocks(String endpoint, String prefix, List<String> resources, int writers, long seed) throws Exception {
        if (writers < 2) {
            throw new IllegalArgumentException("at least 2 writers, got " + writers);
        }
        this.client = Client.builder().endpoints(endpoint).build();
        this.prefix = prefix;
        this.resources = List.copyOf(resources);
        this.random = new Random(seed);
        this.leases = new long[writers];
        for (int w = 0; w < writers; w++) {
            leases[w] = client.getLeaseClient().grant(LEASE_TTL_SECONDS).get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).getID();
        }
        for (String resource : this.resources) {
            taken.put(resource, new ArrayList<>());
            ready.put(resource, new ArrayDeque<>());
        }
    }

    /**
     * The next acquisition of {@code resource}'s lock, by another writer than the previous one.
     *
     * @return an acquisition whose token is above every earlier token of the resource
     * @throws IllegalStateException if a new key was not the oldest under its resource's prefix (a stray lock key)
     */
    Acquisition acquire(String resource) throws Exception {
        if (ready.get(resource).isEmpty()) {
            refill();
        }
        return ready.get(resource).poll();
    }

    /**
     * The lease whose key held {@code resource}'s lock at {@code revision} among the acquisitions
     * taken so far (drawn or not), or 0 when none had been taken by then.
     */
    long holderAt(String resource, long revision) {
        long lease = 0;
        for (Acquisition acquisition : taken.get(resource)) {
            if (acquisition.token() > revision) {
                break;
            }
            lease = acquisition.lease();
        }
        return lease;
    }

    /**
     * Tops every resource up to {@value #BATCH} ready acquisitions: one chain of transactions per resource, all chains at once.
     */
    private void refill() throws Exception {
        long started = System.nanoTime();
        List<CompletableFuture<List<Acquisition>>> chains = new ArrayList<>();
        for (String resource : resources) {
            List<Acquisition> history = taken.get(resource);
            long previous = history.isEmpty() ? 0 : history.get(history.size() - 1).lease();
            CompletableFuture<List<Acquisition>> chain = CompletableFuture.completedFuture(new ArrayList<>());
            for (int i = ready.get(resource).size(); i < BATCH; i++) {
                long released = previous;
                long lease = nextHolder(released);
                chain = chain.thenCompose(done -> take(resource, released, lease).thenApply(acquisition -> {
                    done.add(acquisition);
                    return done;
                }));
                previous = lease;
            }
            chains.add(chain);
        }
        CompletableFuture.allOf(chains.toArray(CompletableFuture[]::new)).get(TIMEOUT.toMillis() * BATCH, TimeUnit.MILLISECONDS);
        for (int r = 0; r < resources.size(); r++) {
            List<Acquisition> chain = chains.get(r).get();
            taken.get(resources.get(r)).addAll(chain);
            ready.get(resources.get(r)).addAll(chain);
            acquisitions += chain.size();
        }
        rounds++;
        nanos += System.nanoTime() - started;
    }

    private long nextHolder(long previous) {
        long lease;
        do {
            lease = leases[random.nextInt(leases.length)];
        } while (lease == previous);
        return lease;
    }

    /**
     * One transaction: {@code released}'s key of the resource is deleted (0: none), {@code lease}'s key put, the oldest key read.
     */
    private CompletableFuture<Acquisition> take(String resource, long released, long lease) {
        byte[] name = resource.getBytes(StandardCharsets.UTF_8);
        ByteSequence key = bytes(LockKeys.key(prefix, name, lease));
        List<Op> then = new ArrayList<>();
        if (released != 0) {
            then.add(Op.delete(bytes(LockKeys.key(prefix, name, released)), DeleteOption.DEFAULT));
        }
        then.add(Op.put(key, ByteSequence.EMPTY, PutOption.builder().withLeaseId(lease).build()));
        then.add(Op.get(bytes(LockKeys.name(prefix, name) + "/"),
                GetOption.builder().isPrefix(true).withSortField(GetOption.SortTarget.CREATE)
                        .withSortOrder(GetOption.SortOrder.ASCEND).withLimit(1).build()));
        return client.getKVClient().txn().Then(then.toArray(Op[]::new)).commit().thenApply((TxnResponse response) -> {
            List<KeyValue> oldest = response.getGetResponses().get(0).getKvs();
            if (oldest.isEmpty() || !oldest.get(0).getKey().equals(key)) {
                throw new IllegalStateException("lock " + LockKeys.name(prefix, name) + " is held by "
                        + (oldest.isEmpty() ? "nobody" : oldest.get(0).getKey()) + ", not by " + key);
            }
            return new Acquisition(resource, response.getHeader().getRevision(), lease);
        });
    }

    /** How many locks were taken and how long that took in all, for the test's log. */
    String cost() {
        return String.format("%d lock acquisitions in etcd (%d rounds of up to %d per resource for %d resources) took %.1f s",
                acquisitions, rounds, BATCH, resources.size(), nanos / 1e9);
    }

    private static ByteSequence bytes(String text) {
        return ByteSequence.from(text, StandardCharsets.UTF_8);
    }

    /** Revokes the writers' leases, which deletes the lock keys they still hold. */
    @Override
    public void close() {
        try {
            for (long lease : leases) {
                if (lease != 0) {
                    client.getLeaseClient().revoke(lease).get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                }
            }
        } catch (Exception e) {
            System.out.println("could not revoke the test writers' leases (etcd deletes their keys when they expire): " + e);
        } finally {
            client.close();
        }
    }
}
