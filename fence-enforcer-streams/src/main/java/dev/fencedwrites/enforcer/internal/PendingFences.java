package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.Fence;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import org.apache.kafka.common.utils.Bytes;

/**
 * The keys of one task whose fence in the state store may not be committed yet, each with the last fence known to be
 * committed ({@code null}: none, so {@code /fences/{key}} answers 404), so that interactive queries answer only committed
 * fences (issue 17).
 *
 * <p>Why: under {@code exactly_once_v2} the store holds the writes of the open transaction, which is aborted if the
 * instance dies or is fenced; the next owner restores the changelog as committed and re-decides from the committed
 * offsets, so an answer read from the store could be higher than any fence the key will ever have had, and a later answer
 * lower. Under {@code at_least_once} the store's cache holds values not yet in the changelog, lost the same way.
 *
 * <p>How a write becomes committed: Kafka Streams 4.3.1 records its stream thread's {@code commit-total} (group
 * {@code stream-thread-metrics}) in {@code StreamThread.runOnce} right after {@code TaskManager.commit} returned without
 * throwing, i.e. after the transaction committed (exactly_once_v2) or the offsets were committed with {@code commitSync}
 * after the caches and the producer were flushed (at_least_once), and before it processes another record; a failed or
 * timed-out commit throws first. An observation ({@link #observe}, on any thread) ends the current epoch, then reads that
 * count. A write reads the epoch before it records its key here and puts the store. A commit counted after an
 * observation's read therefore began after every write of an epoch it ended (had the commit begun before such a write, it
 * would have finished and been counted before the write read the epoch, so before the observation read the count), and
 * covered them: when the count rose between two observations, the epochs ended by the earlier one are committed.
 *
 * <p>Shape: one map per epoch with writes (a generation), from key to the fence the key had before its first write of that
 * epoch. Committed generations are dropped whole. The committed fence of a key is its value in the oldest generation still
 * held that has it (its fence before the first write that may not be committed), else the store's.
 *
 * <p>Threads: {@link #written} runs on the task's stream thread; {@link #observe} on the observer's; {@link
 * #committedIfPending} on any (the HTTP server's). A write records its key here before it puts the new fence into the
 * store, and a reader reads the store before it asks here: a reader that saw the new fence in the store sees the key
 * pending.
 *
 * <p>Cost and memory: one volatile read and one {@code putIfAbsent} per accepted record; a commit drops whole maps. Held:
 * the keys written in about two observation intervals and one commit interval. While commits fail, at most {@value
 * #MAX_GENERATIONS} epochs are ended; the last one then takes every write (at most one entry per key of the store).
 */
public final class PendingFences {
    /** The most generations held: past it, observations end no epoch until a commit is observed. */
    static final int MAX_GENERATIONS = 64;
    /** Stands for "no fence" in a generation's map. */
    private static final Object NONE = new Object();

    private final LongSupplier commitCount;
    private final LongSupplier pollCount;
    /** Oldest first; replaced whole (copy on write). */
    private final AtomicReference<List<Generation>> generations = new AtomicReference<>(List.of());
    /** The epoch writes are tagged with now; only observations move it. */
    private volatile long epoch = 1;
    /** The generation the stream thread writes to; stream thread only. */
    private Generation current = new Generation(0, Map.of());
    /** When an observation last saw the stream thread's poll count change ({@link System#nanoTime}). */
    private volatile long polledNanos;
    // Observer state, guarded by this.
    private long countAtPrevious = -1;
    private long endedAtPrevious;
    private long pollsAtPrevious = -1;

    /** The fences keys had before their first write of one epoch. */
    private record Generation(long epoch, Map<Bytes, Object> before) {
    }

    /** The answer for a pending key: its last committed fence, or {@code null} when it has none committed. */
    public record Committed(Fence fence) {
    }

    /**
     * A set for a task whose stream thread runs now ({@code nowNanos}).
     *
     * @param commitCount the stream thread's {@code commit-total}
     * @param pollCount   the stream thread's {@code poll-total}
     */
    public PendingFences(LongSupplier commitCount, LongSupplier pollCount, long nowNanos) {
        this.commitCount = commitCount;
        this.pollCount = pollCount;
        this.polledNanos = nowNanos;
    }

    /**
     * The stream thread is about to put {@code after} into the store for {@code key}, whose value was {@code before}
     * ({@code null}: none); call before the put.
     */
    public void written(Bytes key, Fence before, Fence after) {
        long now = epoch;
        if (now != current.epoch()) {
            Generation started = new Generation(now, new ConcurrentHashMap<>());
            generations.updateAndGet(held -> {
                List<Generation> next = new ArrayList<>(held);
                next.add(started);
                return List.copyOf(next);
            });
            current = started;
        }
        current.before().putIfAbsent(key, before == null ? NONE : before);
    }

    /**
     * One observation at {@code nowNanos}: ends the current epoch (unless {@value #MAX_GENERATIONS} generations are held),
     * then reads the commit count, and drops the generations the count proves committed.
     */
    public synchronized void observe(long nowNanos) {
        long ending = epoch;
        boolean ended = generations.get().size() < MAX_GENERATIONS;
        if (ended) {
            epoch = ending + 1;
        }
        long count = commitCount.getAsLong();
        if (countAtPrevious >= 0 && count > countAtPrevious) {
            long committedUpTo = endedAtPrevious;
            generations.updateAndGet(held -> held.stream().filter(g -> g.epoch() > committedUpTo).toList());
        }
        countAtPrevious = count;
        endedAtPrevious = ended ? ending : ending - 1;
        long polls = pollCount.getAsLong();
        if (polls != pollsAtPrevious) {
            pollsAtPrevious = polls;
            polledNanos = nowNanos;
        }
    }

    /**
     * The committed fence of {@code key} when its stored fence may not be committed yet, else {@code null} (the store's value
     * is committed). Read the store first, then call this.
     */
    public Committed committedIfPending(Bytes key) {
        for (Generation generation : generations.get()) {
            Object before = generation.before().get(key);
            if (before != null) {
                return new Committed(before == NONE ? null : (Fence) before);
            }
        }
        return null;
    }

    /**
     * When an observation last saw the stream thread's {@code poll-total} change ({@link System#nanoTime}; at first, when
     * the task started): a thread that stops polling is removed from the group once {@code max.poll.interval.ms} passes.
     */
    public long polledNanos() {
        return polledNanos;
    }

    /** How many keys are pending (a key written in several epochs counts once per epoch): for tests. */
    public int size() {
        return generations.get().stream().mapToInt(generation -> generation.before().size()).sum();
    }
}
