package dev.fencedwrites.producer;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.etcd.jetcd.lock.LockResponse;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Acquires {@link FencingLease}s from etcd: a lease with a TTL, then the etcd lock
 * {@code <lockPrefix><resource>} bound to that lease. Thread-safe; close it when done.
 */
public final class FencingLeaseClient implements AutoCloseable {
    /** Default key prefix of the lock keys in etcd. */
    public static final String DEFAULT_LOCK_PREFIX = "fenced-writes/locks/";
    private static final Logger LOG = LoggerFactory.getLogger(FencingLeaseClient.class);

    private final Client client;
    private final String lockPrefix;
    private final LeaseMetrics metrics;

    /**
     * @param endpoints  etcd client URLs, e.g. {@code http://127.0.0.1:2379}
     * @param lockPrefix key prefix for lock keys, e.g. {@link #DEFAULT_LOCK_PREFIX}
     */
    public FencingLeaseClient(List<String> endpoints, String lockPrefix) {
        this(endpoints, lockPrefix, new CompositeMeterRegistry());
    }

    /**
     * @param endpoints  etcd client URLs, e.g. {@code http://127.0.0.1:2379}
     * @param lockPrefix key prefix for lock keys, e.g. {@link #DEFAULT_LOCK_PREFIX}
     * @param registry   where the lease metrics go (see {@link LeaseMetrics} for names)
     */
    public FencingLeaseClient(List<String> endpoints, String lockPrefix, MeterRegistry registry) {
        this.metrics = new LeaseMetrics(registry);
        if (endpoints.isEmpty()) {
            throw new IllegalArgumentException("at least one etcd endpoint is required");
        }
        this.client = Client.builder().endpoints(endpoints.toArray(String[]::new)).build();
        this.lockPrefix = lockPrefix;
    }

    /**
     * Grants a lease of {@code ttl} (whole seconds, at least 1), acquires the resource's lock
     * (etcd lock name {@code <lockPrefix><URL-encoded resource>})
     * under it, keeping the lease alive from the grant on. The token is the revision of the lock
     * response header. If the lock is not acquired within {@code timeout}, or the lease is lost
     * meanwhile, the lease is revoked, which also deletes the pending lock key, so no orphan
     * waiter remains.
     *
     * @throws LeaseAcquisitionException if etcd fails or the wait times out
     * @throws InterruptedException      if interrupted while waiting (the lease is revoked)
     */
    public FencingLease acquire(String resource, Duration ttl, Duration timeout) throws LeaseAcquisitionException, InterruptedException {
        if (resource == null || resource.isEmpty()) {
            throw new IllegalArgumentException("resource must be a non-empty string");
        }
        long ttlSeconds = Math.max(1, (ttl.toMillis() + 999) / 1000);
        long startNanos = System.nanoTime();
        LeaseGrantResponse grant = await(client.getLeaseClient().grant(ttlSeconds), timeout, "grant a lease for " + resource);
        long leaseId = grant.getID();
        Duration granted = Duration.ofSeconds(grant.getTTL());
        // etcd locks a name by the key prefix "name/": encode '/' so that resource "a" does not wait on "a/x".
        ByteSequence lockName = ByteSequence.from(lockPrefix + URLEncoder.encode(resource, StandardCharsets.UTF_8), StandardCharsets.UTF_8);
        // Keep the lease alive while waiting for the lock too, like etcd's own concurrency.Session:
        // a waiter whose lease expired must never be handed the lock.
        FencingLease lease = new FencingLease(client, resource, leaseId, granted, startNanos + granted.toNanos(), metrics);
        try {
            lease.startKeepAlive();
            long remaining = timeout.toNanos() - (System.nanoTime() - startNanos);
            LockResponse lock = await(client.getLockClient().lock(lockName, leaseId), Duration.ofNanos(Math.max(remaining, 1)),
                    "acquire the lock for " + resource);
            long token = lock.getHeader().getRevision();
            verifyHeld(lock.getKey(), leaseId, token, resource);
            lease.locked(token, lock.getKey());
            if (!lease.isValid()) {
                throw new LeaseAcquisitionException("the lease for " + resource + " was lost while waiting for the lock: " + lease.lossCause(), null);
            }
        } catch (LeaseAcquisitionException | InterruptedException | RuntimeException e) {
            lease.abandon();
            metrics.failed(Duration.ofNanos(System.nanoTime() - startNanos));
            throw e;
        }
        metrics.acquired(Duration.ofNanos(System.nanoTime() - startNanos));
        LOG.info("acquired {} with token {} (lease {}, TTL {} s) in {} ms", resource, lease.token(), Long.toHexString(leaseId), grant.getTTL(),
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos));
        return lease;
    }

    /**
     * Reads the lock key back: it must still exist and belong to our lease. etcd 3.4's Lock RPC can
     * answer a waiter whose lease (and so whose key) expired while it waited, with the same header
     * revision as the real next holder; such an answer is not a lock.
     */
    private void verifyHeld(ByteSequence lockKey, long leaseId, long token, String resource) throws LeaseAcquisitionException, InterruptedException {
        GetResponse current = await(client.getKVClient().get(lockKey), Duration.ofSeconds(10), "read back the lock key for " + resource);
        boolean held = current.getKvs().size() == 1 && current.getKvs().get(0).getLease() == leaseId
                && current.getKvs().get(0).getCreateRevision() <= token;
        if (!held) {
            throw new LeaseAcquisitionException("etcd answered the lock request for " + resource + " but the lock key "
                    + lockKey.toString(StandardCharsets.UTF_8) + " is gone: the lease expired while waiting", null);
        }
    }

    private static <T> T await(CompletableFuture<T> future, Duration timeout, String what) throws LeaseAcquisitionException, InterruptedException {
        try {
            return future.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            future.cancel(true);
            throw new LeaseAcquisitionException("timed out after " + timeout.toMillis() + " ms trying to " + what, e);
        } catch (ExecutionException e) {
            throw new LeaseAcquisitionException("etcd failed to " + what + ": " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            future.cancel(true);
            throw e;
        }
    }

    @Override
    public void close() {
        client.close();
    }
}
