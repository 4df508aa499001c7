package dev.fencedwrites.history;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceOp;
import dev.fencedwrites.contract.FenceRule;
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
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * {@code fence verify}'s first pass: fed the rejected and markers topics, then the input topic, then the accepted
 * topic, each partition in offset order, it replays the decision rule over each key's input records and compares, by
 * fingerprint ({@link Hashes}), what the enforcer should have decided with what it wrote. Memory: a {@link KeyState} per key,
 * plus the positions of the few rejections the replay cannot decide alone (token verification, size limits, keyless copies).
 * Keys whose fingerprints differ, or whose records were re-routed, are left to {@link DetailCheck}. A rejection whose reason
 * disagrees with the fence it reports, and an accepted record the rule rejects against the one before it, are violations at
 * once.
 */
final class HistoryCheck {
    private final Scope scope;
    private final Findings findings;
    private final boolean keepValues;
    private final Map<String, KeyState> keys = new HashMap<>();
    private final Map<Position, RejectionReason> deferred = new HashMap<>();
    private final Map<Position, List<String>> keyless = new HashMap<>();
    private final Set<Position> sinkRejected = new HashSet<>();
    private final ExpiryFloors floors;

    /** @param keepValues keep each key's winning accepted value, for the table check */
    HistoryCheck(Scope scope, Findings findings, boolean keepValues) {
        this.scope = scope;
        this.findings = findings;
        this.keepValues = keepValues;
        this.floors = new ExpiryFloors(scope.input());
    }

    /** One record of the rejected topic. */
    void rejected(ConsumerRecord<byte[], byte[]> record) {
        OutputRecord copy = OutputRecord.of(record);
        if (copy.sinkStage()) {
            findings.count("rejected by the sink");
            if (copy.source() != null && scope.accepted().equals(copy.sourceTopic())) {
                sinkRejected.add(copy.source());
            }
            return;
        }
        if (!decisionOfInput(copy, "rejected")) {
            return;
        }
        findings.count("rejected by the enforcer");
        RejectionReason reason = copy.reason();
        checkAgainstHighest(copy, reason);
        floors.claim(copy);
        if (ReplayRule.DEFERRED.contains(reason)) {
            deferred.put(copy.source(), reason);
        }
        decision(copy, reason == null ? "UNKNOWN_REASON" : reason.name());
    }

    /** One record of the markers topic: a winning marker the enforcer published. */
    void marker(ConsumerRecord<byte[], byte[]> record) {
        OutputRecord copy = OutputRecord.of(record);
        Fence fence = ReplayRule.fenceOf(record);
        if (copy.key() != null && fence != null) {
            // Also a marker of an input past the enforcer's committed offset: the sink may have raised the row with it.
            KeyState state = keys.computeIfAbsent(copy.key(), k -> new KeyState());
            if (state.markerFence == null || FenceRule.decide(state.markerFence, fence).accepted()) {
                state.markerFence = fence;
                state.markerPartition = record.partition();
                state.markerOffset = record.offset();
            }
        }
        if (fence != null && copy.key() != null && before(copy)) {
            keys.get(copy.key()).seed(fence); // the winning marker of an input record before --since
        }
        if (!decisionOfInput(copy, "marker")) {
            return;
        }
        findings.count("winning markers published");
        decision(copy, Kind.MARKER.name());
    }

    /** One record of the input topic. */
    void input(ConsumerRecord<byte[], byte[]> record) {
        if (!scope.decided(record.partition(), record.offset())) {
            findings.count("input records not decided yet (past the enforcer's committed offset)");
            String pendingKey = OutputRecord.key(record.key());
            if (pendingKey != null) {
                keys.computeIfAbsent(pendingKey, k -> new KeyState()).pendingInputs++;
            }
            return;
        }
        findings.count("input records");
        Position at = new Position(record.partition(), record.offset());
        String key = OutputRecord.key(record.key());
        KeyState state = key == null ? null : keys.computeIfAbsent(key, k -> new KeyState());
        RejectionReason late = deferred.get(at);
        boolean misrouted = ReplayRule.misrouted(record, scope.inputPartitions());
        List<String> byPosition = keyless.remove(at);
        if (misrouted && scope.reroute() && late == null && byPosition == null) {
            state.mixed = true; // decided on its key's partition, in an order the input log does not give
            findings.count("input records re-routed");
            return;
        }
        Fence stored = state == null ? null : state.fence;
        long floor = misrouted ? 0 : floors.meet(record, at, stored, key, findings);
        Expected expected = ReplayRule.expectAt(record, scope.inputPartitions(), stored, late, floor);
        if (byPosition != null) {
            compareAtPosition(at, key, expected, byPosition);
        } else if (state == null) {
            findings.violation(ViolationKind.NEVER_DECIDED, null, where(scope.input(), at) + " (no key) is on no output topic");
        }
        if (state == null) {
            return;
        }
        state.fence = expected.after();
        if (byPosition != null) {
            return;
        }
        if (expected.kind() == Kind.ACCEPTED) {
            state.expectedAccepts++;
            state.expectedChain = Hashes.chain(state.expectedChain, Hashes.content(record));
        } else if (expected.kind() == Kind.REJECTED || scope.markers() != null) {
            state.expectedDecisions++;
            state.expectedDecisionSum += Hashes.decision(at.partition(), at.offset(), expected.label());
        }
    }

