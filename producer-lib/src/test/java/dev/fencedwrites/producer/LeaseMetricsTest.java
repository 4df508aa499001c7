package dev.fencedwrites.producer;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

class LeaseMetricsTest {
    private static Set<String> ids(SimpleMeterRegistry registry) {
        Set<String> ids = new TreeSet<>();
        for (Meter meter : registry.getMeters()) {
            ids.add(meter.getId().getName() + meter.getId().getTags());
        }
        return ids;
    }

    @Test
    void registerAllExportsTheSameMetersAsEveryLeaseEventDoes() {
        SimpleMeterRegistry events = new SimpleMeterRegistry();
        LeaseMetrics metrics = new LeaseMetrics(events);
        metrics.acquired(Duration.ofMillis(5));
        metrics.failed(Duration.ofMillis(5));
        metrics.keepAliveFailed();
        for (String cause : new String[]{"expired", "deadline", "closed"}) {
            metrics.lost(cause);
        }
        SimpleMeterRegistry registered = new SimpleMeterRegistry();

        LeaseMetrics.registerAll(registered);

        assertThat(ids(registered)).isNotEmpty().isEqualTo(ids(events));
    }

    @Test
    void aNewLeaseClientsMetersExportEveryLossCauseAtZeroSoThatTheFirstLossIsAnIncrease() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();

        new LeaseMetrics(registry);

        assertThat(registry.find("fence.lease.lost").counters()).extracting(c -> c.getId().getTag("cause"))
                .containsExactlyInAnyOrder("expired", "deadline", "closed");
        assertThat(registry.find("fence.lease.lost").counters()).allSatisfy(c -> assertThat(c.count()).isZero());
    }

    @Test
    void registerAllRecordsNothing() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();

        LeaseMetrics.registerAll(registry);

        assertThat(registry.getMeters()).allSatisfy(meter -> assertThat(meter.measure())
                .allSatisfy(measurement -> assertThat(measurement.getValue()).isZero()));
    }
}
