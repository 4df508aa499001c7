package dev.fencedwrites.enforcer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.RejectionReason;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The enforcer's fenced-writes series: one per reason the enforcer decides, none for the sink's own one. */
class EnforcerMetricsTest {

    @Test
    void everyReasonTheEnforcerDecidesHasASeriesAndTheSinksOwnReasonsHaveNone() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new EnforcerMetrics(registry);

        assertThat(registry.find("fence.enforcer.records.fenced").counters())
                .extracting(counter -> counter.getId().getTag("reason"))
                .containsExactlyInAnyOrderElementsOf(Arrays.stream(RejectionReason.values()).map(Enum::name)
                        .filter(reason -> !reason.equals("MALFORMED_VALUE"))
                        .toList());
    }
}
