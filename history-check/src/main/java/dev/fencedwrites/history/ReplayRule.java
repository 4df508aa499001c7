package dev.fencedwrites.history;

import dev.fencedwrites.contract.Decision;
import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceOp;
import dev.fencedwrites.contract.FenceRule;
import dev.fencedwrites.contract.FenceStamp;
import dev.fencedwrites.contract.HeaderLookup;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.contract.ResourceId;
import java.util.EnumSet;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.utils.Utils;

/**
 * The enforcer's decision for one input record, replayed from the record and its key's fence: the checks in the enforcer's
 * order (no key, a rejected copy sent back, the fencing headers, the partition's expiry floor, the decision rule
 * {@link FenceRule}, a marker with a value),
 * then the ones the input alone cannot decide, taken from the enforcer's own rejection ({@link #DEFERRED}).
 */
final class ReplayRule {
    /**
     * Reasons only the enforcer knows when to give: the topics' size limits, a failed produce and token verification against
     * etcd. The replay accepts such a rejection where the rule would accept the record, and nowhere else.
     */
    static final Set<RejectionReason> DEFERRED = EnumSet.of(RejectionReason.TOO_LARGE, RejectionReason.KEY_TOO_LARGE,
            RejectionReason.PRODUCE_FAILED, RejectionReason.FUTURE_TOKEN, RejectionReason.LOCK_NOT_HELD,
            RejectionReason.MISSING_LEASE, RejectionReason.MALFORMED_LEASE, RejectionReason.UNVERIFIABLE_TOKEN);

    private ReplayRule() {
    }

    /** What happens to a record: forwarded, absorbed as a winning marker, or rejected. */
    enum Kind {
        ACCEPTED, MARKER, REJECTED
    }

    /**
     * A replayed decision.
     *
     * @param reason the rejection reason, or {@code null}
     * @param fence  the record's own fence, or {@code null} when its headers have none
     * @param before the key's fence the record met, or {@code null}
     * @param after  the key's fence after the record
     */
    record Expected(Kind kind, RejectionReason reason, Fence fence, Fence before, Fence after) {
        /** {@code ACCEPTED}, {@code MARKER} or the reason: the word a decision fingerprint is made of. */
        String label() {
            return reason != null ? reason.name() : kind.name();
        }
    }

    /**
     * @param stored   the key's fence before the record, or {@code null}
     * @param deferred the enforcer's rejection of this record when its reason is one of {@link #DEFERRED}, else {@code null}
     * @param floor    the expiry floor of the record's partition ({@link ExpiryFloors}), 0 for none: a token below it on a
     *                 key whose fence is below it too is {@code STALE_TOKEN}, before the rule
     */
    static Expected expect(ConsumerRecord<byte[], byte[]> record, Fence stored, RejectionReason deferred, long floor) {
        if (record.key() == null || record.key().length == 0) {
            return rejected(RejectionReason.MISSING_KEY, null, stored);
        }
        if (rejectedBefore(record)) {
            return rejected(RejectionReason.ALREADY_REJECTED, null, stored);
        }
        if (!ResourceId.isUtf8(record.key())) {
            return rejected(RejectionReason.MALFORMED_KEY, null, stored);
        }
        FenceStamp.Parsed parsed = FenceStamp.parse(HeaderLookup.of(record.headers()));
        if (!parsed.valid()) {
            return rejected(parsed.rejection(), null, stored);
        }
        FenceStamp stamp = parsed.stamp();
        if (stamp.fence().token() < floor && (stored == null || stored.token() < floor)) {
            return rejected(RejectionReason.STALE_TOKEN, stamp.fence(), stored);
        }
        Decision decision = FenceRule.decide(stored, stamp.fence());
        if (!decision.accepted()) {
            return rejected(decision.reason(), stamp.fence(), stored);
        }
        boolean marker = stamp.op() == FenceOp.FENCE;
        if (marker && record.value() != null) {
            return rejected(RejectionReason.INVALID_MARKER, stamp.fence(), stored);
        }
        Fence raised = FenceRule.raise(stored, stamp.fence());
        if (deferred == RejectionReason.PRODUCE_FAILED) {
            return new Expected(Kind.REJECTED, deferred, stamp.fence(), stored, raised); // decided and stored; its output refused
        }
        if (deferred != null) {
            return rejected(deferred, stamp.fence(), stored);
        }
        return new Expected(marker ? Kind.MARKER : Kind.ACCEPTED, null, stamp.fence(), stored, raised);
    }

    /**
     * Whether the record is on another input partition than murmur2 (Kafka's default partitioner) assigns its key among
     * {@code partitions}; a record without a key is not (the enforcer rejects it {@code MISSING_KEY} first).
     */
    static boolean misrouted(ConsumerRecord<byte[], byte[]> record, int partitions) {
        return record.key() != null && record.key().length > 0
                && Utils.toPositive(Utils.murmur2(record.key())) % partitions != record.partition();
    }

    /**
     * {@link #expect(ConsumerRecord, Fence, RejectionReason, long)} for a record decided on the input partition it was read
     * from: a misrouted one is rejected there, with the enforcer's deferred reason ({@code TOO_LARGE} for the re-route) or
     * else {@code WRONG_PARTITION}, and the fence does not move.
     */
    static Expected expectAt(ConsumerRecord<byte[], byte[]> record, int partitions, Fence stored, RejectionReason deferred,
            long floor) {
        if (misrouted(record, partitions)) {
            return new Expected(Kind.REJECTED, deferred != null ? deferred : RejectionReason.WRONG_PARTITION, null, stored,
                    stored);
        }
        return expect(record, stored, deferred, floor);
    }

    /** The record's own fence from its headers, or {@code null} when they carry none that parses. */
    static Fence fenceOf(ConsumerRecord<byte[], byte[]> record) {
        FenceStamp.Parsed parsed = FenceStamp.parse(HeaderLookup.of(record.headers()));
        return parsed.valid() ? parsed.stamp().fence() : null;
    }

    private static Expected rejected(RejectionReason reason, Fence own, Fence stored) {
        return new Expected(Kind.REJECTED, reason, own, stored, stored);
    }

    private static boolean rejectedBefore(ConsumerRecord<byte[], byte[]> record) {
        for (Header header : record.headers()) {
            if (header.key().startsWith(FenceHeaders.REJECTED_PREFIX)) {
                return true;
            }
        }
        return false;
    }
}
