package dev.fencedwrites.demo;

/**
 * What the billing scenario observed.
 *
 * @param tokenA          worker A's fencing token
 * @param tokenB          worker B's fencing token
 * @param rejectedReason  {@code fence.rejected.reason} of A's record on the rejected topic, or null if not found
 * @param rejectedStage   {@code fence.rejected.stage} of that record
 * @param rejectedHighest {@code fence.rejected.highest} of that record
 * @param fencedRow       the {@code billing_summary} row after the run
 * @param unfencedRow     the {@code billing_summary_unfenced} row (guard off, enforcer bypassed), or null
 * @param staleCounter    the enforcer's {@code fence_enforcer_records_fenced_total{reason="STALE_TOKEN"}}
 */
public record ScenarioResult(long tokenA, long tokenB, String rejectedReason, String rejectedStage, String rejectedHighest,
        SummaryRow fencedRow, SummaryRow unfencedRow, double staleCounter) {
    /** The outcome the demo promises: A's stale write rejected with STALE_TOKEN and B's data in the row. */
    public boolean fenced() {
        return tokenB > tokenA && "STALE_TOKEN".equals(rejectedReason) && fencedRow != null
                && BillingScenario.WORKER_B.equals(fencedRow.computedBy()) && fencedRow.fenceToken() == tokenB;
    }
}
