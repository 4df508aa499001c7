package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.RejectionReason;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.stream.IntStream;

/**
 * What the fence store keeps for one key: its fence, and the records accepted for it since the
 * task's last known commit, each with its input offset, so that a record replayed after a crash
 * is decided against the fence as of its own offset.
 *
 * <p>Why: under {@code at_least_once} the store can be ahead of the committed input offsets (cache
 * evictions and flushes reach the changelog before the offsets are committed, and before the
 * outputs of the same records are delivered). After a {@code kill -9} the records from the
 * committed offset on are processed again; deciding them against the restored, later fence would
 * reject writes that were accepted the first time and whose accepted copy may never have left the
 * producer.
 *
 * <p>Shape: {@code base} is the key's fence (or {@code null}: none) at every input offset from
 * {@code since} up to the first accept; {@code accepts} lists each accepted record's offset
 * (ascending, all at or after {@code since}) with the key's fence after it. The current fence is
 * the last accept's, or {@code base} when there is none. Offsets are those of one input partition,
 * {@code origin}: the key's own (murmur2's, {@link #OWN}) for records read from the input, or the
 * partition a re-routed record was written to (it arrives through the repartition topic
 * and carries its input partition and offset). One writer uses one partitioner, so a key's records
 * usually come from one partition; an accept from another partition starts a new history (the
 * replays of the previous partition's records are then decided against the current fence, which
 * can reject but never accept a stale write).
 *
 * <p>Bounds: accepts before the task's last known commit are folded into {@code base} at the next
 * accept, since no replay can start before a committed offset; the processor asks for a commit
 * when a key collects {@value #COMMIT_REQUEST_ACCEPTS} accepts, and at most {@value #MAX_ACCEPTS}
 * are kept (older ones folded in; a replay from before them falls back to the current fence, which
 * can reject but never accept a stale write).
 *
 * <p>Components, as a record's: {@link #base()}, the fence at offsets {@code since} up to the first accept
 * ({@code null} when the key had none); {@link #since()}, the first input offset at which {@code base} is known to be
 * the key's fence ({@link #UNKNOWN} when there are no accepts: the 16-byte format kept no offsets); {@link #accepts()},
 * the accepted records from {@code since} on, oldest first (empty for a value without history); {@link #lease()}, the
 * etcd lease the token verifier confirmed for the current fence's token (only one lease holds a lock at a
 * revision, so a write at that token under another lease is refused without asking etcd; 0 when unknown: verification
 * off, or a value written before it); {@link #origin()}, the input partition of the offsets ({@link #OWN} for the key's
 * own, else the partition re-routed records were written to). Equal values have equal components.
 *
 * <p>Representation: the accepts are kept packed, three longs each (offset, token, seq), and {@link Accept}
 * and {@link Fence} objects are made only when asked for: every at_least_once record decodes its key's value and writes
 * the next one, so objects per accept were garbage per record (docs/dev/benchmarks.md). Immutable.
 */
public final class StoredFence {
    /** {@code origin} of offsets read from the key's own input partition (every value written before re-routing existed). */
    public static final int OWN = -1;
    /** {@code since} of a value that kept no offsets (the 16-byte format): nothing is replayed against it. */
    public static final long UNKNOWN = Long.MAX_VALUE;
    /** Accepts of one key after which the processor asks Kafka Streams to commit, so the next accept can fold them. */
    public static final int COMMIT_REQUEST_ACCEPTS = 16;
    /** Accepts of one key kept at most; reached only when commits keep failing while records are processed. */
    public static final int MAX_ACCEPTS = 1_024;
    /** Remembered rejections of one key kept at most: the oldest go first (a replay of one then decides it again). */
    public static final int MAX_REJECTIONS = 64;
    private static final long[] NONE = new long[0];

    private final Fence base;
    private final long since;
    /** Per accept, oldest first: its offset, then the key's fence after it (token, seq). */
    private final long[] history;
    private final long lease;
    private final int origin;
    /** Per remembered rejection, oldest first: its offset, then its {@link RejectionReason}'s ordinal. */
    private final long[] rejections;

