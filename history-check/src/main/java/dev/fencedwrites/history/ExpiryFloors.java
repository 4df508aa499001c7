package dev.fencedwrites.history;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.RejectionReason;
import java.util.HashMap;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * The enforcer's expiry floors as its decisions show them, per input partition (docs/concepts/fence-expiry.md): a
 * {@code STALE_TOKEN} rejection below a floor names it in {@code fence.rejected.floor}. Such a claim is taken when it
 * explains the rejection (the record's token and the key's replayed fence both below it; one that does not is left to the
 * rule, whose decision then differs), and from there on the partition is replayed against it: a floor only rises, so a
 * later claim below it, or a later accept of a token below it on a key without a fence at or above it, is unlike the rule.
 * The floor's value itself (at most etcd's oldest live lock) is not visible in the topics; {@code fence chaos} checks it
 * against its writers' ledgers.
 */
final class ExpiryFloors {
    private final String input;
    private final Map<Position, Long> claims = new HashMap<>();
    /** Per input partition: offset of the record that showed a higher floor, and that floor. */
    private final Map<Integer, NavigableMap<Long, Long>> shown = new HashMap<>();

    /** @param input the input topic's name, for the violations' text */
    ExpiryFloors(String input) {
        this.input = input;
    }

    /** Notes a rejected copy of an input record that may be a floor rejection. */
    void claim(OutputRecord copy) {
        if (copy.reason() == RejectionReason.STALE_TOKEN && copy.floor() > 0 && copy.source() != null) {
            claims.put(copy.source(), copy.floor());
        }
    }

    /**
     * The floor to replay the input record at {@code at} against, raised by the record's own rejection where that shows a
     * higher floor; the first pass calls it once per input record, in offset order per partition.
     *
     * @param stored the key's replayed fence before the record, or {@code null}
     */
    long meet(ConsumerRecord<byte[], byte[]> record, Position at, Fence stored, String key, Findings findings) {
        NavigableMap<Long, Long> partition = shown.computeIfAbsent(at.partition(), p -> new TreeMap<>());
        Map.Entry<Long, Long> last = partition.lastEntry();
        long known = last == null ? 0 : last.getValue();
        Long claimed = claims.remove(at);
        Fence own = ReplayRule.fenceOf(record);
        if (claimed == null || own == null || own.token() >= claimed || stored != null && stored.token() >= claimed) {
            return known;
        }
        findings.count("rejected below an expiry floor");
        if (claimed < known) {
            findings.violation(ViolationKind.UNLIKE_RULE, key, HistoryCheck.where(input, at) + " rejected STALE_TOKEN "
                    + "against an expiry floor of " + claimed + ", below the floor " + known + " its partition showed at offset "
                    + last.getKey() + ": a floor never falls");
            return known;
        }
        if (claimed > known) {
            partition.put(at.offset(), claimed);
        }
        return claimed;
    }

    /** The floor the first pass found in force for the input record at {@code at} (0: none). */
    long at(Position at) {
        NavigableMap<Long, Long> partition = shown.get(at.partition());
        Map.Entry<Long, Long> entry = partition == null ? null : partition.floorEntry(at.offset());
        return entry == null ? 0 : entry.getValue();
    }
}
