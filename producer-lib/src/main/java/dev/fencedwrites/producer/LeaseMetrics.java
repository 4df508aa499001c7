package dev.fencedwrites.producer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;

/**
 * producer-lib's lease metrics. Prometheus names: {@code fence_lease_acquired_total},
 * {@code fence_lease_acquisition_seconds{outcome}} (grant + lock wait), {@code fence_lease_lost_total{cause}}
 * with cause {@code expired} (etcd says the lease is gone), {@code deadline} (no renewal within the TTL
 * on the local monotonic clock) or {@code closed} (the lease client was closed under it), and {@code fence_lease_keepalive_failures_total} (keep-alive requests
 * that failed and were retried: etcd unreachable or without a leader).
 */
final class LeaseMetrics {
    private final MeterRegistry registry;
    private final Counter acquired;
    private final Counter keepAliveFailures;

    LeaseMetrics(MeterRegistry registry) {
        this.registry = registry;
        this.acquired = Counter.builder("fence.lease.acquired").description("Leases acquired with their lock").register(registry);
        this.keepAliveFailures = Counter.builder("fence.lease.keepalive.failures").description("Keep-alive requests that failed and were retried").register(registry);
    }

    void acquired(Duration took) {
        acquired.increment();
        Timer.builder("fence.lease.acquisition").tag("outcome", "acquired").register(registry).record(took);
    }

    void failed(Duration took) {
        Timer.builder("fence.lease.acquisition").tag("outcome", "failed").register(registry).record(took);
    }

    void lost(String cause) {
        Counter.builder("fence.lease.lost").tag("cause", cause).description("Leases lost while held").register(registry).increment();
    }

    void keepAliveFailed() {
        keepAliveFailures.increment();
    }
}
