package dev.fencedwrites.producer;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.etcd.jetcd.common.exception.EtcdException;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.lock.LockResponse;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Acquires {@link FencingLease}s from etcd: a lease with a TTL, then the etcd lock
 * {@code <lockPrefix><URL-encoded resource>} bound to that lease. One gRPC connection and one
 * renewal thread serve all leases of a client. Thread-safe; close it when done.
 */
public final class FencingLeaseClient implements AutoCloseable {
    /** Default key prefix of the lock keys in etcd. */
    public static final String DEFAULT_LOCK_PREFIX = "fenced-writes/locks/";
    private static final Logger LOG = LoggerFactory.getLogger(FencingLeaseClient.class);

    private final EtcdSettings settings;
    private final Client client;
    private final LeaseMetrics metrics;
    private final ScheduledThreadPoolExecutor timer;

    /**
     * @param endpoints  etcd client URLs, e.g. {@code http://127.0.0.1:2379}
     * @param lockPrefix key prefix for lock keys, e.g. {@link #DEFAULT_LOCK_PREFIX}
     */
    public FencingLeaseClient(List<String> endpoints, String lockPrefix) {
        this(EtcdSettings.builder(endpoints).lockPrefix(lockPrefix).build(), new CompositeMeterRegistry());
    }

    /**
     * @param endpoints  etcd client URLs, e.g. {@code http://127.0.0.1:2379}
     * @param lockPrefix key prefix for lock keys, e.g. {@link #DEFAULT_LOCK_PREFIX}
     * @param registry   where the lease metrics go (see {@link LeaseMetrics} for names)
     */
    public FencingLeaseClient(List<String> endpoints, String lockPrefix, MeterRegistry registry) {
        this(EtcdSettings.builder(endpoints).lockPrefix(lockPrefix).build(), registry);
    }

    /**
     * @param settings endpoints, credentials, TLS, timeouts and lock prefix
     * @param registry where the lease metrics go (see {@link LeaseMetrics} for names)
     * @throws IllegalArgumentException if a TLS file cannot be read as PEM
     */
    public FencingLeaseClient(EtcdSettings settings, MeterRegistry registry) {
        this.settings = settings;
        this.metrics = new LeaseMetrics(registry);
        // waitForReady(false): with no reachable endpoint a call fails (UNAVAILABLE) instead of
        // waiting for one forever; every call also has its own deadline or timeout here.
        ClientBuilder builder = Client.builder().endpoints(settings.endpoints().toArray(String[]::new))
                .connectTimeout(settings.connectTimeout()).waitForReady(false);
        if (settings.user() != null) {
            builder.user(ByteSequence.from(settings.user(), StandardCharsets.UTF_8))
                    .password(ByteSequence.from(settings.password(), StandardCharsets.UTF_8));
        }
        if (settings.tls()) {
            try {
                builder.sslContext(tls -> {
                    if (settings.tlsCaFile() != null) {
                        tls.trustManager(settings.tlsCaFile().toFile());
                    }
                    if (settings.tlsCertFile() != null) {
                        tls.keyManager(settings.tlsCertFile().toFile(), settings.tlsKeyFile().toFile());
                    }
                });
            } catch (javax.net.ssl.SSLException | IllegalArgumentException e) {
                throw new IllegalArgumentException("cannot use the TLS files of " + settings + ": " + e.getMessage(), e);
            }
        }
        this.client = builder.build();
        this.timer = new ScheduledThreadPoolExecutor(1, runnable -> {
            Thread thread = new Thread(runnable, "fence-lease-renewal");
            thread.setDaemon(true);
            return thread;
        });
        this.timer.setRemoveOnCancelPolicy(true);
    }

    /** The settings this client was made with. */
    public EtcdSettings settings() {
        return settings;
    }