    /**
     * One accepted record of the key.
     *
     * @param offset its input offset
     * @param fence  the key's fence after it
     */
    public record Accept(long offset, Fence fence) {
        /** @throws IllegalArgumentException if the offset is negative or the fence missing */
        public Accept {
            if (offset < 0) {
                throw new IllegalArgumentException("accept offset must be >= 0, got " + offset);
            }
            if (fence == null) {
                throw new IllegalArgumentException("an accept needs the fence after it");
            }
        }
    }

    /**
     * A value of the shape above.
     *
     * @throws IllegalArgumentException if there is neither a base nor an accept, an accept lies before
     *                                  {@code since}, or the accepts are not in ascending offset order
     */
    public StoredFence(Fence base, long since, List<Accept> accepts, long lease, int origin) {
        this(base, since, pack(accepts), lease, origin);
    }

    /** A value without a known lease. */
    public StoredFence(Fence base, long since, List<Accept> accepts) {
        this(base, since, accepts, 0);
    }

    /** A value whose offsets are the key's own input partition's. */
    public StoredFence(Fence base, long since, List<Accept> accepts, long lease) {
        this(base, since, accepts, lease, OWN);
    }

    /**
     * A value whose accepts are {@code history}, packed as {@link #history} is; the array is kept, not copied, so the
     * caller must not change it afterwards.
     *
     * @throws IllegalArgumentException as the public constructor, and if a token or seq is one {@link Fence} refuses
     */
    StoredFence(Fence base, long since, long[] history, long lease, int origin) {
        this(base, since, history, lease, origin, NONE);
    }

    /**
     * A value with remembered rejections: {@code rejections} holds, per rejection, its input offset (ascending, at or
     * after {@code since}, none equal to an accept's) and its reason's ordinal; kept, not copied. With rejections the base
     * may be {@code null} and there may be no accepts (a key rejected before it had a fence).
     *
     * @throws IllegalArgumentException as the other constructor, and for rejections out of order or with no such reason
     */
    StoredFence(Fence base, long since, long[] history, long lease, int origin, long[] rejections) {
        if (rejections.length % 2 != 0) {
            throw new IllegalArgumentException("remembered rejections take two longs each, got " + rejections.length);
        }
        for (int i = 0; i < rejections.length; i += 2) {
            if (rejections[i] < since || i > 0 && rejections[i] <= rejections[i - 2]) {
                throw new IllegalArgumentException("remembered rejection offsets must ascend from since " + since + ", got "
                        + rejections[i]);
            }
            if (rejections[i + 1] < 0 || rejections[i + 1] >= RejectionReason.values().length) {
                throw new IllegalArgumentException("no rejection reason " + rejections[i + 1]);
            }
        }
        if (history.length % 3 != 0) {
            throw new IllegalArgumentException("a packed history holds three longs per accept, got " + history.length);
        }
        if (lease < 0) {
            throw new IllegalArgumentException("lease must be >= 0 (0 = unknown), got " + lease);
        }
        if (origin < OWN) {
            throw new IllegalArgumentException("origin must be a partition or OWN (-1), got " + origin);
        }
        if (base == null && history.length == 0 && rejections.length == 0) {
            throw new IllegalArgumentException("a stored fence needs a base fence, an accept or a remembered rejection");
        }
        long previous = history.length == 0 ? UNKNOWN : since;
        for (int i = 0; i < history.length; i += 3) {
            long offset = history[i];
            if (offset < 0) {
                throw new IllegalArgumentException("accept offset must be >= 0, got " + offset);
            }
            if (i == 0 ? offset < previous : offset <= previous) {
                throw new IllegalArgumentException(
                        "accept offsets must ascend from since " + since + ", got " + offset + " after " + previous);
            }
            if (history[i + 1] <= 0 || history[i + 2] < Fence.NO_SEQ) {
                new Fence(history[i + 1], history[i + 2]); // throws Fence's own reason
            }
            previous = offset;
        }
        this.base = base;
        this.history = history;
        this.lease = lease;
        this.rejections = rejections;
        // Nothing to replay against without accepts or rejections, whatever since and origin were.
        boolean remembered = history.length > 0 || rejections.length > 0;
        this.since = remembered ? since : UNKNOWN;
        this.origin = remembered ? origin : OWN;
    }

