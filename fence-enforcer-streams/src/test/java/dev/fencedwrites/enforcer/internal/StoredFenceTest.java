package dev.fencedwrites.enforcer.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.enforcer.internal.StoredFence.Accept;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The stored value's history rules: what a record at a given offset met, and how accepts are kept and folded. */
class StoredFenceTest {
    private static final Fence F51 = new Fence(5, 1);
    private static final Fence F61 = new Fence(6, 1);
    private static final Fence F62 = new Fence(6, 2);
    private static final Fence F71 = new Fence(7, 1);

    /** base 5.1 from offset 10; accepts 6.1 at 12, 6.2 at 15, 7.1 at 20. */
    private final StoredFence history = new StoredFence(F51, 10,
            List.of(new Accept(12, F61), new Accept(15, F62), new Accept(20, F71)));

    /**
     * A rejection from another input partition than the history's (a re-routed record) is not remembered: remembering it
     * would drop the accepts the replay of the key's own records needs.
     */
    @Test
    void aRejectionFromAnotherPartitionKeepsTheAcceptsHistory() {
        StoredFence history = StoredFence.afterAccept(StoredFence.afterAccept(null, 100, new Fence(6, 1), 0), 101,
                new Fence(6, 2), 0);

        StoredFence after = StoredFence.afterRejection(history, 2, 5, RejectionReason.FUTURE_TOKEN, 0);
        StoredFence own = StoredFence.afterRejection(history, StoredFence.OWN, 102, RejectionReason.FUTURE_TOKEN, 0);

        assertThat(after).isSameAs(history);
        assertThat(own.acceptCount()).isEqualTo(2);
        assertThat(own.rejectedAt(StoredFence.OWN, 102)).isEqualTo(RejectionReason.FUTURE_TOKEN);
        assertThat(own.acceptedAt(StoredFence.OWN, 101, new Fence(6, 2))).isTrue();
    }

    @Test
    void currentFenceIsTheLastAccepts() {
        assertThat(history.fence()).isEqualTo(F71);
    }

    @Test
    void remembersOffsetsFromSinceToTheLastAccept() {
        assertThat(history.remembers(9)).isFalse();
        assertThat(history.remembers(10)).isTrue();
        assertThat(history.remembers(20)).isTrue();
        assertThat(history.remembers(21)).isFalse();
    }

    @Test
    void recordAtARememberedOffsetMetTheFenceOfTheLastAcceptBeforeIt() {
        assertThat(history.fenceAt(10)).isEqualTo(F51);
        assertThat(history.fenceAt(12)).isEqualTo(F51);
        assertThat(history.fenceAt(13)).isEqualTo(F61);
        assertThat(history.fenceAt(15)).isEqualTo(F61);
        assertThat(history.fenceAt(20)).isEqualTo(F62);
    }

    @Test
    void recordOutsideTheHistoryMeetsTheCurrentFence() {
        assertThat(history.fenceAt(9)).isEqualTo(F71);
        assertThat(history.fenceAt(21)).isEqualTo(F71);
    }

    @Test
    void acceptedAtMatchesOffsetAndResultingFence() {
        assertThat(history.acceptedAt(15, F62)).isTrue();
        assertThat(history.acceptedAt(15, F61)).isFalse();
        assertThat(history.acceptedAt(14, F62)).isFalse();
    }

    @Test
    void valueWithoutHistoryRemembersNothing() {
        StoredFence legacy = StoredFence.of(F61);

        assertThat(legacy.remembers(0)).isFalse();
        assertThat(legacy.fenceAt(0)).isEqualTo(F61);
        assertThat(legacy.since()).isEqualTo(StoredFence.UNKNOWN);
    }

    @Test
    void firstAcceptOfAKeyHasNoFenceBeforeIt() {
        StoredFence first = StoredFence.afterAccept(null, 7, F61, 0);

        assertThat(first).isEqualTo(new StoredFence(null, 0, List.of(new Accept(7, F61))));
        assertThat(first.fenceAt(3)).isNull();
    }

    @Test
    void acceptAppendsAndKeepsAcceptsAtOrAfterTheLastCommit() {
        StoredFence next = StoredFence.afterAccept(history, 25, new Fence(7, 2), 12);

        assertThat(next).isEqualTo(new StoredFence(F51, 10,
                List.of(new Accept(12, F61), new Accept(15, F62), new Accept(20, F71), new Accept(25, new Fence(7, 2)))));
    }

    @Test
    void acceptFoldsAcceptsBeforeTheLastCommitIntoTheBase() {
        StoredFence next = StoredFence.afterAccept(history, 25, new Fence(7, 2), 16);

        assertThat(next).isEqualTo(new StoredFence(F62, 16, List.of(new Accept(20, F71), new Accept(25, new Fence(7, 2)))));
    }

    @Test
    void acceptAfterAValueWithoutHistoryStartsTheHistoryAtItsOwnOffset() {
        StoredFence next = StoredFence.afterAccept(StoredFence.of(F61), 40, F62, 0);

        assertThat(next).isEqualTo(new StoredFence(F61, 40, List.of(new Accept(40, F62))));
    }

    @Test
    void acceptAtAnOffsetBeforeTheHistoryStartsItAgain() {
        StoredFence next = StoredFence.afterAccept(history, 3, new Fence(8, 1), 0);

        assertThat(next).isEqualTo(new StoredFence(F71, 3, List.of(new Accept(3, new Fence(8, 1)))));
    }

    @Test
    void keepsAtMostMaxAcceptsFoldingTheOldest() {
        StoredFence value = null;
        for (int i = 0; i <= StoredFence.MAX_ACCEPTS; i++) {
            value = StoredFence.afterAccept(value, i, new Fence(6, i + 1), 0);
        }

        assertThat(value.acceptCount()).isEqualTo(StoredFence.MAX_ACCEPTS);
        assertThat(value.base()).isEqualTo(new Fence(6, 1));
        assertThat(value.since()).isEqualTo(1);
        assertThat(value.fence()).isEqualTo(new Fence(6, StoredFence.MAX_ACCEPTS + 1));
    }

    @Test
    void refusesAcceptsOutOfOffsetOrder() {
        assertThatThrownBy(() -> new StoredFence(F51, 10, List.of(new Accept(15, F61), new Accept(12, F62))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ascend");
        assertThatThrownBy(() -> new StoredFence(F51, 10, List.of(new Accept(9, F61))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ascend");
    }

    @Test
    void itsTextShowsTheRejectionsOnlyWhenItRemembersSome() {
        StoredFence accepted = StoredFence.afterAccept(null, 7, new Fence(5, 1), 0);
        StoredFence rejected = StoredFence.afterRejection(null, 0, 9, RejectionReason.STALE_TOKEN, 0);

        assertThat(accepted.toString()).startsWith("StoredFence[base=").doesNotContain("rejections");
        assertThat(rejected.toString()).contains(", rejections=[9, " + RejectionReason.STALE_TOKEN.ordinal() + "]");
    }
}
