package dev.fencedwrites.sink;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTaskContext;

/**
 * A {@link SinkTaskContext} that records what the task reports to the dead-letter topic and every {@code timeout} it asks for.
 */
final class RecordingSinkTaskContext implements SinkTaskContext {
    /** One {@link ErrantRecordReporter#report} call. */
    record Report(SinkRecord record, Throwable error) {
    }

    private static final Map<String, String> TASK_TAGS = Map.of("connector", "test-sink", "task", "0");
    private final Map<String, String> configs;
    private final Metrics metrics = new Metrics();
    private final PluginMetrics pluginMetrics = new PluginMetricsImpl(metrics, TASK_TAGS);
    private final List<Report> reports = new ArrayList<>();
    private final List<Long> timeouts = new ArrayList<>();
    /** false: like a connector without errors.tolerance=all and a dead-letter topic. */
    boolean reporterConfigured = true;

    RecordingSinkTaskContext(Map<String, String> configs) {
        this.configs = configs;
    }

    List<Report> reports() {
        return reports;
    }

    List<Long> timeouts() {
        return timeouts;
    }

    @Override
    public ErrantRecordReporter errantRecordReporter() {
        if (!reporterConfigured) {
            return null;
        }
        return (record, error) -> {
            reports.add(new Report(record, error));
            return CompletableFuture.completedFuture(null);
        };
    }

    @Override
    public void timeout(long timeoutMs) {
        timeouts.add(timeoutMs);
    }

    @Override
    public Map<String, String> configs() {
        return configs;
    }

    @Override
    public void offset(Map<TopicPartition, Long> offsets) {
    }

    @Override
    public void offset(TopicPartition tp, long offset) {
    }

    @Override
    public Set<TopicPartition> assignment() {
        return Set.of();
    }

    @Override
    public void pause(TopicPartition... partitions) {
    }

    @Override
    public void resume(TopicPartition... partitions) {
    }

    @Override
    public void requestCommit() {
    }

    /** Plugin metrics over a private registry, tagged as Connect tags a task's (connector, task). */
    @Override
    public PluginMetrics pluginMetrics() {
        return pluginMetrics;
    }

    /** The value of the plugin metric {@code name} with these extra tags (connector and task are added). */
    double metric(String name, Map<String, String> tags) {
        Map<String, String> all = new LinkedHashMap<>(TASK_TAGS);
        all.putAll(tags);
        KafkaMetric metric = metrics.metric(new MetricName(name, "plugins", "", all));
        if (metric == null) {
            throw new AssertionError("no plugin metric " + name + " " + all + "; registered: " + metrics.metrics().keySet());
        }
        return ((Number) metric.metricValue()).doubleValue();
    }
}
