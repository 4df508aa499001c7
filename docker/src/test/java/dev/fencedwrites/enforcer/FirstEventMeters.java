package dev.fencedwrites.enforcer;

import dev.fencedwrites.enforcer.internal.FenceProductionExceptionHandler;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TimeoutException;

/**
 * Registers the enforcer's meters that appear at their first event (one series per tag value): a replaced stream thread
 * and a record Kafka refused, one of each. For the metrics reference of the docker module's tests.
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
    }
}