    /**
     * Grants a lease of {@code ttl} (whole seconds, rounded up, at least 1) and acquires the
     * resource's lock under it, keeping the lease alive from the grant on, also while waiting.
     * The token is the revision of the lock response header, captured with the lock and never
     * re-read. If the lock is not acquired within {@code timeout}, or the lease is lost meanwhile,
     * the lease is revoked, which also deletes the pending lock key: no orphan waiter remains.
     *
     * @param resource the resource to lock, non-empty; also the Kafka record key of its writes
     * @throws LeaseAcquisitionException if etcd is unreachable, refuses the credentials, fails, or the wait times out
     * @throws InterruptedException      if interrupted while waiting (the lease is revoked)
     */
    public FencingLease acquire(String resource, Duration ttl, Duration timeout) throws LeaseAcquisitionException, InterruptedException {
        Pending pending = startAcquisition(resource, ttl);
        try {
            return pending.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            boolean granted = pending.granted;
            pending.giveUp();
            if (!granted) {
                throw new LeaseAcquisitionException("timed out after " + timeout.toMillis() + " ms trying to grant a lease for " + resource
                        + ": etcd at " + settings.endpoints() + " did not answer (is it running and reachable?)", e);
            }
            throw new LeaseAcquisitionException("timed out after " + timeout.toMillis() + " ms waiting for the lock on " + resource
                    + " (another holder has it)", e);
        } catch (InterruptedException e) {
            pending.giveUp();
            throw e;
        } catch (ExecutionException e) {
            pending.giveUp();
            if (e.getCause() instanceof LeaseAcquisitionException acquisition) {
                throw acquisition;
            }
            throw new LeaseAcquisitionException("could not acquire the lock on " + resource + ": " + e.getCause(), e.getCause());
        }
    }

    /**
     * Starts acquiring like {@link #acquire} without blocking. Cancelling the returned future, or
     * completing it yourself, gives the attempt up: the lease is revoked at once, so the lock can
     * never be granted to it later. Failures complete the future with a {@link LeaseAcquisitionException}.
     *
     * @param resource the resource to lock, non-empty
     * @param ttl      the lease TTL; whole seconds, rounded up, at least 1
     */
    public CompletableFuture<FencingLease> acquireAsync(String resource, Duration ttl) {
        return startAcquisition(resource, ttl);
    }

    private Pending startAcquisition(String resource, Duration ttl) {
        if (resource == null || resource.isEmpty()) {
            throw new IllegalArgumentException("resource must be a non-empty string");
        }
        long ttlSeconds = Math.max(1, (ttl.toMillis() + 999) / 1000);
        long startNanos = System.nanoTime();
        Pending result = new Pending(settings.requestTimeout());
        result.whenComplete((lease, error) -> {
            if (error != null) {
                metrics.failed(Duration.ofNanos(System.nanoTime() - startNanos));
            }
        });
        client.getLeaseClient().grant(ttlSeconds, settings.requestTimeout().toMillis(), TimeUnit.MILLISECONDS).whenComplete((grant, grantError) -> {
            if (grantError != null) {
                result.completeExceptionally(failure("grant a lease for " + resource, grantError));
                result.settled.complete(null);
                return;
            }
            result.granted = true;
            Duration granted = Duration.ofSeconds(grant.getTTL());
            // The first deadline counts from before the grant request: etcd started the TTL after that.
            FencingLease lease = new FencingLease(client, timer, settings.requestTimeout(), resource, grant.getID(), granted,
                    startNanos + granted.toNanos(), metrics);
            result.whenComplete((held, error) -> {
                if (error != null) {
                    lease.abandon().thenRun(() -> result.settled.complete(null));
                } else {
                    result.settled.complete(null);
                }
            });
            if (result.isDone()) {
                return;
            }
            lease.onLoss((lost, cause) -> result.completeExceptionally(new LeaseAcquisitionException(
                    "the lease for " + resource + " was lost while waiting for the lock: " + cause.lossCause(), cause)));
            lease.startKeepAlive();
            // etcd locks a name by the key prefix "name/": encode '/' so that resource "a" does not wait on "a/x".
            ByteSequence lockName = ByteSequence.from(settings.lockPrefix() + URLEncoder.encode(resource, StandardCharsets.UTF_8), StandardCharsets.UTF_8);
            CompletableFuture<LockResponse> lock = client.getLockClient().lock(lockName, grant.getID());
            result.whenComplete((held, error) -> {
                if (error != null) {
                    lock.cancel(true);
                }
            });
            lock.thenCompose(response -> verifyHeld(response, grant.getID(), resource)).whenComplete((response, error) -> {
                if (error != null) {
                    result.completeExceptionally(failure("acquire the lock for " + resource, error));
                    return;
                }
                lease.locked(response.getHeader().getRevision(), response.getKey());
                if (!lease.isValid()) {
                    result.completeExceptionally(new LeaseAcquisitionException("the lease for " + resource
                            + " was lost while waiting for the lock: " + lease.lossCause(), null));
                } else if (!result.isDone() && recordAcquired(lease, startNanos) && !result.complete(lease)) {
                    // Given up (cancelled, timed out) while the lock response was on its way: the
                    // whenComplete above revokes the lease, which releases the lock.
                    LOG.info("lock on {} arrived after the acquisition was given up; releasing it", resource);
                }
            });
        });
        return result;
    }

