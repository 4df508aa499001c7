package dev.fencedwrites.docker;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One Prometheus text scrape as series (name and labels, exactly as written) to value, for tests that compare scrapes
 * and turn them into promtool input series.
 */
record Scrape(Map<String, Double> series) {
    private static final Pattern SAMPLE = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{[^}]*})?\\s+(\\S+)");

    static Scrape parse(String text) {
        Map<String, Double> series = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            Matcher sample = SAMPLE.matcher(line);
            if (line.startsWith("#") || !sample.find()) {
                continue;
            }
            double value = Double.parseDouble(sample.group(3));
            if (Double.isFinite(value)) {
                series.put(sample.group(1) + (sample.group(2) == null ? "" : sample.group(2)), value);
            }
        }
        return new Scrape(series);
    }

    /** The sum of the series named {@code name} whose labels contain every {@code label="value"} in {@code matchers}. */
    double sum(String name, String... matchers) {
        return series.entrySet().stream().filter(e -> nameOf(e.getKey()).equals(name)).filter(e -> {
            for (String matcher : matchers) {
                if (!e.getKey().contains(matcher)) {
                    return false;
                }
            }
            return true;
        }).mapToDouble(Map.Entry::getValue).sum();
    }

    static String nameOf(String series) {
        int brace = series.indexOf('{');
        return brace < 0 ? series : series.substring(0, brace);
    }
}
