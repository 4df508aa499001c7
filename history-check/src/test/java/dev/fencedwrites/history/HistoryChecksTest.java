package dev.fencedwrites.history;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.RejectionReason;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.Test;

/**
 * The topic checks of {@code fence verify} on histories written by hand: a clean one passes, and each kind of violation is
 * found and named. The same checks run on real services in VerifyIT.
 */
class HistoryChecksTest {
    private static final int PARTITIONS = 2;
    private final History history = new History();

    @Test
    void aCleanHistoryHasNoViolation() {
        String key = history.keyOn(0);
        history.acceptedWrite(key, 5, 1);
        history.acceptedWrite(key, 5, 2);
        history.rejectedWrite(key, 4, 9, RejectionReason.STALE_TOKEN, "5.2");
        history.rejectedWrite(key, 5, 2, RejectionReason.DUPLICATE, "5.2");
        history.marker(key, 7);
        history.acceptedWrite(key, 7, 1);

        Findings findings = history.check();

        assertThat(findings.byKind()).isEmpty();
        assertThat(findings.decisions()).containsEntry("STALE_TOKEN", 1L).containsEntry("DUPLICATE", 1L)
                .containsEntry("MARKER", 1L);
        assertThat(findings.counts()).containsEntry("input records", 6L).containsEntry("accepted records", 3L)
                .doesNotContainKey("keys checked record by record");
    }

    @Test
    void aStaleWriteSentStraightToTheAcceptedTopicIsFoundTwice() {
        String key = history.keyOn(1);
        history.acceptedWrite(key, 5, 1);
        history.accepted(history.record(key, 3, 1, "bypass"));

        Findings findings = history.check();

        assertThat(findings.byKind()).containsOnlyKeys(ViolationKind.FENCE_FELL, ViolationKind.ACCEPTED_WITHOUT_INPUT);
        assertThat(findings.described()).anySatisfy(v -> assertThat(v.detail()).contains("3.1").contains("5.1"));
    }

    @Test
    void aStaleWriteTheEnforcerAcceptedIsUnlikeTheRule() {
        String key = history.keyOn(0);
        history.acceptedWrite(key, 5, 1);
        history.acceptedWrite(key, 4, 1); // the enforcer forwarded a lower token: the rule says STALE_TOKEN

        Findings findings = history.check();

        assertThat(findings.byKind()).containsKeys(ViolationKind.UNLIKE_RULE, ViolationKind.FENCE_FELL);
        assertThat(findings.described()).anySatisfy(v -> assertThat(v.toString()).contains("UNLIKE_RULE")
                .contains("the rule says STALE_TOKEN"));
    }

    @Test
    void anInputWithNoDecisionAndOneWithTwoAreNamed() {
        String key = history.keyOn(1);
        history.input(history.record(key, 5, 1, "lost"));
        ConsumerRecord<byte[], byte[]> twice = history.input(history.record(key, 6, 1, "twice"));
        history.accepted(twice);
        history.rejectedCopy(twice, RejectionReason.STALE_TOKEN, "7.0");

        Findings findings = history.check();

        assertThat(findings.byKind()).containsEntry(ViolationKind.NEVER_DECIDED, 1L).containsEntry(ViolationKind.DECIDED_TWICE,
                1L);
    }

    @Test
    void aRejectionUnlikeTheFenceItReportsIsFoundInTheFirstPass() {
        String key = history.keyOn(0);
        history.rejectedWrite(key, 6, 1, RejectionReason.STALE_TOKEN, "5.9");

        Findings findings = history.check();

        assertThat(findings.byKind()).containsKey(ViolationKind.UNLIKE_RULE);
        assertThat(findings.described()).anySatisfy(v -> assertThat(v.detail()).contains("the rule says ACCEPT"));
    }

    @Test
    void aTokenVerificationRejectionCountsOnlyWhereTheRuleWouldAccept() {
        String key = history.keyOn(0);
        history.rejectedWrite(key, 9, 1, RejectionReason.LOCK_NOT_HELD, "");
        history.acceptedWrite(key, 5, 1);
        history.rejectedWrite(key, 4, 1, RejectionReason.FUTURE_TOKEN, "5.1"); // the rule says STALE_TOKEN first

        Findings findings = history.check();

        assertThat(findings.byKind()).containsOnlyKeys(ViolationKind.UNLIKE_RULE);
        assertThat(findings.described()).singleElement().satisfies(v -> assertThat(v.detail()).contains("FUTURE_TOKEN")
                .contains("the rule says STALE_TOKEN"));
    }

