package dev.fencedwrites.enforcer.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.RejectionReason;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The edges of a stored value: what the checks on a value read back from the changelog let through and what they refuse
 * (a corrupt value must fail, never be decided against), and where the replay history starts over or is trimmed.
 */
class StoredFenceBoundariesTest {
    private static final Fence F51 = new Fence(5, 1);
    private static final int STALE = RejectionReason.STALE_TOKEN.ordinal();

    @Test
    void aRememberedRejectionMayBeAtSinceButTwoMayNotShareAnOffset() {
        StoredFence atSince = new StoredFence(F51, 10, new long[0], 0, StoredFence.OWN, new long[]{10, STALE});
        assertThat(atSince.rejectedAt(StoredFence.OWN, 10)).isEqualTo(RejectionReason.STALE_TOKEN);
        assertThatThrownBy(() -> new StoredFence(F51, 10, new long[0], 0, StoredFence.OWN, new long[]{9, STALE}))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ascend");
        assertThatThrownBy(() -> new StoredFence(F51, 10, new long[0], 0, StoredFence.OWN, new long[]{11, STALE, 11, STALE}))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ascend");
    }

    @Test
    void aRememberedReasonIsAnOrdinalOfRejectionReason() {
        int last = RejectionReason.values().length - 1;
        assertThat(new StoredFence(F51, 0, new long[0], 0, StoredFence.OWN, new long[]{0, 0, 1, last}).rejectedAt(
                StoredFence.OWN, 1)).isEqualTo(RejectionReason.values()[last]);
        assertThatThrownBy(() -> new StoredFence(F51, 0, new long[0], 0, StoredFence.OWN, new long[]{0, last + 1}))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no rejection reason");
        assertThatThrownBy(() -> new StoredFence(F51, 0, new long[0], 0, StoredFence.OWN, new long[]{0, -1}))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no rejection reason");
    }

    @Test
    void theFirstAcceptMayBeAtSinceButTwoAcceptsMayNotShareAnOffset() {
        StoredFence atSince = new StoredFence(F51, 10, new long[]{10, 6, 1}, 0, StoredFence.OWN);
        assertThat(atSince.fenceAt(10)).isEqualTo(F51);
        assertThat(atSince.fence()).isEqualTo(new Fence(6, 1));
        assertThatThrownBy(() -> new StoredFence(F51, 10, new long[]{9, 6, 1}, 0, StoredFence.OWN))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ascend");
        assertThatThrownBy(() -> new StoredFence(F51, 10, new long[]{11, 6, 1, 11, 6, 2}, 0, StoredFence.OWN))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ascend");
    }

    @Test
    void anAcceptedTokenOfZeroOrASeqBelowAbsentIsRefused() {
        assertThatThrownBy(() -> new StoredFence(F51, 10, new long[]{10, 0, 1}, 0, StoredFence.OWN))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("fencing token must be positive");
        assertThatThrownBy(() -> new StoredFence(F51, 10, new long[]{10, 6, -2}, 0, StoredFence.OWN))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("seq");
        assertThat(new StoredFence(F51, 10, new long[]{10, 6, Fence.NO_SEQ}, 0, StoredFence.OWN).fence())
                .isEqualTo(Fence.of(6));
    }

    @Test
    void aValueWithNothingToReplayForgetsSinceAndOrigin() {
        StoredFence onlyBase = new StoredFence(F51, 10, new long[0], 7, 2);
        assertThat(onlyBase.since()).isEqualTo(StoredFence.UNKNOWN);
        assertThat(onlyBase.origin()).isEqualTo(StoredFence.OWN);
        assertThat(onlyBase.lease()).isEqualTo(7);
        StoredFence oneAccept = new StoredFence(F51, 10, new long[]{10, 6, 1}, 7, 2);
        assertThat(oneAccept.since()).isEqualTo(10);
        assertThat(oneAccept.origin()).isEqualTo(2);
    }

    @Test
    void anAcceptAtTheLastRememberedOffsetStartsTheHistoryOver() {
        StoredFence two = StoredFence.afterAccept(StoredFence.afterAccept(null, 100, new Fence(6, 1), 0), 101, new Fence(6, 2),
                0);

        StoredFence again = StoredFence.afterAccept(two, 101, new Fence(7, 1), 0);

        assertThat(again.acceptCount()).isEqualTo(1);
        assertThat(again.since()).isEqualTo(101);
        assertThat(again.fenceAt(101)).isEqualTo(new Fence(6, 2));
        assertThat(again.fence()).isEqualTo(new Fence(7, 1));
    }

    @Test
    void aRejectionAtTheLastRememberedOffsetIsNotRemembered() {
        StoredFence one = StoredFence.afterAccept(null, 100, new Fence(6, 1), 0);

        assertThat(StoredFence.afterRejection(one, StoredFence.OWN, 100, RejectionReason.FUTURE_TOKEN, 0)).isSameAs(one);
        StoredFence next = StoredFence.afterRejection(one, StoredFence.OWN, 101, RejectionReason.FUTURE_TOKEN, 0);
        assertThat(next.rejectedAt(StoredFence.OWN, 101)).isEqualTo(RejectionReason.FUTURE_TOKEN);
        assertThat(next.since()).as("the accepts keep their since").isEqualTo(one.since());
        assertThat(next.acceptedAt(StoredFence.OWN, 100, new Fence(6, 1))).isTrue();
    }

