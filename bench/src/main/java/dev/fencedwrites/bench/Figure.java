package dev.fencedwrites.bench;

/**
 * One line of the results table: a measured figure beside its unfenced baseline.
 *
 * @param measure  what was measured and how, e.g. {@code token acquisition p50 (ms)}
 * @param fenced   the figure with fencing
 * @param baseline the same figure without fencing
 * @param unit     the figures' unit, e.g. {@code ms} or {@code rows/s}
 * @param goal     the goal for {@code fenced / baseline}, e.g. {@code <= 3}, or empty when there is none
 * @param higherIsBetter whether a larger figure is better (throughput) or worse (latency)
 */
public record Figure(String measure, double fenced, double baseline, String unit, String goal, boolean higherIsBetter) {
    /** {@code fenced / baseline}. */
    public double ratio() {
        return fenced / baseline;
    }

    /**
     * Whether the ratio, rounded to two decimals as printed, meets the goal; {@code null} when there is none, or no
     * baseline. Goals are {@code >= x} or {@code <= x}.
     */
    public Boolean met() {
        if (goal.isEmpty() || Double.isNaN(baseline)) {
            return null;
        }
        double limit = Double.parseDouble(goal.substring(2).trim());
        double shown = Math.round(ratio() * 100) / 100.0; // as the table prints it: 0.948 meets >= 0.95
        return goal.startsWith(">=") ? shown >= limit : shown <= limit;
    }
}