    private static long[] pack(List<Accept> accepts) {
        if (accepts.isEmpty()) {
            return NONE;
        }
        long[] packed = new long[accepts.size() * 3];
        for (int i = 0; i < accepts.size(); i++) {
            Accept accept = accepts.get(i);
            packed[3 * i] = accept.offset();
            packed[3 * i + 1] = accept.fence().token();
            packed[3 * i + 2] = accept.fence().seq();
        }
        return packed;
    }

    /** A fence with no replay history: what the 16-byte format held, and what exactly_once_v2 keeps. */
    public static StoredFence of(Fence fence) {
        return of(fence, 0);
    }

    /** A fence with no replay history and the lease confirmed for its token (0: unknown). */
    public static StoredFence of(Fence fence, long lease) {
        return new StoredFence(fence, UNKNOWN, NONE, lease, OWN);
    }

    /** The fence at offsets {@code since} up to the first accept; {@code null} when the key had none. */
    public Fence base() {
        return base;
    }

    /** The first input offset at which {@link #base()} is known to be the key's fence; {@link #UNKNOWN} without accepts. */
    public long since() {
        return since;
    }

    /** The accepted records from {@link #since()} on, oldest first (made on each call; empty without history). */
    public List<Accept> accepts() {
        return IntStream.range(0, acceptCount()).mapToObj(i -> new Accept(offsetAt(i), fenceAt(i))).toList();
    }

    /** The lease confirmed for the current fence's token; 0 when unknown. */
    public long lease() {
        return lease;
    }

    /** The input partition of the offsets: {@link #OWN}, or the partition re-routed records were written to. */
    public int origin() {
        return origin;
    }

    /** How many accepts this value keeps. */
    public int acceptCount() {
        return history.length / 3;
    }

    /** The input offset of accept {@code i} (0: the oldest). */
    long offsetAt(int i) {
        return history[3 * i];
    }

    /** The token of the key's fence after accept {@code i}. */
    long tokenAt(int i) {
        return history[3 * i + 1];
    }

    /** The seq of the key's fence after accept {@code i}. */
    long seqAt(int i) {
        return history[3 * i + 2];
    }

    private Fence fenceAt(int i) {
        return new Fence(tokenAt(i), seqAt(i));
    }

    /** How many rejections this value remembers. */
    public int rejectionCount() {
        return rejections.length / 2;
    }

    /** The input offset of remembered rejection {@code i} (0: the oldest). */
    long rejectionOffsetAt(int i) {
        return rejections[2 * i];
    }

    /** The reason of remembered rejection {@code i}. */
    RejectionReason rejectionAt(int i) {
        return RejectionReason.values()[(int) rejections[2 * i + 1]];
    }

    /**
     * The reason the record at {@code offset} of input partition {@code from} was rejected for when first processed, if
     * this value remembers it (a rejection that could come out otherwise when decided again), else {@code null}.
     */
    public RejectionReason rejectedAt(int from, long offset) {
        if (from != origin) {
            return null;
        }
        for (int i = 0; i < rejectionCount(); i++) {
            if (rejectionOffsetAt(i) == offset) {
                return rejectionAt(i);
            }
        }
        return null;
    }

    /** The key's highest accepted fence: what a new record is decided against; {@code null} when it has none yet. */
    public Fence fence() {
        return history.length == 0 ? base : fenceAt(acceptCount() - 1);
    }

    /**
     * Whether the record at {@code offset} is one this value has already seen: at or after
     * {@code since} and at or before the last accept. Such a record is being processed again
     * (at_least_once replay after a crash) and is decided against {@link #fenceAt}.
     */
    public boolean remembers(long offset) {
        return remembers(OWN, offset);
    }

    /** {@link #remembers(long)} for an offset of input partition {@code from} ({@link #OWN}: the key's own). */
    public boolean remembers(int from, long offset) {
        return from == origin && (history.length > 0 || rejections.length > 0) && offset >= since && offset <= lastOffset();
    }