    @Test
    void aRejectionAtAnExpiryFloorIsReplayedAsTheFloorFromThereOn() {
        String expired = history.keyOn(0);
        String fresh = history.keyOn(0);
        String elsewhere = history.keyOn(1);
        history.acceptedWrite(expired, 5, 1);
        history.acceptedWrite(fresh, 12, 1);
        history.belowFloor(expired, 5, 2, 9); // its fence expired below the floor 9
        history.rejectedWrite(fresh, 12, 1, RejectionReason.DUPLICATE, "12.1"); // a fence above the floor: the rule
        history.acceptedWrite(history.keyOn(0), 9, 1); // at the floor: accepted
        history.acceptedWrite(elsewhere, 7, 1); // another partition's floor

        Findings findings = history.check();

        assertThat(findings.byKind()).isEmpty();
        assertThat(findings.counts()).containsEntry("rejected below an expiry floor", 1L);
    }

    @Test
    void anAcceptBelowAFloorThePartitionShowedIsUnlikeTheRule() {
        String expired = history.keyOn(0);
        history.acceptedWrite(expired, 5, 1);
        history.belowFloor(expired, 5, 2, 9);
        history.acceptedWrite(history.keyOn(0), 7, 1); // a fresh key below the floor: fenced at (9, no seq)

        Findings findings = history.check();

        assertThat(findings.byKind()).containsOnlyKeys(ViolationKind.UNLIKE_RULE);
        assertThat(findings.described()).singleElement().satisfies(v -> assertThat(v.detail()).contains("-> ACCEPTED")
                .contains("the rule says STALE_TOKEN"));
    }

    @Test
    void aRuleRejectionReportingAFenceWithoutSeqIsNoFloor() {
        String key = history.keyOn(0);
        history.accepted(history.input(history.recordWithoutSeq(key, 9)));
        history.rejectedWrite(key, 5, 1, RejectionReason.STALE_TOKEN, "9"); // the rule's, against (9, no seq)
        history.acceptedWrite(history.keyOn(0), 7, 1); // another key below 9: no floor, accepted

        Findings findings = history.check();

        assertThat(findings.byKind()).isEmpty();
        assertThat(findings.counts()).doesNotContainKey("rejected below an expiry floor");
    }

    @Test
    void aFloorThatFallsIsUnlikeTheRule() {
        String first = history.keyOn(0);
        history.belowFloor(first, 5, 1, 9);
        history.belowFloor(history.keyOn(0), 4, 1, 8);
        history.belowFloor(history.keyOn(1), 4, 1, 8); // another partition's floor

        Findings findings = history.check();

        assertThat(findings.byKind()).containsOnlyKeys(ViolationKind.UNLIKE_RULE);
        assertThat(findings.described()).singleElement().satisfies(v -> assertThat(v.detail()).contains("in-0@1")
                .contains("floor of 8, below the floor 9").contains("a floor never falls"));
    }

    @Test
    void aReroutedRecordIsLinkedToItsDecisionAndAnUndecidedOneIsNamed() {
        String key = history.keyOn(0);
        history.acceptedWrite(key, 5, 1);
        ConsumerRecord<byte[], byte[]> rerouted = history.inputOn(1, history.record(key, 6, 1, "away"));
        history.accepted(rerouted);
        history.inputOn(1, history.record(key, 7, 1, "away, lost"));

        Findings findings = history.check();

        assertThat(findings.counts()).containsEntry("input records re-routed", 2L);
        assertThat(findings.byKind()).containsOnlyKeys(ViolationKind.NEVER_DECIDED);
        assertThat(findings.described()).singleElement().satisfies(v -> assertThat(v.detail()).contains("@1"));
    }

    @Test
    void anInputPastTheEnforcersCommittedOffsetIsNotYetDue() {
        String key = history.keyOn(1);
        history.acceptedWrite(key, 5, 1);
        history.input(history.record(key, 6, 1, "not yet"));
        history.decidedBelow(1, 1);

        Findings findings = history.check();

        assertThat(findings.byKind()).isEmpty();
        assertThat(findings.counts()).containsEntry("input records not decided yet (past the enforcer's committed offset)", 1L);
    }

    @Test
    void aWriteAroundTheEnforcerIsFoundWhileTheEnforcerIsBehind() {
        String key = history.keyOn(0);
        String other = history.keyOn(0);
        history.acceptedWrite(key, 5, 1);
        history.input(history.record(other, 3, 1, "not decided yet"));
        history.decidedBelow(0, 1);
        history.accepted(history.record(key, 9, 1, "around the enforcer, above the fence"));

        Findings findings = history.check();

        assertThat(findings.byKind()).containsOnlyKeys(ViolationKind.ACCEPTED_WITHOUT_INPUT);
    }

