package dev.fencedwrites.failover;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.failover.Decided.Input;
import dev.fencedwrites.failover.Decided.Kind;
import dev.fencedwrites.failover.Decided.Output;
import dev.fencedwrites.failover.Decided.Ref;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Each failover checker passes a correct history and fails one that breaks its rule: none can pass whatever happens. Check
 * (a) is the history checker's, tested in history-check (HistoryChecksTest).
 */
class FailoverChecksTest {
    /** key k: marker 5.0, writes 5.1 and 5.2, then a stale write 3.1; all on partition 0. */
    private static final List<Input> INPUTS = List.of(new Input(0, 0, "k", new Fence(5, 0), true, -1),
            new Input(0, 1, "k", new Fence(5, 1), false, 101), new Input(0, 2, "k", new Fence(5, 2), false, 102),
            new Input(0, 3, "k", new Fence(3, 1), false, 103));

    private static List<Output> correct() {
        List<Output> outputs = new ArrayList<>();
        outputs.add(new Output(Kind.MARKER, 0, 0, "k", new Fence(5, 0), new Ref(0, 0), -1, null));
        outputs.add(new Output(Kind.ACCEPTED, 0, 0, "k", new Fence(5, 1), null, 101, null));
        outputs.add(new Output(Kind.ACCEPTED, 0, 1, "k", new Fence(5, 2), null, 102, null));
        outputs.add(new Output(Kind.REJECTED, 0, 0, "k", new Fence(3, 1), new Ref(0, 3), 103, RejectionReason.STALE_TOKEN));
        return outputs;
    }

    @Test
    void aCorrectHistoryPassesEveryCheck() {
        assertThat(FailoverChecks.noStaleWriteAccepted(INPUTS, correct()).problems()).isEmpty();
        assertThat(SinkAudit.tableMatchesRule(Map.of("k", new SinkAudit.Row(new Fence(5, 2), 102L, false)), correct())
                .problems()).isEmpty();
    }

    @Test
    void anAcceptedStaleWriteFailsTheRisingFenceCheck() {
        List<Output> outputs = correct();
        outputs.set(3, new Output(Kind.ACCEPTED, 0, 2, "k", new Fence(3, 1), null, 103, null));
        assertThat(FailoverChecks.noStaleWriteAccepted(INPUTS, outputs).problems()).hasSize(2)
                .allMatch(problem -> problem.contains("went from 5.2 to 3.1"));
    }

    @Test
    void anAnswerBelowOneReceivedEarlierFailsTheFenceWatch() {
        List<FenceWatch.Observation> observed = List.of(
                new FenceWatch.Observation("http://a", "k", new Fence(5, 2), "a", 0, 10),
                new FenceWatch.Observation("http://b", "k", new Fence(5, 1), "b", 20, 30));
        assertThat(FenceWatch.neverDecreased(observed).problems()).singleElement().asString()
                .contains("answered 5.1 after http://a");
    }

    @Test
    void answersThatOverlapInTimeAreNotOrderedByTheFenceWatch() {
        List<FenceWatch.Observation> observed = List.of(
                new FenceWatch.Observation("http://a", "k", new Fence(5, 2), "a", 0, 25),
                new FenceWatch.Observation("http://b", "k", new Fence(5, 1), "b", 20, 30));
        assertThat(FenceWatch.neverDecreased(observed).problems()).isEmpty();
    }

    @Test
    void anUpdateThatLowersARowsFenceFailsTheAudit() {
        List<SinkAudit.Change> history = List.of(new SinkAudit.Change("k", new Fence(5, 1), new Fence(5, 2)),
                new SinkAudit.Change("k", new Fence(5, 2), new Fence(3, 1)));
        assertThat(SinkAudit.neverDecreased(history).problems()).singleElement().asString().contains("from 5.2 to 3.1");
    }

    @Test
    void aRowHoldingAnOlderWriteThanTheAcceptedTopicsLastFailsTheTableCheck() {
        assertThat(SinkAudit.tableMatchesRule(Map.of("k", new SinkAudit.Row(new Fence(5, 1), 101L, false)), correct())
                .problems()).singleElement().asString().contains("gives write 102 at 5.2");
    }

    @Test
    void aRowRaisedByALaterMarkerKeepsItsDataAndPassesTheTableCheck() {
        List<Output> outputs = correct();
        outputs.add(new Output(Kind.MARKER, 0, 1, "k", new Fence(9, 0), new Ref(0, 4), -1, null));
        assertThat(SinkAudit.tableMatchesRule(Map.of("k", new SinkAudit.Row(new Fence(9, 0), 102L, false)), outputs)
                .problems()).isEmpty();
    }
}
