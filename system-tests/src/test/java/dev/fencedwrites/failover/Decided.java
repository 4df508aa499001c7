package dev.fencedwrites.failover;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.RejectionReason;

/**
 * The records the failover checks look at: what reached the input topic and what the enforcer wrote about each.
 */
final class Decided {
    private Decided() {
    }

    /**
     * One record of the input topic.
     *
     * @param writeId the write id in its value ({@code amountMinor}); -1 for a FENCE marker
     */
    record Input(int partition, long offset, String key, Fence fence, boolean marker, long writeId) {
        Ref ref() {
            return new Ref(partition, offset);
        }
    }

    /** Where an input record is: partition and offset of the input topic. */
    record Ref(int partition, long offset) {
    }

    /** What the enforcer did with an input record. */
    enum Kind {
        /** Forwarded to the accepted topic; found by the write id in its value. */
        ACCEPTED,
        /** A rejected copy of stage {@code enforcer}; found by its {@code fence.source.*} headers. */
        REJECTED,
        /** A winning FENCE marker published to the markers topic; found by its {@code fence.source.*} headers. */
        MARKER
    }

    /**
     * One record of an output topic.
     *
     * @param partition the output record's own partition
     * @param offset    the output record's own offset
     * @param source    the input record it names ({@code fence.source.*}); null on the accepted topic
     * @param writeId   the write id in its value; -1 when it has none (markers, rejected markers)
     * @param reason    the rejection reason; null unless {@link Kind#REJECTED}
     */
    record Output(Kind kind, int partition, long offset, String key, Fence fence, Ref source, long writeId,
            RejectionReason reason) {
    }

    /** Whether {@code a} is above {@code b} in the rule's order: a higher token, or the same token and a higher seq. */
    static boolean above(Fence a, Fence b) {
        return a.token() > b.token() || a.token() == b.token() && a.seq() > b.seq();
    }
}