    @Test
    void sinceChecksOnlyTheWindowAndStartsFromTheFenceTheDecisionsBeforeItSet() {
        String key = history.keyOn(0);
        String other = history.keyOn(1);
        history.acceptedWrite(key, 5, 1);
        history.acceptedWrite(key, 3, 1); // the enforcer let a stale write through: before the window, not reported
        history.marker(other, 9);
        history.sinceNow();
        history.rejectedWrite(key, 4, 1, RejectionReason.STALE_TOKEN, "5.1"); // right only against the fence before
        history.acceptedWrite(key, 6, 1);
        history.rejectedWrite(other, 8, 1, RejectionReason.STALE_TOKEN, "9.0"); // right only against the marker before

        Findings findings = history.check();

        assertThat(findings.described()).isEmpty();
        assertThat(findings.byKind()).isEmpty();
        assertThat(findings.counts()).containsEntry("input records", 3L).containsEntry("accepted records", 1L)
                .containsEntry("accepted records before --since (not checked; they set each key's fence)", 2L);
    }

    @Test
    void sinceStillFindsAStaleWriteAcceptedInTheWindow() {
        String key = history.keyOn(1);
        history.acceptedWrite(key, 5, 1);
        history.sinceNow();
        history.acceptedWrite(key, 4, 1);

        Findings findings = history.check();

        assertThat(findings.byKind()).containsOnlyKeys(ViolationKind.UNLIKE_RULE, ViolationKind.FENCE_FELL);
        assertThat(findings.described()).anySatisfy(v -> assertThat(v.detail()).contains("4.1").contains("STALE_TOKEN"));
    }

    @Test
    void sinceLinksACopyInTheWindowToARecordReroutedFromBeforeIt() {
        String home = history.keyOn(0);
        String away = history.keyOn(0);
        ConsumerRecord<byte[], byte[]> misrouted = history.inputOn(1, history.record(away, 5, 1, "stamped before the time"));
        history.acceptedWrite(home, 3, 1); // stamped after the time, its copy written before the re-routed one's
        history.accepted(misrouted);
        assertThat(history.check().byKind()).isEmpty();
        history.window(Map.of(0, 0L, 1, 1L), Map.of(0, 0L, 1, 0L)); // what PipelineScan.window finds for that

        Findings findings = history.check();

        assertThat(findings.described()).isEmpty();
        assertThat(findings.counts()).containsEntry("accepted records in the window of input records before --since (re-routed)",
                1L);
    }

    @Test
    void sinceSaysSoWhenTheFenceItStartsFromMayComeFromAWriteAroundTheEnforcer() {
        String key = history.keyOn(1);
        history.acceptedWrite(key, 5, 1);
        history.accepted(history.record(key, 9, 1, "around the enforcer, before the window"));
        history.sinceNow();
        history.acceptedWrite(key, 6, 1); // right against the enforcer's 5.1

        Findings findings = history.check();

        assertThat(findings.byKind()).containsOnlyKeys(ViolationKind.UNLIKE_RULE, ViolationKind.FENCE_FELL);
        assertThat(findings.described()).anySatisfy(v -> assertThat(v.detail()).contains("against 9.1")
                .contains("the fence the accepted records before --since set"));
    }

    /** An in-memory pipeline: the records of each topic, and the checks run over them as verify runs them. */
    /**
     * Under at_least_once a crashed enforcer writes the decisions since its last commit again: the accepted topic reads 6.1,
     * 7.1, 6.1, 7.1 for one key and a rejection is there twice. Only the first copies are checked; the control is the same
     * history checked as exactly_once_v2.
     */
    @Test
    void atLeastOnceCopiesWrittenAgainAreCheckedOnce() {
        String key = history.keyOn(0);
        ConsumerRecord<byte[], byte[]> six = history.input(history.record(key, 6, 1, "v6.1"));
        ConsumerRecord<byte[], byte[]> stale = history.input(history.record(key, 5, 1, "r5.1"));
        ConsumerRecord<byte[], byte[]> seven = history.input(history.record(key, 7, 1, "v7.1"));
        for (int copy = 0; copy < 2; copy++) {
            history.accepted(six);
            history.rejectedCopy(stale, RejectionReason.STALE_TOKEN, "6.1");
            history.accepted(seven);
        }

        Findings atLeastOnce = history.check(true);
        Findings exactlyOnce = history.check(false);

        assertThat(atLeastOnce.byKind()).isEmpty();
        assertThat(atLeastOnce.counts()).containsEntry("accepted copies written again (at_least_once)", 2L)
                .containsEntry("rejected copies written again (at_least_once)", 1L);
        assertThat(exactlyOnce.byKind()).isNotEmpty();
    }

