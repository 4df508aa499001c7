package dev.fencedwrites.contract;

/**
 * A fence: the highest accepted (token, seq) of one key, or the (token, seq) a record carries.
 *
 * @param token the fencing token, an etcd revision; always positive
 * @param seq   the per-lease write counter, or {@link #NO_SEQ} when the writer sent none
 */
public record Fence(long token, long seq) {
    /** Marks an absent {@code fence.seq}. */
    public static final long NO_SEQ = -1L;

    /**
     * Validates the shape.
     *
     * @throws IllegalArgumentException if the token is not positive or seq is below {@link #NO_SEQ}
     */
    public Fence {
        if (token <= 0) {
            throw new IllegalArgumentException("fencing token must be positive, got " + token);
        }
        if (seq < NO_SEQ) {
            throw new IllegalArgumentException("fence seq must be >= 0 or absent, got " + seq);
        }
    }

    /** A fence without a seq. */
    public static Fence of(long token) {
        return new Fence(token, NO_SEQ);
    }

    /**
     * Parses {@link #toString}'s form, {@code token} or {@code token.seq}, ASCII digits only.
     *
     * @throws IllegalArgumentException naming the text when it is not of that form
     */
    public static Fence parse(String text) {
        if (text == null || !text.matches("[0-9]{1,19}(\\.[0-9]{1,19})?")) {
            throw new IllegalArgumentException("not a fence (token or token.seq): '" + text + "'");
        }
        int dot = text.indexOf('.');
        try {
            return dot < 0
                    ? of(Long.parseLong(text))
                    : new Fence(Long.parseLong(text.substring(0, dot)), Long.parseLong(text.substring(dot + 1)));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a fence (token or token.seq): '" + text + "'", e);
        }
    }

    /** Whether the writer sent a {@code fence.seq}. */
    public boolean hasSeq() {
        return seq != NO_SEQ;
    }

    /** {@code token} or {@code token.seq}: the form of the {@code fence.rejected.highest} header. */
    @Override
    public String toString() {
        return hasSeq() ? token + "." + seq : Long.toString(token);
    }
}
