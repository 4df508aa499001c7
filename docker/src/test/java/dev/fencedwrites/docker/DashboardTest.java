package dev.fencedwrites.docker;

import static dev.fencedwrites.docker.StackFiles.DIR;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fencedwrites.enforcer.FenceEnforcerApp;
import dev.fencedwrites.enforcer.FenceEnforcerConfig;
import dev.fencedwrites.enforcer.FenceEnforcerTopology;
import dev.fencedwrites.enforcer.StreamsProgress;
import dev.fencedwrites.enforcer.TokenVerifier;
import dev.fencedwrites.etcd.EtcdSettings;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;

/**
 * Checks the Grafana dashboard and its provisioning: every panel queries the data source its
 * {@code datasource} variable picks (the provisioned Prometheus by default), every rate uses
 * {@code $__rate_interval}, and every metric (and label) a query names is one the project really
 * exports: the enforcer's from a Prometheus scrape of its real meters, the workers' from
 * producer-lib's real meter classes, the sink's from the JMX exporter rules the Connect worker runs
 * with. Kafka's own client metrics and meters made at a first event exist only in a running
 * enforcer: {@link OperationsIT} checks those against a real one.
 */
class DashboardTest {
    private static final Pattern WORD = Pattern.compile("[a-zA-Z_:][a-zA-Z0-9_:]*");
    private static final Set<String> PROMQL_WORDS = Set.of("by", "without", "on", "ignoring", "group_left", "group_right",
            "bool", "and", "or", "unless", "offset");
    /** Labels Prometheus attaches to every series it scrapes (its target's), not the exporter. */
    static final Set<String> TARGET_LABELS = Set.of("job", "instance");
    /**
     * Metrics only a running enforcer exports: Kafka's client and Streams metrics (Micrometer's Kafka Streams binder), and
     * the GC pause timer, made at the first GC.
     */
    static final Pattern RUNTIME_ONLY = Pattern.compile("kafka_(stream|consumer|producer|admin)_.*|jvm_gc_pause_.*");

    private final JsonNode dashboard = StackFiles.json("grafana/dashboards/fenced-writes.json");

    @Test
    void everyPanelQueriesThePrometheusDataSourceItsVariablePicksAndTheProvisionedOneIsTheDefault() {
        JsonNode datasources = StackFiles.yaml("grafana/provisioning/datasources/prometheus.yaml").path("datasources");
        assertThat(datasources).hasSize(1);
        JsonNode prometheus = datasources.get(0);
        assertThat(prometheus.path("type").asText()).isEqualTo("prometheus");
        assertThat(prometheus.path("url").asText()).isEqualTo("http://prometheus:9090");
        assertThat(prometheus.path("isDefault").asBoolean()).as("the variable's default is the default data source").isTrue();
        List<JsonNode> variables = new ArrayList<>();
        dashboard.path("templating").path("list").forEach(variables::add);
        assertThat(variables).filteredOn(v -> v.path("name").asText().equals("datasource")).singleElement()
                .satisfies(v -> assertThat(v.path("type").asText()).isEqualTo("datasource"))
                .satisfies(v -> assertThat(v.path("query").asText()).isEqualTo("prometheus"));
        String uid = "${datasource}";
        List<JsonNode> panels = panels();
        assertThat(panels).hasSizeGreaterThanOrEqualTo(8);
        Set<Integer> ids = new HashSet<>();
        for (JsonNode panel : panels) {
            assertThat(ids.add(panel.path("id").asInt())).as("unique panel id %s", panel.path("id")).isTrue();
            assertThat(panel.path("datasource").path("type").asText()).as(panel.path("title").asText()).isEqualTo("prometheus");
            assertThat(panel.path("datasource").path("uid").asText()).as(panel.path("title").asText()).isEqualTo(uid);
            assertThat(panel.path("targets")).as(panel.path("title").asText()).isNotEmpty();
            for (JsonNode target : panel.path("targets")) {
                assertThat(target.path("datasource").path("uid").asText()).isEqualTo(uid);
                assertThat(target.path("expr").asText()).isNotBlank();
            }
        }
    }