    /** Counts and logs an acquisition before the caller sees it; always true. */
    private boolean recordAcquired(FencingLease lease, long startNanos) {
        Duration took = Duration.ofNanos(System.nanoTime() - startNanos);
        metrics.acquired(took);
        LOG.info("acquired {} with token {} (lease {}, TTL {} s) in {} ms", lease.resource(), lease.token(), Long.toHexString(lease.leaseId()),
                lease.ttl().toSeconds(), took.toMillis());
        return true;
    }

    /**
     * Reads the lock key back: it must still exist, belong to our lease and predate the token.
     * etcd 3.4's Lock RPC can answer a waiter whose lease (and so whose key) expired while it
     * waited, with the same header revision as the real next holder; such an answer is not a lock.
     */
    private CompletableFuture<LockResponse> verifyHeld(LockResponse lock, long leaseId, String resource) {
        long token = lock.getHeader().getRevision();
        return client.getKVClient().get(lock.getKey()).orTimeout(settings.requestTimeout().toMillis(), TimeUnit.MILLISECONDS)
                .thenApply((GetResponse current) -> {
                    boolean held = current.getKvs().size() == 1 && current.getKvs().get(0).getLease() == leaseId
                            && current.getKvs().get(0).getCreateRevision() <= token;
                    if (!held) {
                        throw new CompletionException(new LeaseAcquisitionException("etcd answered the lock request for " + resource
                                + " but the lock key " + lock.getKey().toString(StandardCharsets.UTF_8) + " is gone: the lease expired while waiting", null));
                    }
                    return lock;
                });
    }

    /** Turns an etcd failure into a {@link LeaseAcquisitionException} that says what to check. */
    private LeaseAcquisitionException failure(String what, Throwable error) {
        Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        if (cause instanceof LeaseAcquisitionException acquisition) {
            return acquisition;
        }
        if (cause instanceof CancellationException) {
            return new LeaseAcquisitionException("gave up trying to " + what, cause);
        }
        if (cause instanceof TimeoutException) {
            return new LeaseAcquisitionException("etcd at " + settings.endpoints() + " did not answer within "
                    + settings.requestTimeout().toMillis() + " ms (" + EtcdSettings.REQUEST_TIMEOUT_MS + ") trying to " + what, cause);
        }
        return new LeaseAcquisitionException("etcd at " + settings.endpoints() + " failed to " + what + ": " + EtcdErrors.describe(cause, settings), cause);
    }

    /** An acquisition in progress; {@link #settled} completes once a given-up attempt's lease is revoked. */
    private static final class Pending extends CompletableFuture<FencingLease> {
        final CompletableFuture<Void> settled = new CompletableFuture<>();
        volatile boolean granted;
        private final Duration requestTimeout;

        Pending(Duration requestTimeout) {
            this.requestTimeout = requestTimeout;
        }

        /** Cancels and waits (at most the request timeout) until the lease is revoked, so the caller sees no leftovers. */
        void giveUp() {
            cancel(true);
            if (!granted) {
                return; // no lease yet; if the grant still arrives, that lease is revoked at once
            }
            try {
                settled.get(requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException | TimeoutException e) {
                LOG.debug("the given-up lease is not revoked yet; it expires unrenewed after its TTL", e);
            }
        }
    }

    @Override
    public void close() {
        timer.shutdownNow();
        client.close();
    }
}
