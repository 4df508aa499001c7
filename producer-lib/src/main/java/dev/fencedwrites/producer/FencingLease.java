package dev.fencedwrites.producer;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A held etcd lease + lock on one resource, and the fencing token it was granted with.
 *
 * <p>The token is the etcd revision at which the lock was found held (see {@link EtcdLock}),
 * captured once at acquisition: revisions are global and monotonic, and the next holder is found
 * only after this holder's lock key is deleted, so a later acquisition of the same lock always
 * carries a larger token (etcd v3 API, "Revisions"; lock algorithm of etcd's concurrency.Mutex).
 *
 * <p>Renewal: the lease client sends one keep-alive TTL/3 after the last one was sent and, after a failed one (or one
 * unanswered until the deadline, within the request timeout, at least 1 s), retries every 500 ms. The local deadline is the send
 * time of the last successful keep-alive plus the TTL
 * etcd answered, on {@link System#nanoTime()}: etcd renews on receipt, after the send, so the local
 * deadline never passes later than etcd's expiry (apart from clock-rate drift). A failed keep-alive
 * (etcd unreachable, no leader during an election) is counted and retried; the lease is lost when
 * etcd answers that it no longer exists (cause {@code expired}) or when the deadline passes without
 * a renewal (cause {@code deadline}). Once lost it stays lost: a late renewal proves nothing about
 * the time in between. Loss is reported to {@link #onLoss listeners} when noticed by a timer at the
 * deadline, so within the TTL of the last renewal plus scheduling delay.
 *
 * <p>Validity is an efficiency hint: a paused process cannot check it in time, which is why every
 * write carries the token and the resource enforces it. Closing releases the lock and revokes the
 * lease. Thread-safe. The etcd calls (keep-alive, deadline timer, revoke) are {@link LeaseKeeper}'s.
 */
public final class FencingLease implements AutoCloseable {
    /** What a lease is doing now. */
    public enum State {
        /** Granted, waiting for the lock: {@link FencingLeaseClient} has not returned it yet. */
        WAITING,
        /** Holds the lock and its deadline has not passed. */
        HELD,
        /** Lost: expired in etcd or past its deadline; see {@link #lossCause()}. */
        LOST,
        /** Released by {@link #close()}, or abandoned before the lock was acquired. */
        RELEASED
    }

    private static final Logger LOG = LoggerFactory.getLogger(FencingLease.class);

    private final LeaseKeeper keeper;
    private final Executor events;
    private final Consumer<FencingLease> onFinished;
    private final Duration requestTimeout;
    private final String resource;
    private final long leaseId;
    private final LeaseMetrics metrics;
    private final Duration ttl;
    private volatile long token;
    private volatile ByteSequence lockKey;
    private final AtomicLong deadlineNanos;
    private final AtomicLong nextSeq = new AtomicLong(1);
    private final AtomicReference<String> lostBecause = new AtomicReference<>();
    private final List<LeaseLossListener> listeners = new CopyOnWriteArrayList<>();
    private volatile boolean closed;
    private CompletableFuture<Void> revoked; // guarded by this
    /**
     * Orders a loss against a release, so that either the loss comes first and every listener is told, or the release does
     * and the loss is no loss. Never held while waiting: the deadline timer takes it, and {@code this} can be held by a
     * send blocked on the producer's buffer.
     */
    private final Object lossOrRelease = new Object();

    /** A granted lease that does not hold the lock yet; {@link #locked} completes it. */
    FencingLease(Client client, ScheduledExecutorService timer, Executor events, Duration requestTimeout, String resource,
            long leaseId,
            Duration ttl, long deadlineNanos, LeaseMetrics metrics, Consumer<FencingLease> onFinished) {
        this.events = events;
        this.onFinished = onFinished;
        this.requestTimeout = requestTimeout;
        this.metrics = metrics;
        this.resource = resource;
        this.leaseId = leaseId;
        this.ttl = ttl;
        this.deadlineNanos = new AtomicLong(deadlineNanos);
        this.keeper = new LeaseKeeper(this, client, timer, requestTimeout, metrics, this.deadlineNanos);
    }

    void locked(long token, ByteSequence lockKey) {
        this.token = token;
        this.lockKey = lockKey;
    }

    /**
     * Gives up a lease whose lock was not (or no longer) wanted: stops renewing and revokes it,
     * which deletes its pending lock key. Does not block; the future completes when the revoke is
     * done or failed (then the lease expires after its TTL, unrenewed).
     */
    synchronized CompletableFuture<Void> abandon() {
        if (revoked != null) {
            return revoked;
        }
        // A deadline that passed before the release (the process was stopped, say) is a loss, even when the deadline timer
        // has not run yet: tell the listeners now, before they are dropped.
        isValid();
        synchronized (lossOrRelease) {
            closed = true;
            if (lostBecause.get() == null) {
                listeners.clear();
            } // else markLost is telling them, maybe on another thread right now: leave them to it
        }
        onFinished.accept(this);
        revoked = keeper.revoke();
        return revoked;
    }

    /** The resource this lease guards; used as the Kafka record key. */
    public String resource() {
        return resource;
    }

    /** The fencing token: the etcd revision at which the lock was acquired. Positive once held. */
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
     * Whether this process still believes it holds the lease: not closed, not lost, and the local
     * deadline (see the class comment) not passed. Checking a passed deadline marks the lease lost.
     */
    public boolean isValid() {
        if (closed || lostBecause.get() != null) {
            return false;
        }
        if (System.nanoTime() - deadlineNanos.get() >= 0) {
            markLost("deadline", "no keep-alive renewal within the TTL of " + ttl.toSeconds() + " s");
            return false;
        }
        return true;
    }

    /** The lease's state now; checking it may notice a passed deadline, like {@link #isValid()}. */
    public State state() {
        if (lostBecause.get() != null) {
            return State.LOST;
        }
        if (closed) {
            return State.RELEASED;
        }
        if (!isValid()) {
            return State.LOST;
        }
        return token > 0 ? State.HELD : State.WAITING;
    }

    /** Why the lease is no longer valid ({@code "released"} after {@link #close()}), or {@code null} while it is. */
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

    /** The exception a send under this lease fails with now: a fresh {@link LeaseLostException}, or {@code null} while valid. */
    LeaseLostException lostException() {
        String cause = lossCause();
        return cause == null ? null : new LeaseLostException(resource, token, cause, "; the write was not sent");
    }

    /**
     * Registers {@code listener} to be told once when this lease is lost. If it already was,
     * the listener is called at once on this thread. Release by {@link #close()} is not a loss, but a deadline that
     * passed before it is: {@code close()} reports it when the deadline timer has not yet.
     */
    public void onLoss(LeaseLossListener listener) {
        listeners.add(listener);
        String cause = lostBecause.get();
        if (cause != null && listeners.remove(listener)) {
            listener.leaseLost(this, new LeaseLostException(resource, token, cause));
        }
    }

    /** Starts renewing: see {@link LeaseKeeper#start()}. */
    void startKeepAlive() {
        keeper.start();
    }

    /** Whether this lease is closed (released or abandoned). */
    boolean closed() {
        return closed;
    }

    /** Whether this lease is closed or lost: nothing renews it any more. */
    boolean finished() {
        return closed || lostBecause.get() != null;
    }

    /**
     * Marks the lease lost for {@code cause} (metrics {@code category}) and tells the listeners once; no-op once closed or lost.
     */
    void markLost(String category, String cause) {
        synchronized (lossOrRelease) {
            if (closed || !lostBecause.compareAndSet(null, cause)) {
                return;
            }
        }
        if (token > 0) {
            metrics.lost(category);
            LOG.warn("lease {} for {} (token {}) lost: {}", Long.toHexString(leaseId), resource, token, cause);
        }
        LeaseLostException exception = new LeaseLostException(resource, token, cause);
        for (LeaseLossListener listener : listeners) {
            if (listeners.remove(listener)) {
                Runnable tell = () -> {
                    try {
                        listener.leaseLost(this, exception);
                    } catch (RuntimeException e) {
                        LOG.warn("a lease-loss listener for {} failed", resource, e);
                    }
                };
                try {
                    events.execute(tell);
                } catch (RejectedExecutionException e) {
                    tell.run();
                }
            }
        }
    }

    /** The lease client is closing: report this lease lost (cause {@code closed}) and revoke it. */
    CompletableFuture<Void> clientClosed() {
        markLost("closed", "the lease client was closed");
        return abandon();
    }

    /**
     * Releases the lock by revoking the lease (etcd deletes the lock key with it, and the next
     * waiter gets the lock); waits at most {@code etcd.request.timeout.ms}, and if etcd does not
     * answer, the unrenewed lease expires after its TTL. Idempotent; not a loss for listeners.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        try {
            abandon().get(requestTimeout.toMillis() + 1_000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            LOG.debug("revoke of lease {} for {} did not finish; it expires after its TTL", Long.toHexString(leaseId), resource,
                    e);
        }
        if (lostBecause.get() == null) {
            LOG.info("released {} (token {})", resource, token);
        } else {
            LOG.info("closed the lost lease on {} (token {}): {}", resource, token, lostBecause.get());
        }
    }

    @Override
    public String toString() {
        return "FencingLease{resource=" + resource + ", token=" + token + ", lease=" + Long.toHexString(leaseId) + ", ttl=" + ttl
                + "}";
    }
}
