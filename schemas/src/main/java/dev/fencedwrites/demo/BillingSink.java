package dev.fencedwrites.demo;

/**
 * Where the demo's {@link BillingSummary} records land: the fenced sink connector's name and its table. Here, beside the
 * record, because the local stack that creates them and the operator commands that default to them ({@code fence
 * inspect --table}, {@code fence verify --table --connector}) share no other module.
 */
public final class BillingSink {
    /** The table the fenced sink writes {@link BillingSummary} rows to. */
    public static final String TABLE = "billing_summary";
    /** The fenced sink connector's name; its consumer group is {@code connect-} and this name. */
    public static final String CONNECTOR = "billing-summary-sink";

    private BillingSink() {
    }
}
