package dev.fencedwrites.producer;

import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Registers every meter producer-lib exports, with its real classes, in a registry: the lease
 * meters (some are registered only when an event happens, so the events are recorded here), the
 * producer's counters and the pause detector's. In this package because {@link LeaseMetrics} is
 * package-private. For the dashboard test, which checks names against what a worker exports.
 */
public final class ProducerMeters {
    private ProducerMeters() {
    }

    public static void registerAll(MeterRegistry registry) {
        LeaseMetrics lease = new LeaseMetrics(registry);
        lease.acquired(Duration.ofMillis(5));
        lease.failed(Duration.ofMillis(5));
        lease.keepAliveFailed();
        for (String cause : new String[] {"expired", "deadline", "closed"}) {
            lease.lost(cause);
        }
        MockProducer<String, byte[]> kafka = new MockProducer<>(true, null, new StringSerializer(), new ByteArraySerializer());
        try (FencedProducer<byte[]> producer = new FencedProducer<>(kafka, "fenced-writes", "dashboard-test", true, registry)) {
            // construction registers fence.producer.sends.refused and fence.producer.markers
        }
        try (PauseDetector detector = PauseDetector.start(Duration.ofMillis(50), Duration.ofSeconds(10), registry)) {
            // start registers fence.pause.stall, fence.pause.largest.recent and fence.pause.lease.ttl
        }
    }
}