    @Test
    void everyRateUsesGrafanasRateInterval() {
        Matcher range = Pattern.compile("\\b(rate|irate|increase)\\((?:[^()\\[]|\\([^()]*\\))*\\[([^]]*)]").matcher("");
        List<String> rates = new ArrayList<>();
        for (String expr : expressions()) {
            range.reset(expr);
            while (range.find()) {
                rates.add(range.group(0));
                if (!range.group(1).equals("increase")) {
                    assertThat(range.group(2)).as(expr).isEqualTo("$__rate_interval");
                }
            }
        }
        assertThat(rates).as("rates in the dashboard").hasSizeGreaterThan(10);
    }

    @Test
    void grafanaLoadsTheDashboardFromWhereComposeMountsIt() {
        JsonNode grafana = StackFiles.compose().path("services").path("grafana");
        assertThat(StackFiles.mountTarget(grafana, "./grafana/provisioning")).contains("/etc/grafana/provisioning");
        String dashboards = StackFiles.mountTarget(grafana, "./grafana/dashboards").orElseThrow();
        JsonNode providers = StackFiles.yaml("grafana/provisioning/dashboards/fenced-writes.yaml").path("providers");
        assertThat(providers).hasSize(1);
        assertThat(providers.get(0).path("type").asText()).isEqualTo("file");
        assertThat(providers.get(0).path("options").path("path").asText()).isEqualTo(dashboards);
        String home = grafana.path("environment").path("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH").asText();
        assertThat(home).startsWith(dashboards + "/");
        assertThat(DIR.resolve("grafana/dashboards").resolve(home.substring(dashboards.length() + 1))).isRegularFile();
        assertThat(dashboard.path("uid").asText()).isNotBlank();
    }

    @Test
    void theDashboardCoversWhatTheIssueAsks() {
        Set<String> names = metricNames();
        assertThat(names).contains("fence_enforcer_records_accepted_total", "fence_enforcer_records_fenced_total",
                "fence_enforcer_markers_accepted_total",
                "fence_sink_rows_written_total", "fence_sink_records_fenced_total",
                "fence_lease_lost_total", "fence_pause_largest_recent_seconds", "fence_pause_stall_seconds_max");
        // Kafka Streams (state, restore, lag), the JVM, and Connect (task state, lag, dead-letter rate).
        assertThat(names).contains("fence_enforcer_streams_state", "fence_enforcer_restore_remaining_offsets",
                "kafka_consumer_fetch_manager_records_lag_max", "jvm_memory_used_bytes", "process_cpu_usage",
                "kafka_connect_worker_connector_running_task_count", "kafka_connect_worker_connector_failed_task_count",
                "kafka_connect_sink_consumer_records_lag_max", "kafka_connect_task_error_deadletterqueue_produce_requests");
        // Rejections are shown by reason, for the enforcer and for the sink.
        assertThat(expressions()).anyMatch(e -> e.contains("by (reason)") && e.contains("fence_enforcer_records_fenced_total"))
                .anyMatch(e -> e.contains("by (reason)") && e.contains("fence_sink_records_fenced_total"));
        // Producer panels say they need the workers' metrics to be scraped.
        panels().stream().filter(p -> p.toString().contains("fence_lease_") || p.toString().contains("fence_pause_"))
                .forEach(p -> assertThat(p.path("description").asText()).as(p.path("title").asText())
                        .contains("only when a worker"));
    }

    @Test
    void everyEnforcerAndWorkerMetricIsOneTheProjectExports() {
        // Sanity: the scrapes are real (a renamed meter would show up here first).
        assertThat(exported()).containsKeys("fence_enforcer_records_fenced_total", "fence_enforcer_records_accepted_total",
                "fence_lease_acquired_total", "fence_pause_stall_seconds_count", "jvm_memory_used_bytes",
                "fence_enforcer_streams_state");
        assertThat(unknownEnforcerOrWorkerMetrics(expressions())).as("metrics neither the enforcer nor producer-lib exports")
                .isEmpty();
    }

    @Test
    void everySinkMetricIsOneTheConnectExporterRulesProduce() {
        assertThat(expressions().stream().flatMap(e -> metricNames(e).stream()).filter(DashboardTest::isSinkMetric))
                .isNotEmpty();
        assertThat(unknownSinkMetrics(expressions())).as("sink and Connect metrics no exporter rule produces").isEmpty();
    }