    /** The first copies are still checked: an input record on both the accepted and the rejected topic is found. */
    @Test
    void atLeastOnceStillFindsARecordDecidedBothWays() {
        String key = history.keyOn(1);
        ConsumerRecord<byte[], byte[]> six = history.input(history.record(key, 6, 1, "v6.1"));
        history.accepted(six);
        history.rejectedCopy(six, RejectionReason.DUPLICATE, "6.1");
        history.accepted(six);

        assertThat(history.check(true).byKind()).isNotEmpty();
    }

    private static final class History implements TopicSource {
        private final Map<String, List<ConsumerRecord<byte[], byte[]>>> topics = new HashMap<>();
        private final Map<Integer, Long> decided = new HashMap<>(Map.of(0, Long.MAX_VALUE, 1, Long.MAX_VALUE));
        private int keys;
        private Scope.Window window = Scope.Window.ALL;

        /** A fresh key that murmur2 puts on {@code partition}. */
        String keyOn(int partition) {
            while (true) {
                String key = "key-" + keys++;
                if (Utils.toPositive(Utils.murmur2(key.getBytes(StandardCharsets.UTF_8))) % PARTITIONS == partition) {
                    return key;
                }
            }
        }

        ConsumerRecord<byte[], byte[]> record(String key, long token, long seq, String value) {
            RecordHeaders headers = new RecordHeaders();
            headers.add(FenceHeaders.TOKEN, Long.toString(token).getBytes(StandardCharsets.UTF_8));
            headers.add(FenceHeaders.SEQ, Long.toString(seq).getBytes(StandardCharsets.UTF_8));
            return new ConsumerRecord<>("", 0, 0, 0L, TimestampType.CREATE_TIME, 0, 0, key.getBytes(StandardCharsets.UTF_8),
                    value == null ? null : value.getBytes(StandardCharsets.UTF_8), headers, Optional.empty());
        }

        /** A write whose writer sends no {@code fence.seq}. */
        ConsumerRecord<byte[], byte[]> recordWithoutSeq(String key, long token) {
            RecordHeaders headers = new RecordHeaders();
            headers.add(FenceHeaders.TOKEN, Long.toString(token).getBytes(StandardCharsets.UTF_8));
            return new ConsumerRecord<>("", 0, 0, 0L, TimestampType.CREATE_TIME, 0, 0, key.getBytes(StandardCharsets.UTF_8),
                    ("n" + token).getBytes(StandardCharsets.UTF_8), headers, Optional.empty());
        }

        ConsumerRecord<byte[], byte[]> input(ConsumerRecord<byte[], byte[]> record) {
            return inputOn(Utils.toPositive(Utils.murmur2(record.key())) % PARTITIONS, record);
        }

        ConsumerRecord<byte[], byte[]> inputOn(int partition, ConsumerRecord<byte[], byte[]> record) {
            return append("in", partition, record.key(), record.value(), new RecordHeaders(record.headers().toArray()));
        }

        /** A copy on the accepted topic, on its key's partition as the enforcer writes it. */
        void accepted(ConsumerRecord<byte[], byte[]> record) {
            append("accepted", Utils.toPositive(Utils.murmur2(record.key())) % PARTITIONS, record.key(), record.value(),
                    new RecordHeaders(record.headers().toArray()));
        }

        void acceptedWrite(String key, long token, long seq) {
            accepted(input(record(key, token, seq, "v" + token + "." + seq)));
        }

        void rejectedWrite(String key, long token, long seq, RejectionReason reason, String highest) {
            rejectedCopy(input(record(key, token, seq, "r" + token + "." + seq)), reason, highest);
        }

        /** A write rejected STALE_TOKEN below the expiry floor {@code floor}, as the enforcer writes it. */
        void belowFloor(String key, long token, long seq, long floor) {
            ConsumerRecord<byte[], byte[]> input = input(record(key, token, seq, "f" + token + "." + seq));
            rejectedCopy(input, RejectionReason.STALE_TOKEN, Long.toString(floor), floor);
        }

