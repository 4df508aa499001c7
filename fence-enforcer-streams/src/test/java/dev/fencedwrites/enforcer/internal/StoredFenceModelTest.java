package dev.fencedwrites.enforcer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.enforcer.internal.StoredFence.Accept;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The history is packed into longs; this checks the packed {@link StoredFence} against the list-of-records model it
 * replaced (the replay rules, written the plain way), over random sequences of accepts, commits, offset resets and
 * re-routed partitions: the same components after every accept, the same answers to every replay question, and the
 * same value after a round trip through {@link FenceSerde}.
 */
class StoredFenceModelTest {
    /** The value as the list-based record kept it. */
    private record Model(Fence base, long since, List<Accept> accepts, long lease, int origin) {
        Fence fence() {
            return accepts.isEmpty() ? base : accepts.get(accepts.size() - 1).fence();
        }

        boolean remembers(int from, long offset) {
            return from == origin && !accepts.isEmpty() && offset >= since
                    && offset <= accepts.get(accepts.size() - 1).offset();
        }

        Fence fenceAt(int from, long offset) {
            if (!remembers(from, offset)) {
                return fence();
            }
            Fence met = base;
            for (Accept accept : accepts) {
                if (accept.offset() < offset) {
                    met = accept.fence();
                }
            }
            return met;
        }

        boolean acceptedAt(int from, long offset, Fence fence) {
            return from == origin && accepts.stream().anyMatch(a -> a.offset() == offset && a.fence().equals(fence));
        }

        /** afterAccept as first written: fold each accept before the commit, append, trim the oldest. */
        static Model after(Model previous, int from, long offset, Fence fence, long committed, long lease) {
            if (previous == null) {
                return new Model(null, 0, List.of(new Accept(offset, fence)), lease, from);
            }
            List<Accept> accepts = previous.accepts;
            if (!accepts.isEmpty() && (from != previous.origin || offset < previous.since
                    || offset <= accepts.get(accepts.size() - 1).offset())) {
                return new Model(previous.fence(), offset, List.of(new Accept(offset, fence)), lease, from);
            }
            Fence base = previous.base;
            long since = previous.since;
            List<Accept> kept = new ArrayList<>();
            for (Accept accept : accepts) {
                if (accept.offset() < committed) {
                    base = accept.fence();
                    since = accept.offset() + 1;
                } else {
                    kept.add(accept);
                }
            }
            if (kept.isEmpty() && since == StoredFence.UNKNOWN) {
                since = offset;
            }
            kept.add(new Accept(offset, fence));
            while (kept.size() > StoredFence.MAX_ACCEPTS) {
                Accept oldest = kept.remove(0);
                base = oldest.fence();
                since = oldest.offset() + 1;
            }
            return new Model(base, since, List.copyOf(kept), lease, from);
        }
    }

    @Test
    void thePackedValueAnswersAsTheListModelOverRandomHistories() {
        Random random = new Random(19);
        int checked = 0;
        int longest = 0;
        for (int run = 0; run < 300; run++) {
            // Every 50th run commits nothing for longer than MAX_ACCEPTS accepts, so that the oldest are folded.
            int steps = run % 50 == 0 ? StoredFence.MAX_ACCEPTS + 200 : 1 + random.nextInt(120);
            StoredFence packed = run % 3 == 0 ? StoredFence.of(new Fence(3, 1), random.nextInt(3)) : null;
            Model model = packed == null
                    ? null
                    : new Model(packed.base(), packed.since(), List.of(), packed.lease(),
                            packed.origin());
            long offset = random.nextInt(100);
            long committed = 0;
            long token = 5;
            long seq = 0;
            int from = StoredFence.OWN;
            boolean unbroken = run % 50 == 0; // no commit, no reset, one partition: the history grows past MAX_ACCEPTS
            for (int step = 0; step < steps; step++) {
                offset += !unbroken && random.nextInt(10) == 0 ? -random.nextInt(50) : 1 + random.nextInt(4);
                offset = Math.max(0, offset);
                if (!unbroken && random.nextInt(8) == 0
                        || unbroken && packed != null && packed.acceptCount() == StoredFence.MAX_ACCEPTS
                                && random.nextInt(20) == 0) {
                    // A full history then meets a commit: folding and trimming in one accept.
                    committed = Math.max(committed, offset - random.nextInt(unbroken ? 2_000 : 20));
                }
                if (!unbroken && random.nextInt(40) == 0) {
                    from = random.nextInt(4) - 1; // OWN or a partition a re-routed record came from
                }
                if (random.nextInt(6) == 0) {
                    token += 1 + random.nextInt(3);
                    seq = random.nextBoolean() ? Fence.NO_SEQ : 0;
                } else {
                    seq++;
                }
                Fence fence = new Fence(token, seq);
                long lease = random.nextInt(4) == 0 ? 0 : 1 + random.nextInt(1_000);
                packed = StoredFence.afterAccept(packed, from, offset, fence, committed, lease);
                model = Model.after(model, from, offset, fence, committed, lease);
                assertSame(packed, model, random);
                checked++;
                longest = Math.max(longest, packed.acceptCount());
            }
        }
        assertThat(checked).isGreaterThan(10_000);
        assertThat(longest).as("a history reached MAX_ACCEPTS").isEqualTo(StoredFence.MAX_ACCEPTS);
    }

    private static void assertSame(StoredFence packed, Model model, Random random) {
        assertThat(packed.base()).isEqualTo(model.base());
        assertThat(packed.since()).isEqualTo(model.accepts().isEmpty() ? StoredFence.UNKNOWN : model.since());
        assertThat(packed.accepts()).isEqualTo(model.accepts());
        assertThat(packed.lease()).isEqualTo(model.lease());
        assertThat(packed.origin()).isEqualTo(model.origin());
        assertThat(packed.fence()).isEqualTo(model.fence());
        assertThat(packed).isEqualTo(new StoredFence(model.base(), model.since(), model.accepts(), model.lease(),
                model.origin()));
        assertThat(FenceSerde.read(FenceSerde.write(packed))).isEqualTo(packed);
        List<Accept> accepts = model.accepts();
        long first = model.since() == StoredFence.UNKNOWN ? accepts.get(0).offset() : model.since();
        long last = accepts.get(accepts.size() - 1).offset();
        for (int probe = 0; probe < 6; probe++) {
            int from = random.nextInt(3) == 0 ? random.nextInt(4) - 1 : model.origin();
            // Anywhere from before the history to past its end, or exactly at an accept with that accept's fence.
            Accept at = accepts.get(random.nextInt(accepts.size()));
            long offset = probe % 2 == 0
                    ? at.offset()
                    : Math.max(0, first - 3 + (long) (random.nextDouble() * (last - first + 6)));
            Fence fence = probe % 2 == 0 ? at.fence() : accepts.get(random.nextInt(accepts.size())).fence();
            assertThat(packed.remembers(from, offset)).isEqualTo(model.remembers(from, offset));
            assertThat(packed.fenceAt(from, offset)).isEqualTo(model.fenceAt(from, offset));
            assertThat(packed.acceptedAt(from, offset, fence)).isEqualTo(model.acceptedAt(from, offset, fence));
        }
    }
}
