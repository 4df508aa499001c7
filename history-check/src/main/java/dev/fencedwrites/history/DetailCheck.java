package dev.fencedwrites.history;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceOp;
import dev.fencedwrites.contract.FenceStamp;
import dev.fencedwrites.contract.HeaderLookup;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.history.ReplayRule.Expected;
import dev.fencedwrites.history.ReplayRule.Kind;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * {@code fence verify}'s second pass, over the keys the first left unsettled ({@link HistoryCheck#unsettled}): fed the same
 * topics again, it keeps those keys' records and links each input record to its decisions: rejected copies and markers by
 * {@code fence.source.*}, accepted copies by content (the enforcer copies an accepted record byte for byte), then names
 * what differs: input records never decided or decided twice, accepted records with no input, and decisions unlike the rule
 * replayed over the key's records in offset order. A key with re-routed records is not replayed (its order across partitions
 * is the enforcer's); its rejections were checked against the fence they report, its accepted records for rising.
 */
final class DetailCheck {
    private final Scope scope;
    private final Findings findings;
    private final Set<String> keys;
    private final Map<Position, RejectionReason> deferred;
    private final ExpiryFloors floors;
    private final Function<String, Fence> seeds;
    private final Map<String, List<Made>> made = new HashMap<>();
    private final Map<String, List<ConsumerRecord<byte[], byte[]>>> inputs = new HashMap<>();
    private final Map<String, Set<Long>> pending = new HashMap<>();
    private final Map<String, List<ConsumerRecord<byte[], byte[]>>> accepted = new HashMap<>();
    /** With {@code --since}: per key, the contents of its input records before the window. */
    private final Map<String, Set<Long>> before = new HashMap<>();
    /** With {@code --since}: the keys with an accepted copy in the window of an input record before it (re-routed). */
    private final Set<String> crossed = new HashSet<>();

    /** A decision of an input record: what it was and where it is written. */
    private record Made(Position input, String label, String where) {
    }

    /**
     * @param floors the expiry floors the first pass found
     * @param seeds  per key, its fence where {@code --since}'s window starts, or {@code null}
     */
    DetailCheck(Scope scope, Findings findings, Set<String> keys, Map<Position, RejectionReason> deferred,
            ExpiryFloors floors, Function<String, Fence> seeds) {
        this.scope = scope;
        this.findings = findings;
        this.keys = keys;
        this.deferred = deferred;
        this.floors = floors;
        this.seeds = seeds;
    }

    void rejected(ConsumerRecord<byte[], byte[]> record) {
        OutputRecord copy = OutputRecord.of(record);
        if (!copy.sinkStage() && wanted(copy)) {
            made.computeIfAbsent(copy.key(), k -> new ArrayList<>()).add(new Made(copy.source(),
                    copy.reason() == null ? "UNKNOWN_REASON" : copy.reason().name(), where(scope.rejected(), record)));
        }
    }

    void marker(ConsumerRecord<byte[], byte[]> record) {
        OutputRecord copy = OutputRecord.of(record);
        if (wanted(copy)) {
            made.computeIfAbsent(copy.key(), k -> new ArrayList<>()).add(new Made(copy.source(), Kind.MARKER.name(),
                    where(scope.markers(), record)));
        }
    }

    void input(ConsumerRecord<byte[], byte[]> record) {
        String key = OutputRecord.key(record.key());
        if (key == null || !keys.contains(key)) {
            return;
        }
        if (!scope.window().checks(record.partition(), record.offset())) {
            before.computeIfAbsent(key, k -> new HashSet<>()).add(Hashes.content(record));
        } else if (scope.decided(record.partition(), record.offset())) {
            inputs.computeIfAbsent(key, k -> new ArrayList<>()).add(record);
        } else {
            pending.computeIfAbsent(key, k -> new HashSet<>()).add(Hashes.content(record));
        }
    }

    void accepted(ConsumerRecord<byte[], byte[]> record) {
        String key = OutputRecord.key(record.key());
        if (keys.contains(key == null ? "" : key)) {
            accepted.computeIfAbsent(key == null ? "" : key, k -> new ArrayList<>()).add(record);
        }
    }