        void rejectedCopy(ConsumerRecord<byte[], byte[]> input, RejectionReason reason, String highest) {
            rejectedCopy(input, reason, highest, -1);
        }

        void rejectedCopy(ConsumerRecord<byte[], byte[]> input, RejectionReason reason, String highest, long floor) {
            RecordHeaders headers = new RecordHeaders(input.headers().toArray());
            if (floor > 0) {
                headers.add(FenceHeaders.REJECTED_FLOOR, Long.toString(floor).getBytes(StandardCharsets.UTF_8));
            }
            headers.add(FenceHeaders.REJECTED_REASON, reason.name().getBytes(StandardCharsets.UTF_8));
            headers.add(FenceHeaders.REJECTED_STAGE, FenceHeaders.STAGE_ENFORCER.getBytes(StandardCharsets.UTF_8));
            headers.add(FenceHeaders.REJECTED_HIGHEST, highest.getBytes(StandardCharsets.UTF_8));
            source(headers, input);
            append("rejected", 0, input.key(), input.value(), headers);
        }

        void marker(String key, long token) {
            RecordHeaders own = new RecordHeaders(record(key, token, 0, null).headers().toArray());
            own.add(FenceHeaders.OP, "FENCE".getBytes(StandardCharsets.UTF_8));
            ConsumerRecord<byte[], byte[]> input = input(new ConsumerRecord<>("", 0, 0, 0L, TimestampType.CREATE_TIME, 0, 0,
                    key.getBytes(StandardCharsets.UTF_8), null, own, Optional.empty()));
            RecordHeaders headers = new RecordHeaders(own.toArray());
            source(headers, input);
            append("markers", 0, input.key(), null, headers);
        }

        void decidedBelow(int partition, long offset) {
            decided.put(partition, offset);
        }

        /** {@code --since} with the window given: where the input and the accepted topic's checked parts start. */
        void window(Map<Integer, Long> input, Map<Integer, Long> accepted) {
            window = new Scope.Window(input, accepted);
        }

        /** {@code --since} from here: the next input records (and their accepted copies) are checked, the ones so far not. */
        void sinceNow() {
            Map<Integer, Long> input = new HashMap<>();
            Map<Integer, Long> accepted = new HashMap<>();
            for (int p = 0; p < PARTITIONS; p++) {
                input.put(p, end("in", p));
                accepted.put(p, end("accepted", p));
            }
            window = new Scope.Window(input, accepted);
        }

        Findings check() {
            return check(false);
        }

        /** @param atLeastOnce check as for an enforcer under at_least_once */
        Findings check(boolean atLeastOnce) {
            Findings findings = new Findings();
            Scope scope = new Scope("in", "accepted", "rejected", "markers", PARTITIONS, true, decided, window);
            PipelineVerifier.check(scope, this, false, atLeastOnce, findings);
            return findings;
        }

        @Override
        public void read(String topic, String pass, Map<Integer, Long> from, Map<Integer, Long> until,
                Consumer<ConsumerRecord<byte[], byte[]>> handler) {
            topics.getOrDefault(topic, List.of()).stream().filter(r -> r.offset() >= from.getOrDefault(r.partition(), 0L)
                    && r.offset() < until.getOrDefault(r.partition(), Long.MAX_VALUE)).forEach(handler);
        }

        private long end(String topic, int partition) {
            return topics.getOrDefault(topic, List.of()).stream().filter(r -> r.partition() == partition).count();
        }

        private static void source(RecordHeaders headers, ConsumerRecord<byte[], byte[]> input) {
            headers.add(FenceHeaders.SOURCE_TOPIC, "in".getBytes(StandardCharsets.UTF_8));
            headers.add(FenceHeaders.SOURCE_PARTITION, Integer.toString(input.partition()).getBytes(StandardCharsets.UTF_8));
            headers.add(FenceHeaders.SOURCE_OFFSET, Long.toString(input.offset()).getBytes(StandardCharsets.UTF_8));
        }

        private ConsumerRecord<byte[], byte[]> append(String topic, int partition, byte[] key, byte[] value,
                RecordHeaders headers) {
            List<ConsumerRecord<byte[], byte[]>> log = topics.computeIfAbsent(topic, t -> new ArrayList<>());
            long offset = log.stream().filter(r -> r.partition() == partition).count();
            ConsumerRecord<byte[], byte[]> record = new ConsumerRecord<>(topic, partition, offset, 0L, TimestampType.CREATE_TIME,
                    0,
                    0, key, value, headers, Optional.empty());
            log.add(record);
            return record;
        }
    }
}
