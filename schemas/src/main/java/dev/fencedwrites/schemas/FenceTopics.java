package dev.fencedwrites.schemas;

/** Default topic names. Users publish to the input topic, consume accepted, and monitor rejected. */
public final class FenceTopics {
    /** Where workers publish fenced writes. */
    public static final String INPUT = "fenced-writes";
    /** Where the enforcer forwards accepted records, byte for byte. */
    public static final String ACCEPTED = "fenced-writes-accepted";
    /** Where rejected records go, unchanged plus the {@code fence.rejected.*} headers (a dead-letter topic). */
    public static final String REJECTED = "fenced-writes-rejected";

    private FenceTopics() {
    }
}