    /** Reports what differs for every key fed; {@code mixed}: the keys with re-routed records. */
    void finish(Set<String> mixed) {
        for (String key : keys) {
            List<ConsumerRecord<byte[], byte[]>> in = inputs.getOrDefault(key, List.of());
            Map<Position, List<Made>> byInput = new HashMap<>();
            made.getOrDefault(key, List.of()).forEach(m -> byInput.computeIfAbsent(m.input(), p -> new ArrayList<>()).add(m));
            linkAccepted(key, in, byInput);
            Fence fence = seeds.apply(key);
            for (ConsumerRecord<byte[], byte[]> record : in) {
                Position at = new Position(record.partition(), record.offset());
                List<Made> decisions = byInput.getOrDefault(at, List.of());
                Expected expected = mixed.contains(key) || crossed.contains(key) ? null : expect(record, fence);
                fence = expected == null ? fence : expected.after();
                if (decisions.isEmpty() && !unobservedMarker(record, expected)) {
                    findings.violation(ViolationKind.NEVER_DECIDED, key, where(scope.input(), record) + " with "
                            + ReplayRule.fenceOf(record) + " is on no output topic");
                } else if (decisions.size() > 1) {
                    findings.violation(ViolationKind.DECIDED_TWICE, key, where(scope.input(), record) + " was decided "
                            + decisions.size() + " times: "
                            + decisions.stream().map(m -> m.label() + " at " + m.where()).toList());
                }
                if (!decisions.isEmpty() && expected != null && !decisions.get(0).label().equals(expected.label())) {
                    findings.violation(ViolationKind.UNLIKE_RULE, key, where(scope.input(), record) + " with "
                            + expected.fence() + " -> " + decisions.get(0).label() + " at " + decisions.get(0).where()
                            + ", the rule says " + expected.label() + " against " + expected.before() + seeded(key, expected));
                }
            }
        }
    }

    /** Links each accepted copy to the first input record of equal content not yet linked to an accepted copy. */
    private void linkAccepted(String key, List<ConsumerRecord<byte[], byte[]>> in, Map<Position, List<Made>> byInput) {
        Map<Long, List<ConsumerRecord<byte[], byte[]>>> byContent = new HashMap<>();
        in.forEach(r -> byContent.computeIfAbsent(Hashes.content(r), h -> new ArrayList<>()).add(r));
        Set<Position> linked = new HashSet<>();
        for (ConsumerRecord<byte[], byte[]> copy : accepted.getOrDefault(key, List.of())) {
            long content = Hashes.content(copy);
            List<ConsumerRecord<byte[], byte[]>> same = byContent.getOrDefault(content, List.of());
            ConsumerRecord<byte[], byte[]> first = same.stream()
                    .filter(r -> !linked.contains(new Position(r.partition(), r.offset()))).findFirst()
                    .orElse(same.isEmpty() ? null : same.get(0));
            if (first == null && before.getOrDefault(key, Set.of()).contains(content)) {
                // The decision of an input record before the window, re-routed to the key's partition after it.
                findings.count("accepted records in the window of input records before --since (re-routed)");
                crossed.add(key);
                continue;
            }
            if (first == null) {
                if (!pending.getOrDefault(key, Set.of()).contains(content)) {
                    findings.violation(ViolationKind.ACCEPTED_WITHOUT_INPUT, key, where(scope.accepted(), copy) + " with "
                            + ReplayRule.fenceOf(copy) + " matches no input record: it was written around the enforcer");
                }
                continue;
            }
            Position at = new Position(first.partition(), first.offset());
            linked.add(at);
            byInput.computeIfAbsent(at, p -> new ArrayList<>()).add(new Made(at, Kind.ACCEPTED.name(),
                    where(scope.accepted(), copy)));
        }
    }

    /** For a decision against the fence the history before {@code --since} set: what else could explain it. */
    private String seeded(String key, Expected expected) {
        Fence seed = seeds.apply(key);
        return seed != null && seed.equals(expected.before())
                ? " (the fence the accepted records before --since set; a write around the enforcer before the window would "
                        + "also explain this: run verify without --since)"
                : "";
    }

    private Expected expect(ConsumerRecord<byte[], byte[]> record, Fence fence) {
        Position at = new Position(record.partition(), record.offset());
        return ReplayRule.expectAt(record, scope.inputPartitions(), fence, deferred.get(at),
                ReplayRule.misrouted(record, scope.inputPartitions()) ? 0 : floors.at(at));
    }

    /** A winning marker, when the markers topic is not there to show it: absorbed without a trace. */
    private boolean unobservedMarker(ConsumerRecord<byte[], byte[]> record, Expected expected) {
        if (scope.markers() != null) {
            return false;
        }
        if (expected != null) {
            return expected.kind() == Kind.MARKER;
        }
        FenceStamp.Parsed parsed = FenceStamp.parse(HeaderLookup.of(record.headers()));
        return parsed.valid() && parsed.stamp().op() == FenceOp.FENCE && record.value() == null;
    }

    private boolean wanted(OutputRecord copy) {
        return copy.key() != null && keys.contains(copy.key()) && copy.source() != null
                && scope.input().equals(copy.sourceTopic()) && scope.decided(copy.source().partition(), copy.source().offset())
                && scope.window().checks(copy.source().partition(), copy.source().offset());
    }

    private static String where(String topic, ConsumerRecord<?, ?> record) {
        return topic + "-" + record.partition() + "@" + record.offset();
    }
}
