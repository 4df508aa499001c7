package dev.fencedwrites.producer;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.etcd.jetcd.lock.LockResponse;
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

    /**
     * @param endpoints  etcd client URLs, e.g. {@code http://127.0.0.1:2379}
     * @param lockPrefix key prefix for lock keys, e.g. {@link #DEFAULT_LOCK_PREFIX}
     */
    public FencingLeaseClient(List<String> endpoints, String lockPrefix) {
        if (endpoints.isEmpty()) {
            throw new IllegalArgumentException("at least one etcd endpoint is required");
        }
        this.client = Client.builder().endpoints(endpoints.toArray(String[]::new)).build();
        this.lockPrefix = lockPrefix;
    }

    /**
     * Grants a lease of {@code ttl} (whole seconds, at least 1), acquires the resource's lock
     * under it, and starts the keep-alive. If the lock is not acquired within {@code timeout}, the
     * lease is revoked, which also deletes the pending lock key, so no orphan waiter remains.
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
        ByteSequence lockName = ByteSequence.from(lockPrefix + resource, StandardCharsets.UTF_8);
        LockResponse lock;
        try {
            long remaining = timeout.toNanos() - (System.nanoTime() - startNanos);
            lock = await(client.getLockClient().lock(lockName, leaseId), Duration.ofNanos(Math.max(remaining, 1)), "acquire the lock for " + resource);
        } catch (LeaseAcquisitionException | InterruptedException | RuntimeException e) {
            revokeQuietly(leaseId);
            throw e;
        }
        long token = lock.getHeader().getRevision();
        Duration granted = Duration.ofSeconds(grant.getTTL());
        FencingLease lease = new FencingLease(client, resource, token, leaseId, granted, lock.getKey(), startNanos + granted.toNanos());
        lease.startKeepAlive();
        LOG.info("acquired {} with token {} (lease {}, TTL {} s) in {} ms", resource, token, Long.toHexString(leaseId), grant.getTTL(),
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos));
        return lease;
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

    private void revokeQuietly(long leaseId) {
        try {
            client.getLeaseClient().revoke(leaseId).get(5, TimeUnit.SECONDS);
        } catch (Exception e) {
            LOG.warn("could not revoke lease {}; it expires after its TTL", Long.toHexString(leaseId), e);
        }
    }

    @Override
    public void close() {
        client.close();
    }
}
