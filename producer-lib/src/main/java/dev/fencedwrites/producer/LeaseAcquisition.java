package dev.fencedwrites.producer;

import dev.fencedwrites.etcd.EtcdErrors;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.etcd.LockKeys;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One acquisition in progress for {@link FencingLeaseClient}: grant a lease, start renewing it, take
 * the resource's lock under it ({@link EtcdLock}), and complete with the held {@link FencingLease} on
 * the client's event thread, or with a {@link LeaseAcquisitionException} saying what to check. A lease
 * granted to an attempt that ends any other way is revoked, so no orphan lock waiter remains.
 */
final class LeaseAcquisition extends CompletableFuture<FencingLease> {
    private static final Logger LOG = LoggerFactory.getLogger(FencingLeaseClient.class);

    /**
     * What every acquisition of one client shares. {@code connected} completes (either way) when the client's first
     * request to etcd has been answered: a grant waits for it, so that the lease's first deadline does not pay for
     * the channel's setup.
     */
    record Shared(Client client, EtcdSettings settings, ScheduledExecutorService timer, ExecutorService events,
            LeaseMetrics metrics,
            Set<FencingLease> live, CompletableFuture<?> connected) {
    }

    final long startNanos = System.nanoTime();
    volatile boolean granted;
    private final Shared shared;
    private final String resource;

    LeaseAcquisition(Shared shared, String resource) {
        this.shared = shared;
        this.resource = resource;
    }

    /** Sends the grant request for a lease of {@code ttlSeconds}; the rest follows from etcd's answers. */
    void start(long ttlSeconds) {
        whenComplete((lease, error) -> {
            if (error != null) {
                shared.metrics().failed(Duration.ofNanos(System.nanoTime() - startNanos));
            }
        });
        shared.connected().whenComplete((connected, error) -> grant(ttlSeconds));
    }

    /** Sends the grant request; the lease's first deadline counts from just before it, as etcd starts the TTL after. */
    private void grant(long ttlSeconds) {
        if (isDone()) {
            return;
        }
        EtcdSettings settings = shared.settings();
        long sentNanos = System.nanoTime();
        shared.client().getLeaseClient().grant(ttlSeconds, settings.requestTimeout().toMillis(), TimeUnit.MILLISECONDS)
                .whenComplete((grant, grantError) -> {
                    if (grantError != null) {
                        completeOnEvents(null, failure("grant a lease for " + resource, grantError));
                    } else {
                        granted(grant, sentNanos);
                    }
                });
    }

    private void granted(LeaseGrantResponse grant, long sentNanos) {
        granted = true;
        Duration ttl = Duration.ofSeconds(grant.getTTL());
        FencingLease lease = new FencingLease(shared.client(), shared.timer(), shared.events(),
                shared.settings().requestTimeout(), resource,
                grant.getID(), ttl, sentNanos + ttl.toNanos(), shared.metrics(), shared.live()::remove);
        shared.live().add(lease);
        whenComplete((held, error) -> {
            if (held != lease) {
                lease.abandon(); // failed, cancelled, timed out, or completed by someone else
            }
        });
        if (isDone()) {
            return;
        }
        lease.onLoss((lost, cause) -> completeExceptionally(new LeaseAcquisitionException(
                "the lease for " + resource + " was lost while waiting for the lock: " + cause.lossCause(), cause)));
        lease.startKeepAlive();
        // etcd locks a name by the key prefix "name/": encode '/' so that resource "a" does not wait on "a/x".
        String lockName = LockKeys.name(shared.settings().lockPrefix(), resource);
        CompletableFuture<EtcdLock.Held> lock = EtcdLock.lock(shared.client(), shared.settings().requestTimeout(), lockName,
                grant.getID());
        whenComplete((held, error) -> {
            if (error != null) {
                lock.cancel(true);
            }
        });
        lock.whenComplete((response, error) -> {
            if (error != null) {
                completeOnEvents(null, failure("acquire the lock for " + resource, error));
                return;
            }
            lease.locked(response.token(), response.key());
            if (!lease.isValid()) {
                completeOnEvents(null, new LeaseAcquisitionException("the lease for " + resource
                        + " was lost while waiting for the lock: " + lease.lossCause(), null));
            } else {
                completeOnEvents(lease, null);
            }
        });
    }

    /**
     * Gives the attempt up without waiting for etcd. If the lease arrived in the meantime the
     * caller will never see it, so it is revoked (by the whenComplete on the granted lease, or here).
     */
    void giveUp() {
        if (!cancel(true) && !isCompletedExceptionally()) {
            FencingLease arrived = getNow(null);
            if (arrived != null) {
                LOG.info("the lock on {} arrived as the acquisition was given up; releasing it", arrived.resource());
                arrived.abandon();
            }
        }
    }

    /**
     * Completes this attempt on the event thread; a lease that arrives after the attempt was given up is revoked by its
     * whenComplete.
     */
    private void completeOnEvents(FencingLease lease, Throwable error) {
        Runnable complete = () -> {
            if (error != null) {
                completeExceptionally(error);
            } else if (!isDone() && recordAcquired(lease)) {
                complete(lease);
            }
        };
        try {
            shared.events().execute(complete);
        } catch (RejectedExecutionException e) {
            complete.run(); // the client is closing
        }
    }

    /** Counts and logs an acquisition before the caller sees it; always true. */
    private boolean recordAcquired(FencingLease lease) {
        Duration took = Duration.ofNanos(System.nanoTime() - startNanos);
        shared.metrics().acquired(took);
        LOG.info("acquired {} with token {} (lease {}, TTL {} s) in {} ms", lease.resource(), lease.token(),
                Long.toHexString(lease.leaseId()),
                lease.ttl().toSeconds(), took.toMillis());
        return true;
    }

    /** Turns an etcd failure into a {@link LeaseAcquisitionException} that says what to check. */
    private LeaseAcquisitionException failure(String what, Throwable error) {
        EtcdSettings settings = shared.settings();
        Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        if (cause instanceof LeaseAcquisitionException acquisition) {
            return acquisition;
        }
        if (cause instanceof CancellationException) {
            return new LeaseAcquisitionException("gave up trying to " + what, cause);
        }
        if (cause instanceof TimeoutException) {
            return new LeaseAcquisitionException("etcd at " + settings.endpoints() + " did not answer within "
                    + settings.requestTimeout().toMillis() + " ms (" + EtcdSettings.REQUEST_TIMEOUT_MS + ") trying to " + what,
                    cause);
        }
        return new LeaseAcquisitionException(
                "etcd at " + settings.endpoints() + " failed to " + what + ": " + EtcdErrors.describe(cause, settings), cause);
    }
}