    /**
     * The metric names and labels in {@code expressions} that neither the enforcer's nor producer-lib's meters export,
     * each with its expression; sink and Connect metrics, and {@link #RUNTIME_ONLY} ones, are left to other checks.
     */
    static List<String> unknownEnforcerOrWorkerMetrics(List<String> expressions) {
        Map<String, Set<String>> exported = exported();
        List<String> unknown = new ArrayList<>();
        for (String expr : expressions) {
            for (String name : metricNames(expr)) {
                if (isSinkMetric(name) || RUNTIME_ONLY.matcher(name).matches()) {
                    continue;
                }
                if (!exported.containsKey(name)) {
                    unknown.add(name + " in " + expr);
                    continue;
                }
                for (String label : labels(expr, name)) {
                    if (!TARGET_LABELS.contains(label) && !exported.get(name).contains(label)) {
                        unknown.add("label " + label + " of " + name + " in " + expr);
                    }
                }
            }
        }
        return unknown;
    }

    /** The sink and Connect metric names in {@code expressions} (with the labels used) that no JMX exporter rule produces. */
    static List<String> unknownSinkMetrics(List<String> expressions) {
        Path rulesFile = DIR.resolve(ComposeStackTest.JMX_EXPORTER_CONFIG);
        Map<Pattern, Set<String>> rules = new HashMap<>();
        for (JsonNode rule : StackFiles.read(StackFiles.YAML, rulesFile).path("rules")) {
            if (!rule.hasNonNull("name")) {
                continue;
            }
            String name = rule.path("name").asText();
            String base = name.endsWith("_total") ? name.substring(0, name.length() - "_total".length()) : name;
            Set<String> labels = new HashSet<>();
            rule.path("labels").fieldNames().forEachRemaining(labels::add);
            rules.put(Pattern.compile(templated(base) + "(_total)?"), labels);
        }
        assertThat(rules).as("rules with a name in " + rulesFile).isNotEmpty();
        List<String> unknown = new ArrayList<>();
        for (String expr : expressions) {
            for (String name : metricNames(expr)) {
                if (!isSinkMetric(name)) {
                    continue;
                }
                Set<String> labels = new HashSet<>(labels(expr, name));
                labels.removeAll(TARGET_LABELS);
                if (rules.entrySet().stream()
                        .noneMatch(r -> r.getKey().matcher(name).matches() && r.getValue().containsAll(labels))) {
                    unknown.add(name + " with labels " + labels + " in " + expr);
                }
            }
        }
        return unknown;
    }

    @Test
    void theMetricNameExtractionFindsNamesAndSkipsFunctionsAndLabels() {
        assertThat(metricNames(
                "sum by (reason) (rate(fence_enforcer_records_fenced_total{stage=\"enforcer\",reason=~\"STALE.*\"}[1m]))"
                        + " / ignoring(x) up"))
                .containsExactlyInAnyOrder("fence_enforcer_records_fenced_total", "up");
        assertThat(labels("sum by (reason, task) (rate(a_total{stage=\"enforcer\"}[5m])) + b", "a_total"))
                .containsExactlyInAnyOrder("reason", "task", "stage");
    }

    // ---- the dashboard

    private List<JsonNode> panels() {
        List<JsonNode> panels = new ArrayList<>();
        for (JsonNode panel : dashboard.path("panels")) {
            if (panel.path("type").asText().equals("row")) {
                panel.path("panels").forEach(panels::add);
            } else {
                panels.add(panel);
            }
        }
        return panels;
    }

    List<String> expressions() {
        List<String> expressions = new ArrayList<>();
        panels().forEach(p -> p.path("targets").forEach(t -> expressions.add(t.path("expr").asText())));
        return expressions;
    }

    private Set<String> metricNames() {
        Set<String> names = new TreeSet<>();
        expressions().forEach(e -> names.addAll(metricNames(e)));
        return names;
    }

    // ---- PromQL, as far as the dashboard needs it

