package dev.fencedwrites.bench;

import java.util.List;

/**
 * One line of the results table: a measured figure beside its unfenced baseline.
 *
 * @param measure  what was measured and how, e.g. {@code token acquisition p50 (ms)}
 * @param fenced   the figure with fencing
 * @param baseline the same figure without fencing
 * @param unit     the figures' unit, e.g. {@code ms} or {@code rows/s}
 * @param goal     the goal for {@code fenced / baseline}, e.g. {@code <= 3}, or empty when there is none
 * @param higherIsBetter whether a larger figure is better (throughput) or worse (latency)
 * @param spread   how far the ratio can be off, as a fraction of it: the two sides' spreads (half the range of their runs,
 *                 each as a fraction of its median) added; {@code NaN} when the figures are single runs
 */
public record Figure(String measure, double fenced, double baseline, String unit, String goal, boolean higherIsBetter,
        double spread) {
    /** A figure without a known spread. */
    public Figure(String measure, double fenced, double baseline, String unit, String goal, boolean higherIsBetter) {
        this(measure, fenced, baseline, unit, goal, higherIsBetter, Double.NaN);
    }

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
        double limit = limit();
        double shown = Math.round(ratio() * 100) / 100.0; // as the table prints it: 0.948 meets >= 0.95
        return goal.startsWith(">=") ? shown >= limit : shown <= limit;
    }

    /**
     * Whether the difference the row claims is smaller than its spread, so that another run could claim the opposite: the
     * ratio's distance to the goal's limit (to 1 when there is no goal) is at most {@code ratio * spread}. False when the
     * spread is unknown.
     */
    public boolean withinSpread() {
        if (Double.isNaN(spread) || Double.isNaN(ratio())) {
            return false;
        }
        double reference = goal.isEmpty() ? 1 : limit();
        return Math.abs(ratio() - reference) <= ratio() * spread;
    }

    /**
     * The spread of {@code runs} as {@link #spread} takes it: half their range as a fraction of their median; {@code NaN} for
     * fewer than two runs.
     */
    public static double halfRange(List<Double> runs) {
        if (runs.size() < 2) {
            return Double.NaN;
        }
        List<Double> sorted = runs.stream().sorted().toList();
        int n = sorted.size();
        double median = n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
        return (sorted.get(n - 1) - sorted.get(0)) / 2 / median;
    }

    private double limit() {
        return Double.parseDouble(goal.substring(2).trim());
    }
}
