package dev.fencedwrites.producer;

import dev.fencedwrites.etcd.EtcdClients;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.etcd.LockKeys;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.GetOption;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Acquires {@link FencingLease}s from etcd: a lease with a TTL, then the etcd lock
 * {@code <lockPrefix><URL-encoded resource>} bound to that lease. One gRPC connection and one
 * renewal thread serve all leases of a client. Thread-safe; close it when done. Each acquisition's
 * steps are {@link LeaseAcquisition}'s.
 */
public final class FencingLeaseClient implements AutoCloseable {
    /** Default key prefix of the lock keys in etcd. */
    public static final String DEFAULT_LOCK_PREFIX = LockKeys.DEFAULT_PREFIX;
    private static final Logger LOG = LoggerFactory.getLogger(FencingLeaseClient.class);

    private final EtcdSettings settings;
    private final Client client;
    private final LeaseMetrics metrics;
    private final ScheduledThreadPoolExecutor timer;
    private final ExecutorService events;
    private final Set<FencingLease> live = ConcurrentHashMap.newKeySet();
    private final Set<LeaseAcquisition> pending = ConcurrentHashMap.newKeySet();
    private final LeaseAcquisition.Shared shared;
    private volatile boolean closed;

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
        this.client = EtcdClients.connect(settings);
        this.timer = new ScheduledThreadPoolExecutor(1, runnable -> {
            Thread thread = new Thread(runnable, "fence-lease-renewal");
            thread.setDaemon(true);
            return thread;
        });
        this.timer.setRemoveOnCancelPolicy(true);
        // Callers' code (loss listeners, acquireAsync continuations) runs here, never on gRPC's
        // event loop or the renewal thread, so a slow listener delays no keep-alive.
        this.events = Executors.newSingleThreadExecutor(runnable -> {
            Thread thread = new Thread(runnable, "fence-lease-events");
            thread.setDaemon(true);
            return thread;
        });
        this.shared = new LeaseAcquisition.Shared(client, settings, timer, events, metrics, live, connect(client, settings));
    }

    /**
     * Opens the channel to etcd (and authenticates, with a user) by reading one key name under the lock prefix, which
     * a lock needs anyway. A cold channel in a fresh JVM on a loaded machine took over 4 s: counted into a first
     * grant, it spent a short TTL before the lease began. Completes when answered either way, or after the request
     * timeout; a failure shows again on the grant, which reports it.
     */
    private static CompletableFuture<?> connect(Client client, EtcdSettings settings) {
        ByteSequence prefix = ByteSequence.from(settings.lockPrefix(), StandardCharsets.UTF_8);
        return client.getKVClient().get(prefix, GetOption.builder().isPrefix(true).withKeysOnly(true).withLimit(1).build())
                .orTimeout(settings.requestTimeout().toMillis(), TimeUnit.MILLISECONDS)
                .handle((answer, error) -> null);
    }

    /** The settings this client was made with. */
    public EtcdSettings settings() {
        return settings;
    }

    /**
     * Grants a lease of {@code ttl} (whole seconds, rounded up, at least 1) and acquires the
     * resource's lock under it, keeping the lease alive from the grant on, also while waiting.
     * The token is the revision of the etcd transaction that found the lock held by this lease (see
     * {@link EtcdLock}), captured with the lock and never re-read. If the lock is not acquired within {@code timeout}, or the
     * lease is lost meanwhile,
     * the lease is revoked (asynchronously, so the timeout holds even when etcd stalls), which also
     * deletes the pending lock key: no orphan waiter remains, and if the revoke cannot reach etcd
     * the unrenewed lease expires after its TTL.
     *
     * @param resource the resource to lock, non-empty; also the Kafka record key of its writes
     * @throws LeaseAcquisitionException if etcd is unreachable, refuses the credentials, fails, or the wait times out
     * @throws InterruptedException      if interrupted while waiting (the lease is revoked)
     */
    public FencingLease acquire(String resource, Duration ttl, Duration timeout)
            throws LeaseAcquisitionException, InterruptedException {
        LeaseAcquisition attempt = startAcquisition(resource, ttl);
        try {
            return attempt.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            boolean granted = attempt.granted;
            attempt.giveUp();
            if (!granted) {
                throw new LeaseAcquisitionException(
                        "timed out after " + timeout.toMillis() + " ms trying to grant a lease for " + resource
                                + ": etcd at " + settings.endpoints() + " did not answer (is it running and reachable?)",
                        e);
            }
            throw new LeaseAcquisitionException(
                    "timed out after " + timeout.toMillis() + " ms waiting for the lock on " + resource
                            + " (another holder has it)",
                    e);
        } catch (InterruptedException e) {
            attempt.giveUp();
            throw e;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof LeaseAcquisitionException acquisition) {
                throw acquisition;
            }
            throw new LeaseAcquisitionException("could not acquire the lock on " + resource + ": " + e.getCause(), e.getCause());
        }
    }

    /**
     * Starts acquiring like {@link #acquire} without blocking. The future completes on this
     * client's event thread ({@code fence-lease-events}), so continuations never block gRPC or the
     * renewals. Cancelling it, or completing it yourself with anything but the lease, gives the
     * attempt up: the lease is revoked at once, so the lock can never be granted to it later.
     * Failures complete it with a {@link LeaseAcquisitionException}.
     *
     * @param resource the resource to lock, non-empty
     * @param ttl      the lease TTL; whole seconds, rounded up, at least 1
     */
    public CompletableFuture<FencingLease> acquireAsync(String resource, Duration ttl) {
        return startAcquisition(resource, ttl);
    }

    private LeaseAcquisition startAcquisition(String resource, Duration ttl) {
        if (resource == null || resource.isEmpty()) {
            throw new IllegalArgumentException("resource must be a non-empty string");
        }
        long ttlSeconds = Math.max(1, (ttl.toMillis() + 999) / 1000);
        LeaseAcquisition result = new LeaseAcquisition(shared, resource);
        if (closed) {
            result.completeExceptionally(new LeaseAcquisitionException("the lease client is closed", null));
            return result;
        }
        pending.add(result);
        result.whenComplete((lease, error) -> pending.remove(result));
        result.start(ttlSeconds);
        return result;
    }

    /**
     * Closes the client: pending acquisitions fail, leases still held are reported lost (cause
     * {@code closed}) to their listeners and revoked (waiting at most the request timeout), then
     * the connection and threads stop. Release leases with {@link FencingLease#close()} first.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        List<FencingLease> leases = List.copyOf(live); // held, and granted to pending acquisitions
        for (LeaseAcquisition attempt : pending) {
            attempt.completeExceptionally(new LeaseAcquisitionException("the lease client was closed while acquiring", null));
        }
        List<CompletableFuture<Void>> revokes = leases.stream().map(FencingLease::clientClosed).toList();
        try {
            CompletableFuture.allOf(revokes.toArray(CompletableFuture[]::new)).get(settings.requestTimeout().toMillis(),
                    TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            LOG.debug("not every lease was revoked on close; they expire unrenewed after their TTL", e);
        }
        events.shutdown();
        try {
            events.awaitTermination(1, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        timer.shutdownNow();
        client.close();
    }
}
