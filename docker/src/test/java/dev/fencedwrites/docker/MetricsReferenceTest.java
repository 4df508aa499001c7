package dev.fencedwrites.docker;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.enforcer.FirstEventMeters;
import dev.fencedwrites.sink.SinkMeters;
import dev.fencedwrites.testing.GeneratedReference;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.junit.jupiter.api.Test;

/**
 * {@code docs/reference/metrics.md} is generated from the meters the components register: the enforcer's and
 * producer-lib's Micrometer meters as Prometheus exports them (name, type, help, labels), and the sink's Connect plugin
 * metrics with the Prometheus names the JMX exporter rules in {@code config/connect-jmx-exporter.yml} give them.
 * Regenerate with {@code mvn -pl docker test -Dtest=MetricsReferenceTest -Ddocs.reference.update=true}.
 */
class MetricsReferenceTest {
    private static final Path FILE = Path.of("../docs/reference/metrics.md");
    private static final Path EXPORTER_RULES = Path.of("../config/connect-jmx-exporter.yml");

    @Test
    void checkedInMetricsReferenceMatchesTheRegisteredMeters() throws IOException {
        GeneratedReference.assertUpToDate(render(), FILE, "docker", "MetricsReferenceTest");
    }

    @Test
    void everyPluginMetricTheExporterRulesNameIsOneTheSinkRegisters() throws IOException {
        assertThat(sinkMetrics().values()).containsAll(exporterRules().values());
    }

    static String render() throws IOException {
        StringBuilder page = new StringBuilder("""
                # Metrics reference

                Generated from the meters the components register; do not edit by hand. Names are as Prometheus shows them
                (Micrometer's dotted names in Java: `fence.enforcer.records.accepted`). Kafka's own metrics keep Kafka's names
                (`kafka_stream_*`, `kafka_consumer_*`, `kafka_producer_*`, `kafka_connect_*`), the JVM's Micrometer's
                (`jvm_*`, `process_*`, `system_*`). [Observability](../operate/observability.md) says what to watch and alert on.

                """);
        page.append(micrometer("The enforcer", "its `/metrics` endpoint", "fence_enforcer_",
                enforcerRegistry().scrape()));
        page.append(
                micrometer("Writers (producer-lib)", "the Micrometer `MeterRegistry` you pass to producer-lib; serve it yourself",
                        "fence_", DashboardTest.producerRegistry().scrape()));
        page.append("## The sink\n\nServed by the Connect worker: Connect plugin metrics (KIP-877) in JMX as "
                + "`kafka.connect:type=plugins,connector=NAME,task=N`, exported to Prometheus by the JMX exporter agent with "
                + "[config/connect-jmx-exporter.yml](../../config/connect-jmx-exporter.yml). Every series has the labels "
                + "`connector` and `task`.\n\n| JMX name | Prometheus | description |\n|---|---|---|\n");
        for (Map.Entry<MetricName, String> metric : sinkMetrics().entrySet()) {
            MetricName name = metric.getKey();
            String tags = name.tags().keySet().stream().filter(t -> !t.equals("connector") && !t.equals("task"))
                    .map(t -> "{" + t + "}").reduce("", String::concat);
            page.append("| `").append(name.name()).append(tags).append("` | ")
                    .append(metric.getValue() == null ? "(JMX only)" : "`" + metric.getValue() + "`").append(" | ")
                    .append(name.description()).append(" |\n");
        }
        return page.toString();
    }

    /**
     * The enforcer's meters: those registered at start, and those registered at their first event (one series per tag
     * value), each after one such event.
     */
    private static PrometheusMeterRegistry enforcerRegistry() {
        PrometheusMeterRegistry registry = DashboardTest.enforcerRegistry();
        FirstEventMeters.registerAll(registry);
        return registry;
    }

    /** One section: every sample family of the scrape whose name starts with {@code prefix}. */
    private static String micrometer(String title, String servedBy, String prefix, String scrape) {
        Map<String, String> help = new TreeMap<>();
        Map<String, String> types = new TreeMap<>();
        Matcher comment = Pattern.compile("^# (HELP|TYPE) (\\S+) (.*)$", Pattern.MULTILINE).matcher(scrape);
        while (comment.find()) {
            if (comment.group(2).startsWith(prefix)) {
                (comment.group(1).equals("HELP") ? help : types).put(comment.group(2), comment.group(3));
            }
        }
        Map<String, Set<String>> labels = DashboardTest.scrape(scrape);
        StringBuilder section = new StringBuilder("## ").append(title).append("\n\nServed by ").append(servedBy)
                .append(".\n\n| name | type | labels | description |\n|---|---|---|---|\n");
        for (Map.Entry<String, String> family : types.entrySet()) {
            String name = family.getKey();
            TreeSet<String> tags = new TreeSet<>();
            labels.forEach((sample, names) -> {
                if (sample.equals(name) || sample.startsWith(name + "_")) {
                    tags.addAll(names);
                }
            });
            tags.remove("quantile");
            tags.remove("le");
            String type = family.getValue().equals("summary") ? "summary (`_count`, `_sum`)" : family.getValue();
            String description = name.endsWith("_max") && types.containsKey(name.substring(0, name.length() - 4))
                    ? "The largest recent value of `" + name.substring(0, name.length() - 4) + "`"
                    : help.getOrDefault(name, "").replace("|", "\\|");
            section.append("| `").append(name).append("` | ").append(type).append(" | ")
                    .append(tags.isEmpty() ? "" : "`" + String.join("`, `", tags) + "`").append(" | ").append(description)
                    .append(" |\n");
        }
        return section.append('\n').toString();
    }

    /** The exporter's rules for plugin metrics: the JMX attribute name to the Prometheus name. */
    private static Map<String, String> exporterRules() throws IOException {
        Map<String, String> rules = new LinkedHashMap<>();
        Matcher rule = Pattern.compile("pattern: 'kafka\\.connect<type=plugins[^>]*><>([a-z-]+)'\\s+name: (\\S+)")
                .matcher(Files.readString(EXPORTER_RULES));
        while (rule.find()) {
            rules.put(rule.group(1), rule.group(2));
        }
        assertThat(rules).as("plugin metric rules in " + EXPORTER_RULES).isNotEmpty();
        return rules;
    }

    /** The sink's plugin metrics, each with the Prometheus name an exporter rule gives it (null: none does). */
    private static Map<MetricName, String> sinkMetrics() throws IOException {
        Map<String, String> rules = exporterRules();
        Map<MetricName, String> metrics = new TreeMap<>((a, b) -> (a.name() + a.tags()).compareTo(b.name() + b.tags()));
        try (Metrics registry = new Metrics()) {
            PluginMetricsImpl plugin = new PluginMetricsImpl(registry, Map.of("connector", "c", "task", "0"));
            SinkMeters.registerAll(plugin);
            for (MetricName name : registry.metrics().keySet()) {
                if (name.group().equals("plugins") && (!name.tags().containsKey("reason")
                        || name.tags().get("reason").equals("STALE_TOKEN"))) {
                    MetricName shown = name.tags().containsKey("reason")
                            ? new MetricName(name.name(), name.group(), name.description(), Map.of("reason", "REASON"))
                            : name;
                    metrics.put(shown, rules.get(name.name()));
                }
            }
        }
        return metrics;
    }
}