    @Test
    void atMostMaxRejectionsAreRememberedTheOldestDroppedFirst() {
        StoredFence value = null;
        int total = StoredFence.MAX_REJECTIONS + 3;
        for (int offset = 0; offset < total; offset++) {
            value = StoredFence.afterRejection(value, StoredFence.OWN, offset, RejectionReason.FUTURE_TOKEN, 0);
        }

        assertThat(value.rejectionCount()).isEqualTo(StoredFence.MAX_REJECTIONS);
        assertThat(value.rejectedAt(StoredFence.OWN, 2)).isNull();
        assertThat(value.rejectedAt(StoredFence.OWN, 3)).isEqualTo(RejectionReason.FUTURE_TOKEN);
        assertThat(value.rejectedAt(StoredFence.OWN, total - 1)).isEqualTo(RejectionReason.FUTURE_TOKEN);
        assertThat(value.since()).isEqualTo(3);
    }

    @Test
    void rejectionsBeforeTheCommittedOffsetAreDropped() {
        StoredFence value = null;
        for (int offset = 0; offset < 5; offset++) {
            value = StoredFence.afterRejection(value, StoredFence.OWN, offset, RejectionReason.FUTURE_TOKEN, 0);
        }

        StoredFence after = StoredFence.afterRejection(value, StoredFence.OWN, 5, RejectionReason.TOO_LARGE, 3);

        assertThat(after.rejectionCount()).isEqualTo(3);
        assertThat(after.rejectedAt(StoredFence.OWN, 2)).isNull();
        assertThat(after.rejectedAt(StoredFence.OWN, 3)).isEqualTo(RejectionReason.FUTURE_TOKEN);
        assertThat(after.rejectedAt(StoredFence.OWN, 5)).isEqualTo(RejectionReason.TOO_LARGE);
    }

    @Test
    void anAcceptWithoutAnOffsetKeepsNoHistory() {
        StoredFence two = StoredFence.afterAccept(StoredFence.afterAccept(null, 100, new Fence(6, 1), 0), 101, new Fence(6, 2),
                0);

        StoredFence unknown = StoredFence.afterAccept(two, -1, new Fence(7, 1), 0, 9);

        assertThat(unknown).isEqualTo(StoredFence.of(new Fence(7, 1), 9));
        assertThat(unknown.acceptCount()).isZero();
        assertThat(unknown.remembers(101)).isFalse();
    }

    @Test
    void aRejectionOfAKeyWithOnlyAFenceIsRememberedFromItsOffset() {
        StoredFence onlyBase = StoredFence.of(F51, 9);

        StoredFence after = StoredFence.afterRejection(onlyBase, StoredFence.OWN, 40, RejectionReason.FUTURE_TOKEN, 0);

        assertThat(after.fence()).isEqualTo(F51);
        assertThat(after.lease()).isEqualTo(9);
        assertThat(after.since()).isEqualTo(40);
        assertThat(after.rejectedAt(StoredFence.OWN, 40)).isEqualTo(RejectionReason.FUTURE_TOKEN);
    }

    @Test
    void remembersExactlyTheOffsetsFromSinceToTheLastAcceptOrRejection() {
        StoredFence value = new StoredFence(F51, 10, new long[]{12, 6, 1}, 0, StoredFence.OWN, new long[]{15, STALE});

        assertThat(value.remembers(9)).isFalse();
        assertThat(value.remembers(10)).isTrue();
        assertThat(value.remembers(15)).isTrue();
        assertThat(value.remembers(16)).isFalse();
        assertThat(value.remembers(2, 12)).as("another input partition").isFalse();
        assertThat(StoredFence.of(F51).remembers(0)).as("nothing to replay").isFalse();
    }

    @Test
    void valuesDifferingInAnyPartAreNotEqual() {
        StoredFence value = new StoredFence(F51, 10, new long[]{12, 6, 1}, 3, StoredFence.OWN, new long[]{15, STALE});

        assertThat(value).isEqualTo(new StoredFence(F51, 10, new long[]{12, 6, 1}, 3, StoredFence.OWN, new long[]{15, STALE}))
                .hasSameHashCodeAs(new StoredFence(F51, 10, new long[]{12, 6, 1}, 3, StoredFence.OWN, new long[]{15, STALE}));
        assertThat(value).isNotEqualTo(new StoredFence(F51, 10, new long[]{12, 6, 1}, 4, StoredFence.OWN, new long[]{15, STALE}))
                .isNotEqualTo(new StoredFence(F51, 10, new long[]{12, 6, 2}, 3, StoredFence.OWN, new long[]{15, STALE}))
                .isNotEqualTo(new StoredFence(F51, 10, new long[]{12, 6, 1}, 3, StoredFence.OWN, new long[]{16, STALE}))
                .isNotEqualTo(StoredFence.of(new Fence(6, 1), 3));
        assertThat(value.toString()).contains("5.1", "6.1");
        assertThat(new StoredFence(F51, 10, List.of())).isEqualTo(StoredFence.of(F51));
    }
}
