package dev.fencedwrites.enforcer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.Fence;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.utils.Bytes;
import org.junit.jupiter.api.Test;

/**
 * The committed-generation rules of {@link PendingFences}, driven by hand as the stream thread would: it writes,
 * then commits (the count rises), on one thread.
 */
class PendingFencesTest {
    private static final Bytes KEY = Bytes.wrap("customer-42".getBytes(StandardCharsets.UTF_8));
    private static final Bytes OTHER = Bytes.wrap("customer-43".getBytes(StandardCharsets.UTF_8));
    private static final Fence F5 = new Fence(5, 1);
    private static final Fence F7 = new Fence(7, 1);
    private static final Fence F9 = new Fence(9, 1);

    private final AtomicLong commits = new AtomicLong(10);
    private final AtomicLong polls = new AtomicLong();
    private final PendingFences pending = new PendingFences(commits::get, polls::get, 0);

    /** The answer {@code CommittedFences} gives for {@code key} when the store holds {@code stored}. */
    private Fence answer(Bytes key, Fence stored) {
        PendingFences.Committed committed = pending.committedIfPending(key);
        return committed == null ? stored : committed.fence();
    }

    private Fence answer(Fence stored) {
        return answer(KEY, stored);
    }

    @Test
    void aWrittenFenceIsNotAnsweredBeforeTheThreadCommits() {
        pending.written(KEY, F5, F7);

        assertThat(answer(F7)).isEqualTo(F5);
        assertThat(pending.size()).isOne();
    }

    @Test
    void aKeyWithNoFenceBeforeItsFirstWriteHasNoCommittedFenceUntilTheCommit() {
        pending.written(KEY, null, F5);

        assertThat(pending.committedIfPending(KEY)).isNotNull();
        assertThat(answer(F5)).isNull();

        commits.incrementAndGet();

        assertThat(answer(F5)).isEqualTo(F5);
    }

    /** An idle stream thread's last write must not stay uncommitted in the answers. */
    @Test
    void aWriteThatTheStreamThreadCommitsBeforeAnyObservationIsAnsweredOnceCommittedEvenWhenNoCommitFollows() {
        pending.observe(0);
        pending.written(KEY, F5, F7);
        // An idle thread's commit interval has passed: it commits right after the write, before the observer looks again.
        commits.set(11);
        for (int observation = 0; observation < 5; observation++) {
            pending.observe(0);
        }

        assertThat(answer(F7)).isEqualTo(F7);
        assertThat(pending.size()).isZero();
    }

    @Test
    void aKeyWrittenAgainAfterACommitAnswersItsFenceAtThatCommit() {
        pending.written(KEY, F5, F7);
        commits.incrementAndGet();
        pending.written(KEY, F7, F9);

        assertThat(answer(F9)).isEqualTo(F7);
        assertThat(pending.size()).as("the committed generation was dropped").isOne();

        commits.incrementAndGet();

        assertThat(answer(F9)).isEqualTo(F9);
    }

    @Test
    void aKeyWrittenTwiceBetweenTwoCommitsAnswersItsFenceBeforeTheFirstWrite() {
        pending.written(KEY, F5, F7);
        pending.written(KEY, F7, F9);

        assertThat(answer(F9)).isEqualTo(F5);
    }

    @Test
    void aCommitCoversEveryKeyWrittenBeforeItNotOnlyTheLast() {
        pending.written(KEY, F5, F7);
        pending.written(OTHER, null, F5);
        commits.incrementAndGet();
        pending.written(OTHER, F5, F9);

        assertThat(answer(KEY, F7)).isEqualTo(F7);
        assertThat(answer(OTHER, F9)).isEqualTo(F5);
    }

    @Test
    void whileCommitsFailOneEntryIsHeldPerKeyAndTheAnswerStaysAtTheLastCommittedFence() {
        Fence stored = F5;
        for (long token = 6; token < 200; token++) {
            Fence next = new Fence(token, 1);
            pending.written(KEY, stored, next);
            stored = next;
        }

        assertThat(pending.size()).isOne();
        assertThat(answer(stored)).isEqualTo(F5);

        commits.incrementAndGet();

        assertThat(answer(stored)).isEqualTo(stored);
    }

    @Test
    void aClosedSetSaysSo() {
        assertThat(pending.closed()).isFalse();

        pending.close();

        assertThat(pending.closed()).isTrue();
    }

    @Test
    void anObservationRecordsWhenItLastSawTheStreamThreadPoll() {
        polls.set(3);
        pending.observe(1_000);
        pending.observe(5_000);

        assertThat(pending.polledNanos()).as("no poll since the first observation").isEqualTo(1_000);

        polls.set(4);
        pending.observe(9_000);

        assertThat(pending.polledNanos()).isEqualTo(9_000);
    }

    @Test
    void theCommittedAnswerNeverGoesBackAndReachesTheStoreAtEachCommit() {
        Fence previous = null;
        Fence stored = null;
        for (int token = 1; token <= 200; token++) {
            Fence next = new Fence(token, 1);
            pending.written(KEY, stored, next);
            stored = next;
            boolean commit = token % 3 == 0;
            if (commit) {
                commits.incrementAndGet();
            }
            Fence answered = answer(stored);
            if (commit) {
                assertThat(answered).as("answer right after the commit that followed token %d", token).isEqualTo(stored);
            }
            if (previous != null) {
                assertThat(answered).as("answer after token %d", token).isNotNull();
                assertThat(answered.token()).as("answer after token %d", token).isGreaterThanOrEqualTo(previous.token());
            }
            assertThat(answered == null || answered.token() <= token).isTrue();
            previous = answered;
        }
    }

    @Test
    void aGenerationThatReachesTheBoundAsksForACommitOnceAndTheCommitDropsIt() {
        int asked = 0;
        for (int i = 0; i < PendingFences.COMMIT_REQUEST_KEYS; i++) {
            Bytes key = Bytes.wrap(("customer-" + i).getBytes(StandardCharsets.UTF_8));
            asked += pending.written(key, null, F5) ? 1 : 0;
            // A key written again adds nothing and asks nothing.
            asked += pending.written(key, F5, F7) ? 1 : 0;
        }
        assertThat(asked).as("asked when the generation reached the bound").isOne();
        assertThat(pending.size()).isEqualTo(PendingFences.COMMIT_REQUEST_KEYS);

        boolean past = pending.written(Bytes.wrap("one-more".getBytes(StandardCharsets.UTF_8)), null, F5);

        assertThat(past).as("asked once per generation, not on every write past the bound").isFalse();

        commits.incrementAndGet();
        pending.written(KEY, F7, F9);

        assertThat(pending.size()).as("the committed generation was dropped").isOne();
    }
}
