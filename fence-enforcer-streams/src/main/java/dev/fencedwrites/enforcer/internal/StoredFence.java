package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.Fence;
import java.util.ArrayList;
import java.util.List;

/**
 * What the fence store keeps for one key: its fence, and the records accepted for it since the
 * task's last known commit, each with its input offset, so that a record replayed after a crash
 * is decided against the fence as of its own offset (issue 13).
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
 * partition a re-routed record was written to (issue 17: it arrives through the repartition topic
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
 * @param base    the fence at offsets {@code since} up to the first accept; {@code null} when the key had none
 * @param since   the first input offset at which {@code base} is known to be the key's fence;
 *                {@link #UNKNOWN} when there are no accepts (the 16-byte format kept no offsets)
 * @param accepts the accepted records from {@code since} on, oldest first; empty for a value without history
 * @param lease   the etcd lease the token verifier confirmed for the current fence's token (issue 14: only
 *                one lease holds a lock at a revision, so a write at that token under another lease is
 *                refused without asking etcd); 0 when unknown (verification off, or a value written before it)
 * @param origin  the input partition of the offsets: {@link #OWN} for the key's own, else the partition re-routed
 *                records were written to (issue 17)
 */
public record StoredFence(Fence base, long since, List<Accept> accepts, long lease, int origin) {
    /** {@code origin} of offsets read from the key's own input partition (every value before issue 17). */
    public static final int OWN = -1;
    /** {@code since} of a value that kept no offsets (the 16-byte format): nothing is replayed against it. */
    public static final long UNKNOWN = Long.MAX_VALUE;
    /** Accepts of one key after which the processor asks Kafka Streams to commit, so the next accept can fold them. */
    public static final int COMMIT_REQUEST_ACCEPTS = 16;
    /** Accepts of one key kept at most; reached only when commits keep failing while records are processed. */
    public static final int MAX_ACCEPTS = 1_024;

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
     * Validates the shape.
     *
     * @throws IllegalArgumentException if there is neither a base nor an accept, an accept lies before
     *                                  {@code since}, or the accepts are not in ascending offset order
     */
    public StoredFence {
        accepts = List.copyOf(accepts);
        if (lease < 0) {
            throw new IllegalArgumentException("lease must be >= 0 (0 = unknown), got " + lease);
        }
        if (origin < OWN) {
            throw new IllegalArgumentException("origin must be a partition or OWN (-1), got " + origin);
        }
        if (base == null && accepts.isEmpty()) {
            throw new IllegalArgumentException("a stored fence needs a base fence or an accept");
        }
        if (accepts.isEmpty()) {
            since = UNKNOWN; // nothing to replay against, whatever it was
            origin = OWN;
        }
        long previous = since;
        for (int i = 0; i < accepts.size(); i++) {
            long offset = accepts.get(i).offset();
            if (i == 0 ? offset < since : offset <= previous) {
                throw new IllegalArgumentException(
                        "accept offsets must ascend from since " + since + ", got " + offset + " after " + previous);
            }
            previous = offset;
        }
    }

    /** A value without a known lease. */
    public StoredFence(Fence base, long since, List<Accept> accepts) {
        this(base, since, accepts, 0);
    }

    /** A value whose offsets are the key's own input partition's. */
    public StoredFence(Fence base, long since, List<Accept> accepts, long lease) {
        this(base, since, accepts, lease, OWN);
    }

    /** A fence with no replay history: what the 16-byte format held, and what exactly_once_v2 keeps. */
    public static StoredFence of(Fence fence) {
        return of(fence, 0);
    }

    /** A fence with no replay history and the lease confirmed for its token (0: unknown). */
    public static StoredFence of(Fence fence, long lease) {
        return new StoredFence(fence, UNKNOWN, List.of(), lease, OWN);
    }

    /** The key's highest accepted fence: what a new record is decided against. */
    public Fence fence() {
        return accepts.isEmpty() ? base : accepts.get(accepts.size() - 1).fence();
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
        return from == origin && !accepts.isEmpty() && offset >= since && offset <= accepts.get(accepts.size() - 1).offset();
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
        for (int i = accepts.size() - 1; i >= 0; i--) {
            if (accepts.get(i).offset() < offset) {
                return accepts.get(i).fence();
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
        if (from != origin) {
            return false;
        }
        for (Accept accept : accepts) {
            if (accept.offset() == offset) {
                return accept.fence().equals(fence);
            }
        }
        return false;
    }

    /** How many accepts this value keeps. */
    public int acceptCount() {
        return accepts.size();
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
        if (offset < 0) {
            return of(fence, lease);
        }
        if (previous == null) {
            return new StoredFence(null, 0, List.of(new Accept(offset, fence)), lease, from);
        }
        if (!previous.accepts.isEmpty() && (from != previous.origin || offset < previous.since
                || offset <= previous.accepts.get(previous.accepts.size() - 1).offset())) {
            // Another input partition, or the input's offsets went back without a replay (offsets reset, topic
            // recreated): start the history here.
            return new StoredFence(previous.fence(), offset, List.of(new Accept(offset, fence)), lease, from);
        }
        Fence base = previous.base;
        long since = previous.since;
        List<Accept> kept = new ArrayList<>(previous.accepts.size() + 1);
        for (Accept accept : previous.accepts) {
            if (accept.offset() < committed) {
                base = accept.fence();
                since = accept.offset() + 1;
            } else {
                kept.add(accept);
            }
        }
        if (kept.isEmpty() && since == UNKNOWN) {
            since = offset; // no offsets kept before: the fence is known to hold at this record at least
        }
        kept.add(new Accept(offset, fence));
        while (kept.size() > MAX_ACCEPTS) {
            Accept oldest = kept.remove(0);
            base = oldest.fence();
            since = oldest.offset() + 1;
        }
        return new StoredFence(base, since, kept, lease, from);
    }
}
