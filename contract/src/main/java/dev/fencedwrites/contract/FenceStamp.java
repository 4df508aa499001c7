package dev.fencedwrites.contract;

import java.util.Locale;
import java.util.Objects;

/**
 * The fencing headers of one record, parsed and validated: the record's token and seq ({@link #fence}), its op
 * ({@link FenceOp#WRITE} unless the record says {@code FENCE}), and the etcd lease id text and writer identity, each
 * {@code null} when absent. The lease and the writer are kept as the header's bytes (not copied: a caller that changes
 * the header's value array changes them) and decoded only when asked for (the enforcer reads them only to
 * publish a marker or to log).
 */
public final class FenceStamp {
    private final Fence fence;
    private final FenceOp op;
    private final byte[] lease;
    private final byte[] writer;

    /**
     * @param fence  the record's token and seq
     * @param op     {@link FenceOp#WRITE} unless the record says {@code FENCE}
     * @param lease  the etcd lease id text, or {@code null}
     * @param writer the writer identity, or {@code null}
     */
    public FenceStamp(Fence fence, FenceOp op, String lease, String writer) {
        this(fence, op, lease == null ? null : FenceHeaders.encode(lease), writer == null ? null : FenceHeaders.encode(writer));
    }

    private FenceStamp(Fence fence, FenceOp op, byte[] lease, byte[] writer) {
        this.fence = Objects.requireNonNull(fence, "fence");
        this.op = Objects.requireNonNull(op, "op");
        this.lease = lease;
        this.writer = writer;
    }

    /** The record's token and seq. */
    public Fence fence() {
        return fence;
    }

    /** {@link FenceOp#WRITE} unless the record says {@code FENCE}. */
    public FenceOp op() {
        return op;
    }

    /** The etcd lease id text of the last {@code fence.lease} header, or {@code null}. */
    public String lease() {
        return FenceHeaders.decode(lease);
    }

    /** The writer identity of the last {@code fence.writer} header, or {@code null}. */
    public String writer() {
        return FenceHeaders.decode(writer);
    }

    @Override
    public boolean equals(Object other) {
        // As text, as when the stamp held the decoded strings: two undecodable values that decode alike are equal.
        return other instanceof FenceStamp that && fence.equals(that.fence) && op == that.op
                && Objects.equals(lease(), that.lease()) && Objects.equals(writer(), that.writer());
    }

    @Override
    public int hashCode() {
        return Objects.hash(fence, op, lease(), writer());
    }

    @Override
    public String toString() {
        return "FenceStamp[fence=" + fence + ", op=" + op + ", lease=" + lease() + ", writer=" + writer() + "]";
    }

    /**
     * The result of {@link #parse}: a stamp, or the reason the record cannot be decided.
     *
     * @param stamp     the parsed stamp, or {@code null} when {@code rejection} is set
     * @param rejection why the headers are invalid, or {@code null}
     * @param detail    a human-readable explanation of the rejection, or {@code null}
     */
    public record Parsed(FenceStamp stamp, RejectionReason rejection, String detail) {
        static Parsed ok(FenceStamp stamp) {
            return new Parsed(stamp, null, null);
        }

        static Parsed invalid(RejectionReason reason, String detail) {
            return new Parsed(null, reason, detail);
        }

        /** Whether the headers are valid. */
        public boolean valid() {
            return stamp != null;
        }
    }

    /**
     * Parses the fencing headers of a record (wire contract v1). Never throws on bad input: every
     * problem comes back as a rejection with a reason and a detail message.
     *
     * @param headers the record's headers
     * @return the stamp, or {@code MISSING_TOKEN}, {@code MALFORMED_TOKEN}, {@code LEASE_AS_TOKEN}
     *     (the token equals the decimal {@code fence.lease}), {@code MALFORMED_SEQ} or
     *     {@code UNKNOWN_OP}
     */
    public static Parsed parse(HeaderLookup headers) {
        FenceHeaderValues found = headers.fenceHeaders();
        if (found.tokens == 0) {
            return Parsed.invalid(RejectionReason.MISSING_TOKEN, "no " + FenceHeaders.TOKEN + " header");
        }
        if (found.tokens > 1) {
            return Parsed.invalid(RejectionReason.MALFORMED_TOKEN,
                    found.tokens + " " + FenceHeaders.TOKEN + " headers, expected one");
        }
        long token = parseDecimal(found.token);
        if (token <= 0) {
            return Parsed.invalid(RejectionReason.MALFORMED_TOKEN,
                    FenceHeaders.TOKEN + " '" + FenceHeaders.decode(found.token) + "' is not a positive long");
        }
        if (parseDecimal(found.lease) == token) {
            // The classic mistake: the etcd lease id sent as the token. Lease ids are large
            // (near 2^62), so accepting one would raise the key's fence past every real revision.
            return Parsed.invalid(RejectionReason.LEASE_AS_TOKEN,
                    FenceHeaders.TOKEN + " " + token + " equals " + FenceHeaders.LEASE
                            + ": that is the etcd lease id; send the revision at which the lock was found held");
        }

        long seq = Fence.NO_SEQ;
        if (found.seqs > 1) {
            return Parsed.invalid(RejectionReason.MALFORMED_SEQ,
                    found.seqs + " " + FenceHeaders.SEQ + " headers, expected at most one");
        }
        if (found.seqs == 1) {
            seq = parseDecimal(found.seq);
            if (seq < 0) {
                return Parsed.invalid(RejectionReason.MALFORMED_SEQ,
                        FenceHeaders.SEQ + " '" + FenceHeaders.decode(found.seq) + "' is not a non-negative long");
            }
        }

        FenceOp op = FenceOp.WRITE;
        if (found.ops > 1) {
            return Parsed.invalid(RejectionReason.UNKNOWN_OP,
                    found.ops + " " + FenceHeaders.OP + " headers, expected at most one");
        }
        if (found.ops == 1) {
            String opText = FenceHeaders.decode(found.op);
            try {
                op = FenceOp.valueOf(String.valueOf(opText).toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                return Parsed.invalid(RejectionReason.UNKNOWN_OP, FenceHeaders.OP + " '" + opText + "' is not WRITE or FENCE");
            }
        }
        return Parsed.ok(new FenceStamp(new Fence(token, seq), op, found.lease, found.writer));
    }

    /**
     * Parses a fence header's decimal value the way the wire contract writes it: ASCII digits only
     * (no sign, no other scripts' digits, no spaces).
     *
     * @return the value, or -1 for {@code null}, empty text, anything else, or a value beyond {@code Long.MAX_VALUE}
     */
    public static long parseDecimal(String text) {
        if (text == null || text.isEmpty()) {
            return -1;
        }
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
        }
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /**
     * {@link #parseDecimal(String)} of a header value's bytes, without decoding them: a byte outside {@code '0'..'9'} is not
     * a digit in UTF-8 either.
     *
     * @return the value, or -1 for {@code null}, no bytes, anything but ASCII digits, or a value beyond {@code Long.MAX_VALUE}
     */
    public static long parseDecimal(byte[] value) {
        if (value == null || value.length == 0) {
            return -1;
        }
        long result = 0;
        for (byte b : value) {
            if (b < '0' || b > '9') {
                return -1;
            }
            int digit = b - '0';
            if (result > (Long.MAX_VALUE - digit) / 10) {
                return -1;
            }
            result = result * 10 + digit;
        }
        return result;
    }
}
