package dev.fencedwrites.producer;

import io.etcd.jetcd.Client;
import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdException;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The etcd side of one {@link FencingLease}: the keep-alive loop that moves its local deadline, the
 * timer that notices a passed deadline, and the revoke that ends it. The rules (one keep-alive TTL/3
 * after the last was sent, retries every 500 ms, the deadline on {@link System#nanoTime()} from the
 * send time of the last successful keep-alive) are documented on {@link FencingLease}. Runs on the lease client's timer.
 */
final class LeaseKeeper {
    private static final Logger LOG = LoggerFactory.getLogger(FencingLease.class);
    private static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(500);

    private final FencingLease lease;
    private final Client client;
    private final ScheduledExecutorService timer;
    private final Duration requestTimeout;
    private final LeaseMetrics metrics;
    /** The local deadline, shared with the lease, which reads it in {@link FencingLease#isValid()}. */
    private final AtomicLong deadlineNanos;

    LeaseKeeper(FencingLease lease, Client client, ScheduledExecutorService timer, Duration requestTimeout, LeaseMetrics metrics,
            AtomicLong deadlineNanos) {
        this.lease = lease;
        this.client = client;
        this.timer = timer;
        this.requestTimeout = requestTimeout;
        this.metrics = metrics;
        this.deadlineNanos = deadlineNanos;
    }

    /**
     * Arms the deadline timer and schedules the first renewal TTL/3 after the grant request was
     * sent (at once if the grant took longer), the same margin as every later renewal. Renewing right away would only move etcd's
     * expiry by the
     * grant's round trip (the deadline already counts from before the grant request), and its
     * stream competed with the lock request it ran beside.
     */
    void start() {
        long deadline = deadlineNanos.get();
        armDeadline(deadline);
        // TTL/3 after the grant *request* (the deadline is that send time plus the TTL), not after
        // its answer: after a slow grant the first renewal goes out at once, never past the deadline.
        schedule(this::renew, deadline - lease.ttl().toNanos() * 2 / 3 - System.nanoTime());
    }

    /** Revokes the lease (etcd deletes its lock key with it); completes when done or failed, never exceptionally. */
    CompletableFuture<Void> revoke() {
        long leaseId = lease.leaseId();
        return client.getLeaseClient().revoke(leaseId).orTimeout(requestTimeout.toMillis(), TimeUnit.MILLISECONDS)
                .handle((ok, error) -> {
                    Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
                    if (cause == null || String.valueOf(cause.getMessage()).contains("requested lease not found")) {
                        LOG.debug("revoked lease {} for {}", Long.toHexString(leaseId), lease.resource());
                    } else {
                        LOG.warn("could not revoke lease {} for {}; it expires unrenewed after its TTL: {}",
                                Long.toHexString(leaseId), lease.resource(),
                                String.valueOf(cause));
                    }
                    return null;
                });
    }

    private void renew() {
        if (lease.finished()) {
            return;
        }
        long sentNanos = System.nanoTime();
        // An attempt may take until the deadline (bounded by the request timeout, at least 1 s): a cold
        // client's first keep-alive stream can take over a second on a loaded machine, and cutting it
        // short only starts the same slow setup again. A dead endpoint fails fast (waitForReady off).
        long untilDeadline = TimeUnit.NANOSECONDS.toMillis(deadlineNanos.get() - sentNanos);
        long timeoutMillis = Math.max(1_000, Math.min(requestTimeout.toMillis(), untilDeadline));
        client.getLeaseClient().keepAliveOnce(lease.leaseId())
                .orTimeout(timeoutMillis, TimeUnit.MILLISECONDS)
                .whenCompleteAsync((response, error) -> {
                    if (error == null) {
                        renewed(response, sentNanos);
                    } else {
                        renewFailed(error instanceof CompletionException && error.getCause() != null ? error.getCause() : error);
                    }
                }, this::runOnTimer);
    }

    private void renewed(LeaseKeepAliveResponse response, long sentNanos) {
        if (lease.finished()) {
            return;
        }
        if (response.getTTL() <= 0) {
            lease.markLost("expired", "etcd reports the lease expired");
            return;
        }
        long now = System.nanoTime();
        LOG.debug("keep-alive of lease {} for {} answered in {} ms, {} ms before its deadline", Long.toHexString(lease.leaseId()),
                lease.resource(), TimeUnit.NANOSECONDS.toMillis(now - sentNanos),
                TimeUnit.NANOSECONDS.toMillis(deadlineNanos.get() - now));
        if (now - deadlineNanos.get() >= 0) {
            // A renewal handled after a pause past the deadline proves nothing about the time in between.
            lease.markLost("deadline", "no keep-alive renewal within the TTL of " + lease.ttl().toSeconds() + " s");
            return;
        }
        long deadline = sentNanos + TimeUnit.SECONDS.toNanos(response.getTTL());
        deadlineNanos.accumulateAndGet(deadline, Math::max);
        armDeadline(deadlineNanos.get());
        // TTL/3 after this renewal was *sent*: a slow answer does not eat into the next window.
        schedule(this::renew, sentNanos + TimeUnit.SECONDS.toNanos(response.getTTL()) / 3 - now);
    }

    private void renewFailed(Throwable error) {
        if (lease.closed()) {
            return;
        }
        if (error instanceof EtcdException etcd && etcd.getErrorCode() == ErrorCode.NOT_FOUND) {
            lease.markLost("expired", "etcd reports the lease no longer exists");
            return;
        }
        metrics.keepAliveFailed();
        if (lease.finished()) {
            return;
        }
        LOG.debug("keep-alive of lease {} for {} failed, retrying: {}", Long.toHexString(lease.leaseId()), lease.resource(),
                String.valueOf(error));
        schedule(this::renew, RETRY_NANOS);
    }

    /** Runs renewal bookkeeping on the renewal thread, off gRPC's event loop; inline once the client is closing. */
    private void runOnTimer(Runnable task) {
        try {
            timer.execute(task);
        } catch (RejectedExecutionException e) {
            task.run();
        }
    }

    private void armDeadline(long deadline) {
        schedule(() -> {
            if (deadlineNanos.get() == deadline) {
                lease.isValid();
            }
        }, deadline - System.nanoTime());
    }

    private void schedule(Runnable task, long delayNanos) {
        try {
            timer.schedule(task, Math.max(0, delayNanos), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            LOG.debug("lease client closed; not renewing lease {} for {}", Long.toHexString(lease.leaseId()), lease.resource());
        }
    }
}
