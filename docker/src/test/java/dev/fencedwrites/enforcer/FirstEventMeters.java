package dev.fencedwrites.enforcer;

import dev.fencedwrites.enforcer.internal.FenceExpiry;
import dev.fencedwrites.enforcer.internal.FenceProductionExceptionHandler;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;

/**
 * Registers the enforcer's meters that appear at their first event (one series per tag value): a replaced stream thread
 * and a record Kafka refused, one of each; fence expiry's, after one read of the oldest live lock. For the metrics
 * reference of the docker module's tests.
 */
public final class FirstEventMeters {
    private FirstEventMeters() {
    }

    public static void registerAll(MeterRegistry registry) {
        new StreamThreadFailures(registry, 10, Duration.ofMinutes(10), 3, thread -> 0, System::nanoTime)
                .handle(new IllegalStateException("an example stream thread failure"));
        FenceProductionExceptionHandler handler = new FenceProductionExceptionHandler();
        handler.configure(Map.of(FenceProductionExceptionHandler.REJECTED_TOPIC_CONFIG, "rejected",
                FenceProductionExceptionHandler.METER_REGISTRY_CONFIG, registry));
        handler.handleError(null, new ProducerRecord<>("accepted", new byte[0], new byte[0]), new TimeoutException("example"));
        expiry(registry);
    }

    /** Fence expiry's meters: one read of the oldest live lock, and one partition's floor. */
    private static void expiry(MeterRegistry registry) {
        FenceExpiry.Offsets none = new FenceExpiry.Offsets() {
            @Override
            public Map<TopicPartition, Long> ends(String topic) {
                return Map.of();
            }

            @Override
            public Map<TopicPartition, Long> committed() {
                return Map.of();
            }
        };
        try (FenceExpiry expiry = new FenceExpiry(() -> new FenceExpiry.OldestLock(10, "locks/example/694d", 7), none,
                List.of("input"), Duration.ofMinutes(1), 1, registry, System::currentTimeMillis)) {
            expiry.tick();
            expiry.floor(0, 6);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
