package dev.fencedwrites.contract;

/**
 * The fence headers of one record as one pass over its headers finds them: for each of {@code fence.token},
 * {@code fence.seq}, {@code fence.op}, {@code fence.lease} and {@code fence.writer}, how many the record carries and the value
 * of the last, undecoded. {@link FenceStamp#parse} reads it; a {@link HeaderLookup} fills it.
 */
public final class FenceHeaderValues {
    int tokens;
    byte[] token;
    int seqs;
    byte[] seq;
    int ops;
    byte[] op;
    byte[] lease;
    byte[] writer;

    /** Counts one header of the record, in record order; a header of any other name is ignored. */
    public void add(String name, byte[] value) {
        switch (name) {
            case FenceHeaders.TOKEN -> {
                tokens++;
                token = value;
            }
            case FenceHeaders.SEQ -> {
                seqs++;
                seq = value;
            }
            case FenceHeaders.OP -> {
                ops++;
                op = value;
            }
            case FenceHeaders.LEASE -> lease = value;
            case FenceHeaders.WRITER -> writer = value;
            default -> {
                // not a fence header
            }
        }
    }
}
