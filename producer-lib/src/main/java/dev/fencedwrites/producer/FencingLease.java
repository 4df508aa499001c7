package dev.fencedwrites.producer;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.support.CloseableClient;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A held etcd lease + lock on one resource, and the fencing token it was granted with.
 *
 * <p>The token is the etcd revision of the lock response header, captured once at acquisition:
 * revisions are global and monotonic, so a later acquisition of the same lock always carries a
 * larger token (etcd v3 API, "Revisions"; lock semantics from etcd's v3lock service).
 *
 * <p>The lease is kept alive in the background. It is believed valid until jetcd reports the
 * keep-alive stream completed or failed, or a local deadline on {@link System#nanoTime()} passes
 * without a renewal (jetcd's own deadline uses wall-clock time). Validity is an efficiency hint:
 * a paused process cannot check it in time, which is why every write carries the token and the
 * resource enforces it. Closing releases the lock and revokes the lease. Thread-safe.
 */
public final class FencingLease implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(FencingLease.class);

    private final Client client;
    private final String resource;
    private final long leaseId;
    private final LeaseMetrics metrics;
    private final Duration ttl;
    private volatile long token;
    private volatile ByteSequence lockKey;
    private final AtomicLong deadlineNanos;
    private final AtomicLong nextSeq = new AtomicLong(1);
    private final AtomicReference<String> lostBecause = new AtomicReference<>();
    private volatile CloseableClient keepAlive;
    private volatile boolean closed;

    /** A granted lease that does not hold the lock yet; {@link #locked} completes it. */
    FencingLease(Client client, String resource, long leaseId, Duration ttl, long deadlineNanos, LeaseMetrics metrics) {
        this.metrics = metrics;
        this.client = client;
        this.resource = resource;
        this.leaseId = leaseId;
        this.ttl = ttl;
        this.deadlineNanos = new AtomicLong(deadlineNanos);
    }

    void locked(long token, ByteSequence lockKey) {
        this.token = token;
        this.lockKey = lockKey;
    }

    /** Gives up a lease whose lock was never acquired: stops the keep-alive and revokes it. */
    void abandon() {
        closed = true;
        stopKeepAlive();
        try {
            client.getLeaseClient().revoke(leaseId).get(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            LOG.warn("interrupted while revoking lease {} for {}; it expires after its TTL", Long.toHexString(leaseId), resource);
        } catch (Exception e) {
            LOG.warn("could not revoke lease {} for {}; it expires after its TTL", Long.toHexString(leaseId), resource, e);
        }
    }

    private void stopKeepAlive() {
        CloseableClient running = keepAlive;
        if (running != null) {
            running.close();
        }
    }

    /** The resource this lease guards; used as the Kafka record key. */
    public String resource() {
        return resource;
    }

    /** The fencing token: the etcd revision at which the lock was acquired. Positive. */
    public long token() {
        return token;
    }

    /** The etcd lease id; for diagnostics only, never an ordering. */
    public long leaseId() {
        return leaseId;
    }

    /** The TTL etcd granted. */
    public Duration ttl() {
        return ttl;
    }

    /** The next per-lease write sequence number, starting at 1 (0 is the acquisition marker). */
    long nextSeq() {
        return nextSeq.getAndIncrement();
    }

    /**
     * Whether this process still believes it holds the lease: not closed, not reported lost, and
     * the local deadline (last renewal + TTL, on the monotonic clock) not passed.
     */
    public boolean isValid() {
        if (closed || lostBecause.get() != null) {
            return false;
        }
        if (System.nanoTime() - deadlineNanos.get() >= 0) {
            // Once the deadline passed etcd may have expired the lease; a late renewal does not undo that.
            markLost("deadline", "no keep-alive renewal within the TTL of " + ttl.toSeconds() + " s");
            return false;
        }
        return true;
    }

    /** Why the lease is no longer valid, or {@code null} while it is. */
    public String lossCause() {
        String cause = lostBecause.get();
        if (cause != null) {
            return cause;
        }
        if (closed) {
            return "released";
        }
        return isValid() ? null : lostBecause.get();
    }

    void startKeepAlive() {
        keepAlive = client.getLeaseClient().keepAlive(leaseId, new StreamObserver<>() {
            @Override
            public void onNext(LeaseKeepAliveResponse response) {
                if (response.getTTL() <= 0) {
                    markLost("expired", "etcd reports the lease expired");
                    return;
                }
                if (System.nanoTime() - deadlineNanos.get() >= 0) {
                    // A renewal handled after a pause past the deadline proves nothing about now.
                    markLost("deadline", "no keep-alive renewal within the TTL of " + ttl.toSeconds() + " s");
                    return;
                }
                // Counted from the response, not the request: up to one round trip optimistic.
                deadlineNanos.set(System.nanoTime() + TimeUnit.SECONDS.toNanos(response.getTTL()));
            }

            @Override
            public void onError(Throwable error) {
                metrics.keepAliveFailed();
                markLost("keepalive_error", "keep-alive failed: " + error);
            }

            @Override
            public void onCompleted() {
                markLost("expired", "keep-alive completed: the lease expired");
            }
        });
    }

    private void markLost(String category, String cause) {
        if (!closed && lostBecause.compareAndSet(null, cause)) {
            if (token > 0) {
                metrics.lost(category);
            }
            LOG.warn("lease {} for {} (token {}) lost: {}", Long.toHexString(leaseId), resource, token, cause);
        }
    }

    /** Releases the lock and revokes the lease; waits at most a few seconds. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        stopKeepAlive();
        try {
            client.getLockClient().unlock(lockKey).get(5, TimeUnit.SECONDS);
        } catch (Exception e) {
            LOG.debug("unlock of {} failed; revoking the lease removes the lock key anyway", resource, e);
        }
        try {
            client.getLeaseClient().revoke(leaseId).get(5, TimeUnit.SECONDS);
        } catch (Exception e) {
            LOG.debug("revoke of lease {} failed; it expires after its TTL", Long.toHexString(leaseId), e);
        }
        LOG.info("released {} (token {})", resource, token);
    }

    @Override
    public String toString() {
        return "FencingLease{resource=" + resource + ", token=" + token + ", lease=" + Long.toHexString(leaseId) + ", ttl=" + ttl + "}";
    }
}