    /** The offset of the last accept or remembered rejection; -1 with neither. */
    private long lastOffset() {
        long accepted = history.length == 0 ? -1 : offsetAt(acceptCount() - 1);
        long rejected = rejections.length == 0 ? -1 : rejectionOffsetAt(rejectionCount() - 1);
        return Math.max(accepted, rejected);
    }

    /**
     * The fence the record at {@code offset} met when it was first processed: the fence after the
     * last accept before it, or {@code base}. For an offset this value does not
     * {@linkplain #remembers remember}, the current {@link #fence()}.
     */
    public Fence fenceAt(long offset) {
        return fenceAt(OWN, offset);
    }

    /** {@link #fenceAt(long)} for an offset of input partition {@code from}. */
    public Fence fenceAt(int from, long offset) {
        if (!remembers(from, offset)) {
            return fence();
        }
        for (int i = acceptCount() - 1; i >= 0; i--) {
            if (offsetAt(i) < offset) {
                return fenceAt(i);
            }
        }
        return base;
    }

    /** Whether the record at {@code offset} was accepted and left the key's fence at {@code fence}. */
    public boolean acceptedAt(long offset, Fence fence) {
        return acceptedAt(OWN, offset, fence);
    }

    /** {@link #acceptedAt(long, Fence)} for an offset of input partition {@code from}. */
    public boolean acceptedAt(int from, long offset, Fence fence) {
        if (from != origin || fence == null) {
            return false;
        }
        for (int i = 0; i < acceptCount(); i++) {
            if (offsetAt(i) == offset) {
                return tokenAt(i) == fence.token() && seqAt(i) == fence.seq();
            }
        }
        return false;
    }

    /**
     * The key's value after the record at {@code offset} was accepted, leaving the fence at {@code fence}.
     *
     * @param previous  the key's value before, or {@code null} when it had none
     * @param offset    the accepted record's input offset; negative when unknown (no history is kept then)
     * @param fence     the key's fence after the record
     * @param committed the task's input offset at its last commit known to the processor (0 when none is known
     *                  yet): replay never starts before it, so accepts before it are folded into the base
     */
    public static StoredFence afterAccept(StoredFence previous, long offset, Fence fence, long committed) {
        return afterAccept(previous, offset, fence, committed, 0);
    }

    /**
     * {@link #afterAccept(StoredFence, long, Fence, long)}, with {@code lease} the lease confirmed for
     * {@code fence}'s token (0: unknown).
     */
    public static StoredFence afterAccept(StoredFence previous, long offset, Fence fence, long committed, long lease) {
        return afterAccept(previous, OWN, offset, fence, committed, lease);
    }

    /**
     * {@link #afterAccept(StoredFence, long, Fence, long, long)} for a record of input partition {@code from}
     * ({@link #OWN}: the key's own); {@code committed} is the offset of that partition below which no record can be
     * processed again.
     */
    public static StoredFence afterAccept(StoredFence previous, int from, long offset, Fence fence, long committed,
            long lease) {
        if (fence == null) {
            throw new IllegalArgumentException("an accept needs the fence after it");
        }
        if (offset < 0) {
            return of(fence, lease);
        }
        if (previous == null) {
            return new StoredFence(null, 0, accept(NONE, 0, 0, offset, fence), lease, from);
        }
        int count = previous.acceptCount();
        boolean remembered = count > 0 || previous.rejectionCount() > 0;
        if (remembered && (from != previous.origin || offset < previous.since || offset <= previous.lastOffset())) {
            // Another input partition, or the input's offsets went back without a replay (offsets reset, topic
            // recreated): start the history here.
            return new StoredFence(previous.fence(), offset, accept(NONE, 0, 0, offset, fence), lease, from);
        }
        // Accepts before the commit fold into the base: no replay starts before a committed offset. Offsets ascend, so
        // they are the oldest ones; at most MAX_ACCEPTS are kept, the oldest folded first.
        int folded = 0;
        while (folded < count && previous.offsetAt(folded) < committed) {
            folded++;
        }
        folded = Math.max(folded, count + 1 - MAX_ACCEPTS);
        Fence base = folded == 0 ? previous.base : previous.fenceAt(folded - 1);
        long since = folded == 0 ? previous.since : previous.offsetAt(folded - 1) + 1;
        long[] rejections = previous.rejectionsFrom(Math.max(committed, since == UNKNOWN ? 0 : since));
        if (count == folded && since == UNKNOWN) {
            since = offset; // no offsets kept before: the fence is known to hold at this record at least
        }
        if (rejections.length > 0) {
            since = Math.min(since, rejections[0]);
        }
        return new StoredFence(base, since, accept(previous.history, folded, count, offset, fence), lease, from, rejections);
    }

