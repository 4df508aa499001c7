package dev.fencedwrites.contract;

import java.util.List;
import java.util.Locale;

/**
 * The fencing headers of one record, parsed and validated.
 *
 * @param fence  the record's token and seq
 * @param op     {@link FenceOp#WRITE} unless the record says {@code FENCE}
 * @param lease  the etcd lease id text, or {@code null}
 * @param writer the writer identity, or {@code null}
 */
public record FenceStamp(Fence fence, FenceOp op, String lease, String writer) {

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
     *     (the token equals the decimal {@code fence.lease}: issue 13), {@code MALFORMED_SEQ} or
     *     {@code UNKNOWN_OP}
     */
    public static Parsed parse(HeaderLookup headers) {
        List<byte[]> tokens = headers.values(FenceHeaders.TOKEN);
        if (tokens.isEmpty()) {
            return Parsed.invalid(RejectionReason.MISSING_TOKEN, "no " + FenceHeaders.TOKEN + " header");
        }
        if (tokens.size() > 1) {
            return Parsed.invalid(RejectionReason.MALFORMED_TOKEN,
                    tokens.size() + " " + FenceHeaders.TOKEN + " headers, expected one");
        }
        String tokenText = FenceHeaders.decode(tokens.get(0));
        long token = parseDecimal(tokenText);
        if (token <= 0) {
            return Parsed.invalid(RejectionReason.MALFORMED_TOKEN,
                    FenceHeaders.TOKEN + " '" + tokenText + "' is not a positive long");
        }
        String lease = last(headers, FenceHeaders.LEASE);
        if (parseDecimal(lease) == token) {
            // The classic mistake: the etcd lease id sent as the token. Lease ids are large
            // (near 2^62), so accepting one would raise the key's fence past every real revision.
            return Parsed.invalid(RejectionReason.LEASE_AS_TOKEN,
                    FenceHeaders.TOKEN + " " + token + " equals " + FenceHeaders.LEASE
                            + ": that is the etcd lease id; send the revision at which the lock was found held");
        }

        long seq = Fence.NO_SEQ;
        List<byte[]> seqs = headers.values(FenceHeaders.SEQ);
        if (seqs.size() > 1) {
            return Parsed.invalid(RejectionReason.MALFORMED_SEQ,
                    seqs.size() + " " + FenceHeaders.SEQ + " headers, expected at most one");
        }
        if (seqs.size() == 1) {
            String seqText = FenceHeaders.decode(seqs.get(0));
            seq = parseDecimal(seqText);
            if (seq < 0) {
                return Parsed.invalid(RejectionReason.MALFORMED_SEQ,
                        FenceHeaders.SEQ + " '" + seqText + "' is not a non-negative long");
            }
        }

        FenceOp op = FenceOp.WRITE;
        List<byte[]> ops = headers.values(FenceHeaders.OP);
        if (ops.size() > 1) {
            return Parsed.invalid(RejectionReason.UNKNOWN_OP,
                    ops.size() + " " + FenceHeaders.OP + " headers, expected at most one");
        }
        if (ops.size() == 1) {
            String opText = FenceHeaders.decode(ops.get(0));
            try {
                op = FenceOp.valueOf(String.valueOf(opText).toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                return Parsed.invalid(RejectionReason.UNKNOWN_OP, FenceHeaders.OP + " '" + opText + "' is not WRITE or FENCE");
            }
        }
        return Parsed.ok(new FenceStamp(new Fence(token, seq), op, lease, last(headers, FenceHeaders.WRITER)));
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

    private static String last(HeaderLookup headers, String name) {
        List<byte[]> values = headers.values(name);
        return values.isEmpty() ? null : FenceHeaders.decode(values.get(values.size() - 1));
    }
}
