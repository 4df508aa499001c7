package dev.fencedwrites.docker;

import static dev.fencedwrites.docker.StackFiles.DIR;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fencedwrites.services.Tools;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Checks the Prometheus alerting rules the project ships: Prometheus loads them where compose mounts them,
 * promtool accepts them, they cover the stalls, rejected writes and lease losses the issue names, and every metric and
 * label they use is one the project exports. {@link OperationsIT} fires them against real metrics.
 */
@Tag("process")
class AlertRulesTest {
    static final Path RULES = DIR.resolve("prometheus/alerts.yml");

    @Test
    void prometheusLoadsTheRulesFromWhereComposeMountsThem() {
        String mounted = StackFiles
                .mountTarget(StackFiles.compose().path("services").path("prometheus"), "./prometheus/alerts.yml")
                .orElseThrow();
        List<String> ruleFiles = new ArrayList<>();
        StackFiles.yaml("prometheus/prometheus.yml").path("rule_files").forEach(f -> ruleFiles.add(f.asText()));
        assertThat(ruleFiles).containsExactly(mounted);
    }

    @Test
    void promtoolCheckRulesAcceptsThem() throws Exception {
        Result check = promtool("check", "rules", RULES.toString());
        assertThat(check.exitCode()).as(check.output()).isZero();
        assertThat(check.output()).contains("SUCCESS: " + alerts().size() + " rules found");
    }

    @Test
    void theRulesCoverStallsNearTheLeaseTtlRejectedWritesAndLostLeases() {
        Map<String, String> alerts = alerts();
        assertThat(alerts.get("FenceWorkerStallNearLeaseTtl"))
                .contains("fence_pause_largest_recent_seconds / fence_pause_lease_ttl_seconds").endsWith("> 0.5");
        assertThat(alerts.get("FenceWritesRejected"))
                .contains("rate(fence_enforcer_records_fenced_total{reason!~\"STALE_TOKEN|DUPLICATE\"}[").endsWith("> 0");
        assertThat(alerts.get("FenceStaleWritesStopped"))
                .contains("increase(fence_enforcer_records_fenced_total{reason=\"STALE_TOKEN\"}[").endsWith("> 0");
        assertThat(alerts.get("FenceSinkRefusedWrites")).contains("rate(fence_sink_records_fenced_total[").endsWith("> 0");
        assertThat(alerts.get("FenceLeaseLost")).contains("fence_lease_lost_total{cause!=\"closed\"}").endsWith("> 0");
    }

    @Test
    void everyMetricAndLabelTheRulesUseIsOneTheProjectExports() {
        List<String> expressions = List.copyOf(alerts().values());
        assertThat(DashboardTest.unknownEnforcerOrWorkerMetrics(expressions)).isEmpty();
        assertThat(DashboardTest.unknownSinkMetrics(expressions)).isEmpty();
    }

    /** Alert name to expression, in file order. */
    static Map<String, String> alerts() {
        List<JsonNode> rules = new ArrayList<>();
        StackFiles.read(StackFiles.YAML, RULES).path("groups")
                .forEach(group -> group.path("rules").forEach(rules::add));
        assertThat(rules).allSatisfy(rule -> assertThat(rule.hasNonNull("alert")).as(rule.toString()).isTrue());
        return rules.stream().collect(Collectors.toMap(r -> r.path("alert").asText(), r -> r.path("expr").asText().strip(),
                (a, b) -> {
                    throw new IllegalStateException("two alerts with one name");
                }, LinkedHashMap::new));
    }

    record Result(int exitCode, String output) {
    }

    /**
     * Runs Debian's promtool (package prometheus, which dev/setup test installs) and returns its exit code and output.
     *
     * @throws dev.fencedwrites.services.MissingToolException when promtool is not installed
     */
    static Result promtool(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(Tools.require("promtool", "apt-get install -y prometheus").toString()));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("promtool finished").isTrue();
        return new Result(process.exitValue(), output);
    }
}