    /**
     * One record of the accepted topic before {@code --since}'s window: the decision of an input record not read, it sets the
     * key's fence and row, and is not checked.
     */
    void seed(ConsumerRecord<byte[], byte[]> record) {
        findings.count("accepted records before --since (not checked; they set each key's fence)");
        String key = OutputRecord.key(record.key());
        KeyState state = keys.computeIfAbsent(key, k -> new KeyState());
        Fence own = observe(record, key, state, false);
        if (own != null) {
            state.seed(own);
        }
    }

    /** One record of the accepted topic. */
    void accepted(ConsumerRecord<byte[], byte[]> record) {
        findings.count("accepted records");
        findings.decided(Kind.ACCEPTED.name());
        String key = OutputRecord.key(record.key());
        KeyState state = keys.computeIfAbsent(key, k -> new KeyState());
        if (state.acceptedCopies < state.expectedAccepts) {
            state.acceptedCopies++;
            state.acceptedChain = Hashes.chain(state.acceptedChain, Hashes.content(record));
        } else {
            state.acceptedBeyond++;
        }
        observe(record, key, state, true);
    }

    /**
     * The checks of an accepted record against the key's accepted records before it (rising), and the row the sink's guard
     * makes of them; returns the record's fence, or {@code null} when it has none (a violation when {@code check}).
     *
     * @param check whether a record unlike the rule is a violation: not before {@code --since}'s window
     */
    private Fence observe(ConsumerRecord<byte[], byte[]> record, String key, KeyState state, boolean check) {
        String at = where(scope.accepted(), new Position(record.partition(), record.offset()));
        FenceStamp.Parsed parsed = FenceStamp.parse(HeaderLookup.of(record.headers()));
        if (!parsed.valid()) {
            if (check) {
                findings.violation(ViolationKind.UNLIKE_RULE, key, at + " has no valid fence headers (" + parsed.rejection()
                        + ": " + parsed.detail() + "), yet is on the accepted topic");
            }
            return null;
        }
        Fence own = parsed.stamp().fence();
        if (state.lastAccepted != null && !FenceRule.decide(state.lastAccepted, own).accepted()) {
            if (check) {
                findings.violation(ViolationKind.FENCE_FELL, key, at + " carries " + own + " after " + state.lastAcceptedAt
                        + " with " + state.lastAccepted + ": the rule says "
                        + FenceRule.decide(state.lastAccepted, own).reason());
            }
        } else {
            state.lastAccepted = FenceRule.raise(state.lastAccepted, own);
            state.lastAcceptedAt = at;
        }
        state.lastCopyPartition = record.partition();
        state.lastCopyOffset = record.offset();
        if (controlMarker(parsed.stamp().op())) {
            return own;
        }
        if (!sinkRejected.contains(new Position(record.partition(), record.offset()))
                && (state.rowFence == null || FenceRule.decide(state.rowFence, own).accepted())) {
            state.rowFence = FenceRule.raise(state.rowFence, own);
            state.rowValue = keepValues ? record.value() : null;
            state.rowDeleted = record.value() == null;
            state.rowFrom = at;
        }
        if (state.topFence == null || FenceRule.decide(state.topFence, own).accepted()) {
            state.topFence = FenceRule.raise(state.topFence, own);
            state.topValue = keepValues ? record.value() : null;
            state.topDeleted = record.value() == null;
            state.topFrom = at;
        }
        return own;
    }

