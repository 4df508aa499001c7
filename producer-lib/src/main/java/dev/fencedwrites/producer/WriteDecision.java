package dev.fencedwrites.producer;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceOp;
import dev.fencedwrites.contract.RejectionReason;
import java.time.Instant;

/**
 * The enforcer's (or the sink's) decision on one of this writer's records, as {@link WriteDecisions} read it from the
 * accepted or the rejected topic.
 *
 * @param outcome   accepted (on the accepted topic) or rejected (on the rejected topic)
 * @param resource  the record key: the resource the write was for
 * @param fence     the record's own {@code fence.token} and {@code fence.seq}
 * @param leaseId   the record's {@code fence.lease}, or -1 when it had none
 * @param op        the record's {@code fence.op} ({@code WRITE}, or a {@code FENCE} marker that lost)
 * @param reason    why it was rejected; {@code null} when accepted, or when the reason is one this version does not know
 * @param stage     who rejected it, {@code enforcer} or {@code sink}; {@code null} when accepted
 * @param highest   the key's fence that refused it ({@code fence.rejected.highest}); {@code null} when accepted or none
 * @param topic     the topic the decision was read from
 * @param partition its partition
 * @param offset    its offset
 * @param timestamp the decision record's timestamp (Kafka Streams keeps the input record's: when the write was produced)
 */
public record WriteDecision(Outcome outcome, String resource, Fence fence, long leaseId, FenceOp op, RejectionReason reason,
        String stage, Fence highest, String topic, int partition, long offset, Instant timestamp) {

    /** Where a write ended. */
    public enum Outcome {
        /** On the accepted topic: the write is the key's latest. */
        ACCEPTED,
        /** On the rejected topic, with a reason. */
        REJECTED
    }

    /** Whether the write reached the accepted topic. */
    public boolean accepted() {
        return outcome == Outcome.ACCEPTED;
    }

    /**
     * Whether the write was refused because a newer holder's token owns the key ({@code STALE_TOKEN}): this writer was
     * superseded and should stop working on the resource, as a Kafka producer does on {@code ProducerFencedException}.
     */
    public boolean fenced() {
        return outcome == Outcome.REJECTED && reason == RejectionReason.STALE_TOKEN;
    }

    /**
     * Whether this decision fences the lease the writer holds now: {@link #fenced()}, for a write made under {@code lease}'s
     * token or a later one. A writer that lost a key and took it again gets a higher token; a late decision on a write of
     * its earlier lease is {@link #fenced()} but says nothing about the lease it now holds.
     *
     * @param lease the writer's current lease on {@link #resource()}
     */
    public boolean fences(FencingLease lease) {
        return fenced() && fence.token() >= lease.token();
    }

    @Override
    public String toString() {
        String where = topic + "-" + partition + "@" + offset;
        return accepted()
                ? "accepted " + resource + " token=" + fence + " -> " + where
                : "rejected " + resource + " token=" + fence + " " + reason + " stage=" + stage + " highest=" + highest + " -> "
                        + where;
    }
}
