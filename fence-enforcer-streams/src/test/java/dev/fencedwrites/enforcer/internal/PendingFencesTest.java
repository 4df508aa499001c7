package dev.fencedwrites.enforcer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.Fence;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.utils.Bytes;
import org.junit.jupiter.api.Test;

/** The committed-generation rules of {@link PendingFences} (issue 17), driven by hand as the stream thread would. */
class PendingFencesTest {
    private static final Bytes KEY = Bytes.wrap("customer-42".getBytes(StandardCharsets.UTF_8));
    private static final Fence F5 = new Fence(5, 1);
    private static final Fence F7 = new Fence(7, 1);
    private static final Fence F9 = new Fence(9, 1);

    private final PendingFences pending = new PendingFences(0);

    /** The answer {@code CommittedFences} gives when the store holds {@code stored}. */
    private Fence answer(Fence stored) {
        PendingFences.Committed committed = pending.committedIfPending(KEY);
        return committed == null ? stored : committed.fence();
    }

    @Test
    void aWrittenFenceIsNotAnsweredBeforeAnyCommitIsObserved() {
        pending.written(KEY, F5, F7);

        assertThat(answer(F7)).isEqualTo(F5);
    }

    @Test
    void aKeyWithNoFenceBeforeItsFirstWriteHasNoCommittedFenceUntilTheCommit() {
        pending.written(KEY, null, F5);

        assertThat(pending.committedIfPending(KEY)).isNotNull();
        assertThat(answer(F5)).isNull();
    }

    @Test
    void aCommitBetweenTwoObservationsCommitsTheWritesMadeBeforeTheFirst() {
        pending.observe(10, 0);
        pending.written(KEY, F5, F7);
        pending.observe(10, 0);
        pending.observe(11, 0);

        assertThat(answer(F7)).isEqualTo(F7);
        assertThat(pending.size()).isZero();
    }

    @Test
    void aCommitSeenAtTheNextObservationDoesNotCoverAWriteMadeAfterThePreviousOne() {
        pending.observe(10, 0);
        pending.written(KEY, F5, F7);
        // The count rose, but the commit may have run before the write: only writes before the previous observation count.
        pending.observe(11, 0);

        assertThat(answer(F7)).isEqualTo(F5);
    }

    @Test
    void noCommitIsInferredFromTheFirstObservation() {
        pending.written(KEY, F5, F7);
        pending.observe(10, 0);

        assertThat(answer(F7)).isEqualTo(F5);
    }

    @Test
    void anUnchangedCommitCountCommitsNothing() {
        pending.observe(10, 0);
        pending.written(KEY, F5, F7);
        pending.observe(10, 0);
        pending.observe(10, 0);

        assertThat(answer(F7)).isEqualTo(F5);
    }

    @Test
    void aKeyWrittenAgainAfterACommittedGenerationAnswersItsFenceAtTheEndOfThatGeneration() {
        pending.observe(10, 0);
        pending.written(KEY, F5, F7);
        pending.observe(10, 0);
        pending.written(KEY, F7, F9);
        pending.observe(11, 0);

        assertThat(answer(F9)).isEqualTo(F7);
        assertThat(pending.size()).isOne();
    }

    @Test
    void aKeyWrittenInEveryGenerationStillAdvancesWithEachCommit() {
        pending.observe(10, 0);
        pending.written(KEY, F5, F7);
        pending.observe(11, 0);
        pending.written(KEY, F7, F9);
        pending.observe(12, 0);

        assertThat(answer(F9)).isEqualTo(F7);

        pending.observe(13, 0);

        assertThat(answer(F9)).isEqualTo(F9);
    }

    @Test
    void whileCommitsFailTheGenerationsHeldStopAtTheCapAndACommitStillClearsThem() {
        Fence stored = F5;
        pending.observe(10, 0);
        for (long token = 6; token < 6 + 2 * PendingFences.MAX_GENERATIONS; token++) {
            Fence next = new Fence(token, 1);
            pending.written(KEY, stored, next);
            stored = next;
            pending.observe(10, 0);
        }

        assertThat(pending.size()).as("one entry per generation held").isEqualTo(PendingFences.MAX_GENERATIONS);
        assertThat(answer(stored)).isEqualTo(F5);

        pending.observe(11, 0);
        pending.observe(12, 0);

        assertThat(answer(stored)).isEqualTo(stored);
        assertThat(pending.size()).isZero();
    }

    @Test
    void eachObservationRecordsWhenTheStreamThreadLastRan() {
        pending.observe(10, 1_000);
        pending.observe(10, 5_000);

        assertThat(pending.observedNanos()).isEqualTo(5_000);
    }

    @Test
    void theCommittedAnswerNeverGoesBackWhileWritesContinue() {
        Fence previous = null;
        long count = 0;
        Fence stored = null;
        for (int token = 1; token <= 200; token++) {
            Fence next = new Fence(token, 1);
            pending.written(KEY, stored, next);
            stored = next;
            if (token % 3 == 0) {
                pending.observe(token % 2 == 0 ? ++count : count, token);
            }
            Fence answered = answer(stored);
            if (previous != null) {
                assertThat(answered).as("answer after token %d", token).isNotNull();
                assertThat(answered.token()).as("answer after token %d", token).isGreaterThanOrEqualTo(previous.token());
            }
            assertThat(answered == null || answered.token() <= token).isTrue();
            previous = answered;
        }
        assertThat(previous).as("commits were observed, so the answer advanced").isNotNull();
    }
}
