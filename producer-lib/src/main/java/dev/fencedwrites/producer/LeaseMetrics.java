package dev.fencedwrites.producer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.List;

/**
 * producer-lib's lease metrics. Prometheus names: {@code fence_lease_acquired_total},
 * {@code fence_lease_acquisition_seconds{outcome}} (grant + lock wait), {@code fence_lease_lost_total{cause}}
 * with cause {@code expired} (etcd says the lease is gone), {@code deadline} (no renewal within the TTL
 * on the local monotonic clock) or {@code closed} (the lease client was closed under it), and {@code
 * fence_lease_keepalive_failures_total} (keep-alive requests
 * that failed and were retried: etcd unreachable or without a leader).
 *
 * <p>Every meter, with every tag value, is registered at zero when the client is made: a counter
 * that first appears at 1 has no earlier sample, so Prometheus' {@code rate()} and {@code increase()} (and the
 * {@code FenceLeaseLost} alert of {@code docker/prometheus/alerts.yml}) would never see a worker's first lease loss.
 *
 * <p>Made by {@link FencingLeaseClient}; public only for {@link #registerAll}.
 */
public final class LeaseMetrics {
    /** The {@code outcome} tag values of {@code fence.lease.acquisition}. */
    private static final List<String> OUTCOMES = List.of("acquired", "failed");
    /** The {@code cause} tag values of {@code fence.lease.lost}. */
    private static final List<String> CAUSES = List.of("expired", "deadline", "closed");

    private final MeterRegistry registry;
    private final Counter acquired;
    private final Counter keepAliveFailures;

    LeaseMetrics(MeterRegistry registry) {
        this.registry = registry;
        this.acquired = Counter.builder("fence.lease.acquired").description("Leases acquired with their lock").register(registry);
        this.keepAliveFailures = Counter.builder("fence.lease.keepalive.failures")
                .description("Keep-alive requests that failed and were retried").register(registry);
        OUTCOMES.forEach(outcome -> acquisition(registry, outcome));
        CAUSES.forEach(cause -> lost(registry, cause));
    }

    /**
     * Registers every lease meter, with every tag value it takes, at zero: what a worker with a
     * {@link FencingLeaseClient} exports, for dashboards and alert rules that must name them (the docker module's
     * dashboard test checks its queries against these). Registering twice in one registry is harmless.
     */
    public static void registerAll(MeterRegistry registry) {
        new LeaseMetrics(registry);
    }

    private static Timer acquisition(MeterRegistry registry, String outcome) {
        return Timer.builder("fence.lease.acquisition").description("Time to grant a lease and take its lock, by outcome")
                .tag("outcome", outcome).register(registry);
    }

    private static Counter lost(MeterRegistry registry, String cause) {
        return Counter.builder("fence.lease.lost").tag("cause", cause).description("Leases lost while held").register(registry);
    }

    void acquired(Duration took) {
        acquired.increment();
        acquisition(registry, "acquired").record(took);
    }

    void failed(Duration took) {
        acquisition(registry, "failed").record(took);
    }

    void lost(String cause) {
        lost(registry, cause).increment();
    }

    void keepAliveFailed() {
        keepAliveFailures.increment();
    }
}
