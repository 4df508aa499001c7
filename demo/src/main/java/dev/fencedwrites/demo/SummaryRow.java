package dev.fencedwrites.demo;

/**
 * One row of a billing summary table as the demo reads it.
 *
 * @param amountMinor amount in cents
 * @param fenceToken  the row's fence column
 */
public record SummaryRow(String computedBy, long amountMinor, int lineItems, long fenceToken, Long fenceSeq) {
    @Override
    public String toString() {
        return String.format("computed_by=%s amount=%d.%02d EUR line_items=%d fence_token=%d fence_seq=%s",
                computedBy, amountMinor / 100, amountMinor % 100, lineItems, fenceToken, fenceSeq);
    }
}
