package dev.fencedwrites.docker;

import dev.fencedwrites.producer.FencedProducer;
import dev.fencedwrites.producer.LeaseMetrics;
import dev.fencedwrites.producer.PauseDetector;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Registers every meter producer-lib exports, with its real classes and through its public API, in a registry:
 * the lease meters with every tag value ({@link LeaseMetrics#registerAll}), the producer's counters and the pause
 * detector's. For the dashboard test, which checks names against what a worker exports.
 */
final class ProducerMeters {
    private ProducerMeters() {
    }

    static void registerAll(MeterRegistry registry) {
        LeaseMetrics.registerAll(registry);
        MockProducer<String, byte[]> kafka = new MockProducer<>(true, null, new StringSerializer(), new ByteArraySerializer());
        try (FencedProducer<byte[]> producer = new FencedProducer<>(kafka, "fenced-writes", "dashboard-test",
                FencedProducer.Takeover.PUBLISH_MARKER, registry)) {
            // construction registers fence.producer.sends.refused and fence.producer.markers
        }
        try (PauseDetector detector = PauseDetector.start(Duration.ofMillis(50), Duration.ofSeconds(10), registry)) {
            // start registers fence.pause.stall, fence.pause.largest.recent and fence.pause.lease.ttl
        }
    }
}
