package dev.fencedwrites.enforcer;

import dev.fencedwrites.contract.RejectionReason;
import java.util.HashMap;
import java.util.Map;

/**
 * A plain reference model of the decision rule (docs/concepts/decision-rule.md), written independently of
 * {@code FenceRule} so the property test compares two implementations, not one with itself.
 */
final class ReferenceModel {
    /** What happens to one input record. */
    enum Kind {
        ACCEPTED, MARKER_ACCEPTED, REJECTED
    }

    record Outcome(Kind kind, RejectionReason reason) {
        static Outcome accepted() {
            return new Outcome(Kind.ACCEPTED, null);
        }

        static Outcome rejected(RejectionReason reason) {
            return new Outcome(Kind.REJECTED, reason);
        }
    }

    private record Stored(long token, Long seq) {
    }

    private final Map<String, Stored> fences = new HashMap<>();

    /** The key's fence as {@code token} or {@code token.seq}, or null when it has none. */
    String fence(String key) {
        Stored stored = fences.get(key);
        return stored == null ? null : stored.seq == null ? Long.toString(stored.token) : stored.token + "." + stored.seq;
    }

    /**
     * @param invalid the reason the generator made this record invalid (bad key or headers), or null
     * @param seq     null when the record has no {@code fence.seq}
     */
    Outcome apply(String key, RejectionReason invalid, long token, Long seq, boolean marker, boolean hasValue) {
        if (invalid != null) {
            return Outcome.rejected(invalid);
        }
        Stored stored = fences.get(key);
        if (stored != null) {
            if (token < stored.token) {
                return Outcome.rejected(RejectionReason.STALE_TOKEN);
            }
            if (token == stored.token && seq != null && stored.seq != null && seq <= stored.seq) {
                return Outcome.rejected(seq.equals(stored.seq) ? RejectionReason.DUPLICATE : RejectionReason.OUT_OF_ORDER);
            }
        }
        if (marker && hasValue) {
            return Outcome.rejected(RejectionReason.INVALID_MARKER);
        }
        boolean keepSeq = stored != null && stored.token == token && seq == null;
        fences.put(key, new Stored(token, keepSeq ? stored.seq : seq));
        return marker ? new Outcome(Kind.MARKER_ACCEPTED, null) : Outcome.accepted();
    }
}
