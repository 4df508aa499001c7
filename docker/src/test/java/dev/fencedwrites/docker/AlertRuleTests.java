package dev.fencedwrites.docker;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Builds a {@code promtool test rules} file (Prometheus' rule unit tests) from real scrapes: each scraped series becomes an
 * input series of the target that exported it, sampled every 15 s, and each alert of {@code alerts.yml} is expected to
 * fire with exactly the labels given (and its annotations rendered from them), or not at all.
 */
final class AlertRuleTests {
    /** The evaluation time of every case: a few samples after the change, well inside every rule's 5 m window. */
    static final String EVAL_TIME = "2m";
    private static final Pattern LABEL_REF = Pattern.compile("\\{\\{\\s*\\$labels\\.([a-zA-Z_]+)\\s*}}");

    /** A scraped target as Prometheus would label it, with its scrape before and after the events. */
    record Target(String job, String instance, Scrape before, Scrape after) {
    }

    private final List<Map<String, Object>> cases = new ArrayList<>();
    private final Map<String, JsonNode> rules = new LinkedHashMap<>();

    AlertRuleTests() {
        StackFiles.read(StackFiles.YAML, AlertRulesTest.RULES).path("groups")
                .forEach(group -> group.path("rules").forEach(rule -> rules.put(rule.path("alert").asText(), rule)));
    }

    /** The metric names the rules use. */
    Set<String> metricNames() {
        Set<String> names = new TreeSet<>();
        rules.values().forEach(rule -> names.addAll(DashboardTest.metricNames(rule.path("expr").asText())));
        return names;
    }

    /**
     * A case where every series holds its value from the {@code before} scrape (series missing there are absent) and no
     * alert may fire.
     */
    void quietCase(String name, List<Target> targets) {
        List<Map<String, String>> series = new ArrayList<>();
        for (Target target : targets) {
            target.before().series().forEach((key, value) -> {
                if (metricNames().contains(Scrape.nameOf(key))) {
                    series.add(Map.of("series", labelled(key, target), "values", number(value) + "+0x20"));
                }
            });
        }
        Map<String, List<Map<String, String>>> none = new LinkedHashMap<>();
        rules.keySet().forEach(alert -> none.put(alert, List.of()));
        addCase(name, series, none);
    }

    /**
     * A case where each series holds its {@code before} value at 0 s (absent if it was not scraped then) and its
     * {@code after} value from 15 s on; {@code expected} gives, per alert, the labels of each alert expected to fire (the
     * rule's own labels are added), and an alert it does not name must not fire.
     */
    void changeCase(String name, List<Target> targets, Map<String, List<Map<String, String>>> expected) {
        List<Map<String, String>> series = new ArrayList<>();
        for (Target target : targets) {
            target.after().series().forEach((key, value) -> {
                if (metricNames().contains(Scrape.nameOf(key))) {
                    Double before = target.before().series().get(key);
                    String first = before == null ? "_" : number(before);
                    series.add(Map.of("series", labelled(key, target), "values", first + " " + number(value) + "+0x20"));
                }
            });
        }
        Map<String, List<Map<String, String>>> all = new LinkedHashMap<>();
        rules.keySet().forEach(alert -> all.put(alert, expected.getOrDefault(alert, List.of())));
        addCase(name, series, all);
    }

    private void addCase(String name, List<Map<String, String>> series, Map<String, List<Map<String, String>>> expected) {
        List<Map<String, Object>> tests = new ArrayList<>();
        expected.forEach((alert, firing) -> {
            List<Map<String, Object>> alerts = new ArrayList<>();
            for (Map<String, String> labels : firing) {
                Map<String, String> all = new LinkedHashMap<>(labels);
                rules.get(alert).path("labels").properties().forEach(l -> all.put(l.getKey(), l.getValue().asText()));
                Map<String, String> annotations = new LinkedHashMap<>();
                rules.get(alert).path("annotations").properties()
                        .forEach(a -> annotations.put(a.getKey(), render(a.getValue().asText(), all)));
                alerts.add(Map.of("exp_labels", all, "exp_annotations", annotations));
            }
            tests.add(Map.of("eval_time", EVAL_TIME, "alertname", alert, "exp_alerts", alerts));
        });
        Map<String, Object> testCase = new LinkedHashMap<>();
        testCase.put("name", name);
        testCase.put("interval", "15s");
        testCase.put("input_series", series);
        testCase.put("alert_rule_test", tests);
        cases.add(testCase);
    }

    /** The test file's content, for the rules at {@code rulesFile}. */
    String render(String rulesFile) throws Exception {
        Map<String, Object> file = new LinkedHashMap<>();
        file.put("rule_files", List.of(rulesFile));
        file.put("evaluation_interval", "15s");
        file.put("tests", cases);
        return StackFiles.YAML.writeValueAsString(file);
    }

    private static String render(String template, Map<String, String> labels) {
        Matcher ref = LABEL_REF.matcher(template);
        StringBuilder out = new StringBuilder();
        while (ref.find()) {
            ref.appendReplacement(out, Matcher.quoteReplacement(labels.getOrDefault(ref.group(1), "")));
        }
        return ref.appendTail(out).toString();
    }

    private static String labelled(String series, Target target) {
        String targetLabels = "job=\"" + target.job() + "\",instance=\"" + target.instance() + "\"";
        int brace = series.indexOf('{');
        if (brace < 0) {
            return series + "{" + targetLabels + "}";
        }
        String labels = series.substring(brace + 1, series.length() - 1);
        return series.substring(0, brace) + "{" + labels + (labels.isEmpty() ? "" : ",") + targetLabels + "}";
    }

    private static String number(double value) {
        return BigDecimal.valueOf(value).toPlainString();
    }
}
