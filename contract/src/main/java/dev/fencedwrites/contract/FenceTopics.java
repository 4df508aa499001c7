package dev.fencedwrites.contract;

/** Default topic names. Users publish to the input topic, consume accepted, and monitor rejected. */
public final class FenceTopics {
    /** Where workers publish fenced writes. */
    public static final String INPUT = "fenced-writes";
    /** Where the enforcer forwards accepted records, byte for byte. */
    public static final String ACCEPTED = "fenced-writes-accepted";
    /** Where rejected records go, unchanged plus the {@code fence.rejected.*} headers (a dead-letter topic). */
    public static final String REJECTED = "fenced-writes-rejected";
    /**
     * Where the enforcer publishes each winning {@code FENCE} marker, so that the sink raises the
     * row's fence too (the fence at the resource on takeover). Kept apart from the
     * accepted topic, where a marker's null value would read as a delete and a compaction tombstone.
     */
    public static final String MARKERS = "fenced-writes-markers";

    private FenceTopics() {
    }
}