    /**
     * The key's value after the record at {@code offset} of input partition {@code from} was rejected for {@code reason},
     * a rejection that could come out otherwise if the record were decided again (a check against the wall clock or a
     * limit read at start): a replay after a crash repeats it ({@link #rejectedAt}). The fence stays; rejections before
     * {@code committed} are dropped, and at most {@link #MAX_REJECTIONS} kept. A rejection from another input partition
     * than the history's, or below its last offset, is not remembered ({@code previous} comes back): the accepts' history
     * matters more.
     *
     * @param previous the key's value, or {@code null} when it has none
     * @throws IllegalArgumentException if {@code offset} is negative
     */
    public static StoredFence afterRejection(StoredFence previous, int from, long offset, RejectionReason reason,
            long committed) {
        if (offset < 0) {
            throw new IllegalArgumentException("a remembered rejection needs its input offset, got " + offset);
        }
        long[] one = {offset, reason.ordinal()};
        if (previous == null) {
            return new StoredFence(null, offset, NONE, 0, from, one);
        }
        boolean remembered = previous.acceptCount() > 0 || previous.rejectionCount() > 0;
        if (!remembered) {
            return new StoredFence(previous.fence(), offset, NONE, previous.lease, from, one);
        }
        if (from != previous.origin || offset < previous.since || offset <= previous.lastOffset()) {
            // Another input partition, or the offsets went back: remembering would drop the history the replay of the
            // accepts needs, so this rejection is not remembered.
            return previous;
        }
        long[] kept = previous.rejectionsFrom(Math.max(committed, previous.since));
        int drop = Math.max(0, kept.length / 2 + 1 - MAX_REJECTIONS);
        long[] next = new long[kept.length - 2 * drop + 2];
        System.arraycopy(kept, 2 * drop, next, 0, kept.length - 2 * drop);
        next[next.length - 2] = offset;
        next[next.length - 1] = reason.ordinal();
        long since = previous.acceptCount() > 0 ? previous.since : next[0];
        return new StoredFence(previous.base, since, previous.history, previous.lease, from, next);
    }

    /** The remembered rejections at or after {@code offset}, packed. */
    private long[] rejectionsFrom(long offset) {
        int first = 0;
        while (first < rejectionCount() && rejectionOffsetAt(first) < offset) {
            first++;
        }
        return first == 0 ? rejections : Arrays.copyOfRange(rejections, 2 * first, rejections.length);
    }

    /** Accepts {@code from} to {@code to} (exclusive) of {@code history}, then the new one. */
    private static long[] accept(long[] history, int from, int to, long offset, Fence fence) {
        long[] next = new long[3 * (to - from + 1)];
        System.arraycopy(history, 3 * from, next, 0, 3 * (to - from));
        next[next.length - 3] = offset;
        next[next.length - 2] = fence.token();
        next[next.length - 1] = fence.seq();
        return next;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof StoredFence that && Objects.equals(base, that.base) && since == that.since
                && Arrays.equals(history, that.history) && lease == that.lease && origin == that.origin
                && Arrays.equals(rejections, that.rejections);
    }

    @Override
    public int hashCode() {
        return Objects.hash(base, since, Arrays.hashCode(history), lease, origin, Arrays.hashCode(rejections));
    }

    @Override
    public String toString() {
        return "StoredFence[base=" + base + ", since=" + since + ", accepts=" + accepts() + ", lease=" + lease + ", origin="
                + origin + (rejections.length == 0 ? "" : ", rejections=" + Arrays.toString(rejections)) + "]";
    }
}