    /** Metric names in an expression: words that are not functions, keywords, label names or strings. */
    static Set<String> metricNames(String expr) {
        String stripped = expr.replaceAll("\"(\\\\.|[^\"\\\\])*\"", "\"\"") // strings
                .replaceAll("\\{[^}]*}", "") // label matchers
                .replaceAll("\\[[^]]*]", "") // ranges
                .replaceAll("\\b(by|without|on|ignoring|group_left|group_right)\\s*\\([^)]*\\)", " "); // label lists
        Set<String> names = new LinkedHashSet<>();
        Matcher word = WORD.matcher(stripped);
        while (word.find()) {
            String rest = stripped.substring(word.end()).stripLeading();
            if (!rest.startsWith("(") && !PROMQL_WORDS.contains(word.group())) {
                names.add(word.group());
            }
        }
        return names;
    }

    /** Labels an expression uses on a metric: in the metric's matchers, and in by(...) of the expression. */
    static Set<String> labels(String expr, String metric) {
        Set<String> labels = new LinkedHashSet<>();
        Matcher selector = Pattern.compile("\\b" + Pattern.quote(metric) + "\\s*\\{([^}]*)}").matcher(expr);
        while (selector.find()) {
            Matcher label = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)\\s*(=~|!~|!=|=)").matcher(selector.group(1));
            while (label.find()) {
                labels.add(label.group(1));
            }
        }
        Matcher by = Pattern.compile("\\bby\\s*\\(([^)]*)\\)").matcher(expr);
        while (by.find()) {
            for (String label : by.group(1).split(",")) {
                if (!label.isBlank()) {
                    labels.add(label.strip());
                }
            }
        }
        return labels;
    }

    static boolean isSinkMetric(String name) {
        return name.startsWith("fence_sink_") || name.startsWith("kafka_connect_");
    }

    /** A JMX exporter rule name with $1, ${2} etc. as a regular expression. */
    private static String templated(String name) {
        StringBuilder regex = new StringBuilder();
        Matcher group = Pattern.compile("\\$\\{?\\d+}?").matcher(name);
        int last = 0;
        while (group.find()) {
            regex.append(Pattern.quote(name.substring(last, group.start()))).append("[a-zA-Z0-9_:]+");
            last = group.end();
        }
        return regex.append(Pattern.quote(name.substring(last))).toString();
    }

    // ---- what the project exports

    /** Every metric the enforcer's and producer-lib's meter classes export without a running Kafka, with its labels. */
    static Map<String, Set<String>> exported() {
        Map<String, Set<String>> exported = new HashMap<>();
        exported.putAll(scrape(enforcerRegistry().scrape()));
        exported.putAll(scrape(producerRegistry().scrape()));
        return exported;
    }

    static PrometheusMeterRegistry enforcerRegistry() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        // What FenceEnforcerApp binds beside the topology: the JVM and process meters and the Streams progress gauges.
        FenceEnforcerApp.bindProcessMetrics(registry).close();
        new StreamsProgress(registry);
        // The topology registers the enforcer's meters; the verifier registers its own when built and
        // connects to etcd only when asked (never here).
        FenceEnforcerTopology.build(
                FenceEnforcerTopology.Settings.of("in", "accepted", "rejected", FenceEnforcerTopology.Limits.unbounded(1)),
                registry);
        FenceEnforcerConfig config = new FenceEnforcerConfig(Map.of(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1",
                StreamsConfig.APPLICATION_ID_CONFIG, "dashboard"));
        try (TokenVerifier verifier = TokenVerifier.etcd(EtcdSettings.builder(List.of("http://127.0.0.1:1")).build(), config,
                registry)) {
            return registry;
        }
    }

    static PrometheusMeterRegistry producerRegistry() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        ProducerMeters.registerAll(registry);
        return registry;
    }

    /** Sample names of a Prometheus text scrape, each with its label names. */
    static Map<String, Set<String>> scrape(String text) {
        Map<String, Set<String>> samples = new HashMap<>();
        Pattern line = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{([^}]*)})?\\s");
        Pattern label = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"");
        for (String sample : text.split("\n")) {
            Matcher m = line.matcher(sample);
            if (sample.startsWith("#") || !m.find()) {
                continue;
            }
            Set<String> labels = samples.computeIfAbsent(m.group(1), k -> new HashSet<>());
            if (m.group(3) != null) {
                Matcher l = label.matcher(m.group(3));
                while (l.find()) {
                    labels.add(l.group(1));
                }
            }
        }
        return samples;
    }
}
