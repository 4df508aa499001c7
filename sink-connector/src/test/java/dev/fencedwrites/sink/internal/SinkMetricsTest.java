package dev.fencedwrites.sink.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.RejectionReason;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.junit.jupiter.api.Test;

/**
 * Two sink tasks in one Connect worker share its metrics registry, as the fenced and the unfenced sink of {@code ./fence demo}
 * do.
 */
class SinkMetricsTest {
    private final Metrics worker = new Metrics();

    @Test
    void tasksInOneWorkerCountOnlyTheirOwnAndOneStoppingLeavesTheOthersSeries() throws IOException {
        PluginMetricsImpl fencedTask = new PluginMetricsImpl(worker, tags("fenced-sink"));
        PluginMetricsImpl unfencedTask = new PluginMetricsImpl(worker, tags("unfenced-sink"));
        SinkMetrics fenced = new SinkMetrics(fencedTask);
        SinkMetrics unfenced = new SinkMetrics(unfencedTask);

        unfenced.written(5);
        fenced.written(2);
        fenced.fenced(RejectionReason.STALE_TOKEN);

        assertThat(value("fenced-sink", "rows-written-total", Map.of())).isEqualTo(2.0);
        assertThat(value("unfenced-sink", "rows-written-total", Map.of())).isEqualTo(5.0);
        assertThat(value("fenced-sink", "records-fenced-total", Map.of("reason", "STALE_TOKEN"))).isEqualTo(1.0);
        assertThat(value("unfenced-sink", "records-fenced-total", Map.of("reason", "STALE_TOKEN"))).isZero();

        unfencedTask.close(); // the task stops: Connect closes its plugin metrics
        fenced.written(1);

        assertThat(value("fenced-sink", "rows-written-total", Map.of())).isEqualTo(3.0);
        assertThat(worker.metric(name("unfenced-sink", "rows-written-total", Map.of()))).isNull();
    }

    /**
     * Connect starts a task again while the earlier instance, abandoned after {@code task.shutdown.graceful.timeout.ms}
     * (stuck in a call to a broker it was cut from), still holds its metric names: a chaos run's sink task failed to start
     * on "A metric named ... already exists" and stayed FAILED.
     */
    @Test
    void aTaskStartedWhileItsAbandonedInstanceHoldsItsMetricNamesStillStarts() throws IOException {
        PluginMetricsImpl abandoned = new PluginMetricsImpl(worker, tags("billing-summary-sink"));
        new SinkMetrics(abandoned).written(4);
        PluginMetricsImpl restarted = new PluginMetricsImpl(worker, tags("billing-summary-sink"));

        SinkMetrics again = new SinkMetrics(restarted);
        again.written(1);
        again.fenced(RejectionReason.DUPLICATE);

        assertThat(value("billing-summary-sink", "rows-written-total", Map.of())).as("the abandoned instance's series")
                .isEqualTo(4.0);
        abandoned.close();
        restarted.close();
    }

    private double value(String connector, String metric, Map<String, String> extra) {
        KafkaMetric found = worker.metric(name(connector, metric, extra));
        assertThat(found).as("%s of %s", metric, connector).isNotNull();
        return ((Number) found.metricValue()).doubleValue();
    }

    private static MetricName name(String connector, String metric, Map<String, String> extra) {
        Map<String, String> all = tags(connector);
        all.putAll(extra);
        return new MetricName(metric, "plugins", "", all);
    }

    private static Map<String, String> tags(String connector) {
        Map<String, String> tags = new LinkedHashMap<>();
        tags.put("connector", connector);
        tags.put("task", "0");
        return tags;
    }
}
