package dev.fencedwrites.enforcer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.Fence;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.utils.Bytes;
import org.junit.jupiter.api.Test;

/** The committed-generation rules of {@link PendingFences} (issue 17), driven by hand as the stream thread would. */
class PendingFencesTest {
    private static final Bytes KEY = Bytes.wrap("customer-42".getBytes(StandardCharsets.UTF_8));
    private static final Fence F5 = new Fence(5, 1);
    private static final Fence F7 = new Fence(7, 1);
    private static final Fence F9 = new Fence(9, 1);

    private final AtomicLong commits = new AtomicLong();
    private final AtomicLong polls = new AtomicLong();
    private final PendingFences pending = new PendingFences(commits::get, polls::get, 0);

    /** An observation that reads {@code commitCount} as the stream thread's commit count, at {@code nowNanos}. */
    private void observe(long commitCount, long nowNanos) {
        commits.set(commitCount);
        pending.observe(nowNanos);
    }

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
        observe(10, 0);
        pending.written(KEY, F5, F7);
        observe(10, 0);
        observe(11, 0);

        assertThat(answer(F7)).isEqualTo(F7);
        assertThat(pending.size()).isZero();
    }

    @Test
    void aCommitSeenAtTheNextObservationDoesNotCoverAWriteMadeAfterThePreviousOne() {
        observe(10, 0);
        pending.written(KEY, F5, F7);
        // The count rose, but the commit may have run before the write: only writes before the previous observation count.
        observe(11, 0);

        assertThat(answer(F7)).isEqualTo(F5);
    }

    @Test
    void noCommitIsInferredFromTheFirstObservation() {
        pending.written(KEY, F5, F7);
        observe(10, 0);

        assertThat(answer(F7)).isEqualTo(F5);
    }

    @Test
    void anUnchangedCommitCountCommitsNothing() {
        observe(10, 0);
        pending.written(KEY, F5, F7);
        observe(10, 0);
        observe(10, 0);

        assertThat(answer(F7)).isEqualTo(F5);
    }

    @Test
    void aKeyWrittenAgainAfterACommittedGenerationAnswersItsFenceAtTheEndOfThatGeneration() {
        observe(10, 0);
        pending.written(KEY, F5, F7);
        observe(10, 0);
        pending.written(KEY, F7, F9);
        observe(11, 0);

        assertThat(answer(F9)).isEqualTo(F7);
        assertThat(pending.size()).isOne();
    }

    @Test
    void aKeyWrittenInEveryGenerationStillAdvancesWithEachCommit() {
        observe(10, 0);
        pending.written(KEY, F5, F7);
        observe(11, 0);
        pending.written(KEY, F7, F9);
        observe(12, 0);

        assertThat(answer(F9)).isEqualTo(F7);

        observe(13, 0);

        assertThat(answer(F9)).isEqualTo(F9);
    }

    @Test
    void whileCommitsFailTheGenerationsHeldStopAtTheCapAndACommitStillClearsThem() {
        Fence stored = F5;
        observe(10, 0);
        for (long token = 6; token < 6 + 2 * PendingFences.MAX_GENERATIONS; token++) {
            Fence next = new Fence(token, 1);
            pending.written(KEY, stored, next);
            stored = next;
            observe(10, 0);
        }

        assertThat(pending.size()).as("one entry per generation held").isEqualTo(PendingFences.MAX_GENERATIONS);
        assertThat(answer(stored)).isEqualTo(F5);

        // The first observation after the commit still ends no epoch (the cap is checked before the count is read).
        observe(11, 0);
        observe(12, 0);
        observe(13, 0);

        assertThat(answer(stored)).isEqualTo(stored);
        assertThat(pending.size()).isZero();
    }

    @Test
    void anObservationRecordsWhenItLastSawTheStreamThreadPoll() {
        polls.set(3);
        observe(10, 1_000);
        observe(10, 5_000);

        assertThat(pending.polledNanos()).as("no poll since the first observation").isEqualTo(1_000);

        polls.set(4);
        observe(10, 9_000);

        assertThat(pending.polledNanos()).isEqualTo(9_000);
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
                observe(token % 2 == 0 ? ++count : count, token);
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
