package dev.fencedwrites.contract;

/**
 * The outcome of {@link FenceRule#decide}: accept, or reject with a reason.
 *
 * @param reason {@code null} when accepted
 */
public record Decision(RejectionReason reason) {
    private static final Decision ACCEPT = new Decision(null);

    /** The accepting decision. */
    public static Decision accept() {
        return ACCEPT;
    }

    /** A rejecting decision. */
    public static Decision reject(RejectionReason reason) {
        if (reason == null) {
            throw new IllegalArgumentException("a rejection needs a reason");
        }
        return new Decision(reason);
    }

    /** Whether the record is accepted and its fence becomes the key's fence. */
    public boolean accepted() {
        return reason == null;
    }
}
