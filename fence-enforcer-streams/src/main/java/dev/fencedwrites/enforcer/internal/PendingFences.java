package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.Fence;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
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
 * {@code stream-thread-metrics}) in {@code StreamThread.runOnce} only after {@code TaskManager.commit} returned without
 * throwing, i.e. after the transaction committed (exactly_once_v2) or the offsets were committed with {@code commitSync}
 * after the caches and the producer were flushed (at_least_once); a failed or timed-out commit throws first. The thread that
 * runs this task's {@link #observe} also runs its processing and its commits, one at a time, so a count that rose
 * between two observations means a commit ran wholly between them and covered every write made before the earlier one.
 *
 * <p>Shape: the writes are grouped in generations, one per interval between observations, each a map from key to the
 * fence the key had before its first write of that generation. When the count rose since the previous observation, every
 * generation that had ended by then is committed and dropped whole. The committed fence of a key is then its value in the
 * oldest generation still held that has it (its fence before the first write that may not be committed), else the
 * store's.
 *
 * <p>Threads: {@link #written} and {@link #observe} run on the task's stream thread; {@link #committedIfPending} on any
 * thread (the HTTP server's). The writer records a key here before it puts the new fence into the store, and a reader
 * reads the store before it asks here: a reader that saw the new fence in the store sees the key pending.
 *
 * <p>Cost and memory: one {@code putIfAbsent} per accepted record; a commit drops whole maps. Held: the keys written in
 * about two observation intervals and one commit interval. While commits fail, generations are ended at most
 * {@value #MAX_GENERATIONS} times; the last one then takes every write (at most one entry per key of the store).
 */
public final class PendingFences {
    /** The most generations held: past it, writes stay in the current one until a commit is observed. */
    static final int MAX_GENERATIONS = 64;
    /** Stands for "no fence" in a generation's map. */
    private static final Object NONE = new Object();

    /** Oldest first; the last is the current generation. Replaced whole (copy on write) on the stream thread. */
    private volatile List<Generation> generations;
    /** When the stream thread last observed the commit count ({@link System#nanoTime}), read by the HTTP threads. */
    private volatile long observedNanos;
    /** The commit count read at the previous observation; -1 before the first. */
    private long countAtPrevious = -1;
    /** The newest generation that had ended by the previous observation (every write of it was made before it); 0: none. */
    private long endedAtPrevious;
    private Generation current;

    /** The fences keys had before their first write of one generation. */
    private record Generation(long id, Map<Bytes, Object> before) {
    }

    /** The answer for a pending key: its last committed fence, or {@code null} when it has none committed. */
    public record Committed(Fence fence) {
    }

    /** A set for a task whose stream thread runs now ({@code nowNanos}). */
    public PendingFences(long nowNanos) {
        this.observedNanos = nowNanos;
        this.current = new Generation(1, new ConcurrentHashMap<>());
        this.generations = List.of(current);
    }

    /**
     * The stream thread is about to put {@code after} into the store for {@code key}, whose value was {@code before}
     * ({@code null}: none); call before the put. One {@code putIfAbsent}.
     */
    public void written(Bytes key, Fence before, Fence after) {
        current.before().putIfAbsent(key, before == null ? NONE : before);
    }

    /**
     * An observation of the stream thread's commit count ({@code commit-total}) at {@code nowNanos}, on the stream thread,
     * between records: drops what the count proves committed and starts the next generation.
     */
    public void observe(long commitCount, long nowNanos) {
        observedNanos = nowNanos;
        List<Generation> held = generations;
        if (countAtPrevious >= 0 && commitCount > countAtPrevious) {
            long committedUpTo = endedAtPrevious;
            held = held.stream().filter(generation -> generation.id() > committedUpTo).toList();
        }
        countAtPrevious = commitCount;
        if (!current.before().isEmpty() && held.size() < MAX_GENERATIONS) {
            endedAtPrevious = current.id();
            current = new Generation(current.id() + 1, new ConcurrentHashMap<>());
            List<Generation> next = new ArrayList<>(held);
            next.add(current);
            held = List.copyOf(next);
        } else {
            // Nothing written since the last observation (or too many held): the current generation goes on, and what
            // had ended by the previous observation is still all that has.
            endedAtPrevious = current.id() - 1;
        }
        generations = held;
    }

    /**
     * The committed fence of {@code key} when its stored fence may not be committed yet, else {@code null} (the store's value
     * is committed). Read the store first, then call this.
     */
    public Committed committedIfPending(Bytes key) {
        for (Generation generation : generations) {
            Object before = generation.before().get(key);
            if (before != null) {
                return new Committed(before == NONE ? null : (Fence) before);
            }
        }
        return null;
    }

    /**
     * When the stream thread last observed the commit count ({@link System#nanoTime}): it observes between records, so an
     * old observation means the thread has stopped running its loop (and polling).
     */
    public long observedNanos() {
        return observedNanos;
    }

    /** How many keys are pending (a key written in several generations counts once per generation): for tests. */
    public int size() {
        return generations.stream().mapToInt(generation -> generation.before().size()).sum();
    }
}