    /**
     * Whether a record with {@code op} read from the accepted topic leaves the row alone because this is a control run: the
     * input read as the accepted topic ({@link PipelineVerifier.Options#control}), through a sink with
     * {@code fence.guard.enabled=false}, which skips {@code FENCE} markers. (The enforcer never publishes a marker to the
     * accepted topic.)
     */
    private boolean controlMarker(FenceOp op) {
        return op == FenceOp.FENCE && scope.accepted().equals(scope.input());
    }

    /**
     * The keys the first pass could not clear: fingerprints unlike the replay's, or re-routed records.
     *
     * <p>An accepted copy past the replay's count is allowed only as the decision of an input record past the enforcer's
     * committed offset: one per such record of the key.
     */
    Set<String> unsettled() {
        Set<String> out = new HashSet<>();
        keys.forEach((key, state) -> {
            if (!state.matches()) {
                out.add(key);
            }
        });
        return out;
    }

    /** The rejections whose reasons the replay takes from the enforcer, by input position. */
    Map<Position, RejectionReason> deferred() {
        return deferred;
    }

    /** The expiry floors the enforcer's rejections showed, per input partition. */
    ExpiryFloors floors() {
        return floors;
    }

    /** The keys with records re-routed from another partition. */
    Set<String> mixed() {
        Set<String> out = new HashSet<>();
        keys.forEach((key, state) -> {
            if (state.mixed) {
                out.add(key);
            }
        });
        return out;
    }

    Map<String, KeyState> keys() {
        return keys;
    }

    /** Counts a copy naming an input record, unless that record is past the enforcer's committed offset or not an input's. */
    private boolean decisionOfInput(OutputRecord copy, String what) {
        if (copy.source() == null || !scope.input().equals(copy.sourceTopic())) {
            findings.count(what + " records naming no input record");
            return false;
        }
        if (!scope.decided(copy.source().partition(), copy.source().offset())) {
            findings.count(what + " records of input records past the enforcer's committed offset");
            return false;
        }
        if (before(copy)) {
            findings.count(what + " records of input records before --since");
            return false;
        }
        return true;
    }

    /** Whether the copy names an input record before {@code --since}'s window. */
    private boolean before(OutputRecord copy) {
        return copy.source() != null && scope.input().equals(copy.sourceTopic())
                && !scope.window().checks(copy.source().partition(), copy.source().offset());
    }

    private void decision(OutputRecord copy, String label) {
        findings.decided(label);
        if (copy.key() == null) {
            keyless.computeIfAbsent(copy.source(), p -> new ArrayList<>(1)).add(label);
            return;
        }
        KeyState state = keys.computeIfAbsent(copy.key(), k -> new KeyState());
        state.decisions++;
        state.decisionSum += Hashes.decision(copy.source().partition(), copy.source().offset(), label);
    }

    /** A rejection by the rule must be what the rule gives for the record's fence against the highest fence it reports. */
    private void checkAgainstHighest(OutputRecord copy, RejectionReason reason) {
        if (reason != RejectionReason.STALE_TOKEN && reason != RejectionReason.DUPLICATE && reason != RejectionReason.OUT_OF_ORDER
                || copy.fence() == null || copy.reduced()) {
            return;
        }
        RejectionReason rule = FenceRule.decide(copy.highest(), copy.fence()).reason();
        if (rule != reason) {
            findings.violation(ViolationKind.UNLIKE_RULE, copy.key(), where(scope.input(), copy.source()) + " rejected "
                    + reason + " with " + copy.fence() + " against the highest fence it reports, " + copy.highest()
                    + "; the rule says " + (rule == null ? "ACCEPT" : rule));
        }
    }

    private void compareAtPosition(Position at, String key, Expected expected, List<String> found) {
        if (found.size() > 1) {
            findings.violation(ViolationKind.DECIDED_TWICE, key,
                    where(scope.input(), at) + " was decided " + found.size() + " times: " + found);
        }
        if (!found.get(0).equals(expected.label())) {
            findings.violation(ViolationKind.UNLIKE_RULE, key, where(scope.input(), at) + " -> "
                    + found.get(0) + ", the rule says " + expected.label());
        }
    }

    static String where(String topic, Position at) {
        return topic + "-" + at.partition() + "@" + at.offset();
    }
}
