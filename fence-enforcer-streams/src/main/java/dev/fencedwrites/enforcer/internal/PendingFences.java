package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.Fence;
import java.util.Iterator;
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
 * Writes are therefore tagged with the generation of the observation they precede ({@code gen}); when the count rose since
 * the previous observation, every write of a generation up to the previous observation's is committed.
 *
 * <p>Per key the entry keeps its committed fence, the fence it had at the end of its last generation before the current
 * one ({@code settled}), and its latest fence: when a commit covers the settled generation but not the latest, the
 * settled fence becomes the committed one; when it covers the latest, the key is dropped and the store's value is
 * committed. The committed answer therefore never runs ahead of a commit and never goes back.
 *
 * <p>Threads: {@link #written} and {@link #observe} run on the task's stream thread; {@link #committedIfPending} on any
 * thread (the HTTP server's). The writer records a key here before it puts the new fence into the store, and a reader
 * reads the store before it asks here: a reader that saw the new fence in the store sees the key pending.
 *
 * <p>Memory: one entry per key written since the last observed commit that covered it: about the keys written in two
 * observation intervals and one commit interval; at most one per key of the store while commits fail.
 */
public final class PendingFences {
    private final Map<Bytes, Entry> pending = new ConcurrentHashMap<>();
    /** When the stream thread last observed the commit count ({@link System#nanoTime}), read by the HTTP threads. */
    private volatile long observedNanos;
    /** The generation of the writes made now; the observation that ends it moves to the next. */
    private long gen = 1;
    /** The commit count read at the previous observation; -1 before the first. */
    private long countAtPrevious = -1;
    /** The generation that the previous observation ended: every write tagged with it or lower was made before it. */
    private long genAtPrevious;

    /** The committed view of one pending key; {@code committed} is read by other threads, the rest by the stream thread. */
    /** A set for a task whose stream thread runs now ({@code nowNanos}). */
    public PendingFences(long nowNanos) {
        this.observedNanos = nowNanos;
    }

    private static final class Entry {
        volatile Fence committed;
        Fence settled;
        long settledGen = -1;
        Fence latest;
        long latestGen;

        Entry(Fence committed, Fence latest, long gen) {
            this.committed = committed;
            this.latest = latest;
            this.latestGen = gen;
        }
    }

    /** The answer for a pending key: its last committed fence, or {@code null} when it has none committed. */
    public record Committed(Fence fence) {
    }

    /**
     * The stream thread is about to put {@code after} into the store for {@code key}, whose value was {@code before}
     * ({@code null}: none); call before the put. One map lookup, and one insert for a key not pending yet.
     */
    public void written(Bytes key, Fence before, Fence after) {
        Entry entry = pending.get(key);
        if (entry == null) {
            pending.put(key, new Entry(before, after, gen));
            return;
        }
        if (entry.latestGen != gen) {
            entry.settled = entry.latest;
            entry.settledGen = entry.latestGen;
        }
        entry.latest = after;
        entry.latestGen = gen;
    }

    /**
     * An observation of the stream thread's commit count ({@code commit-total}), on the stream thread, between records:
     * commits what the count proves committed and starts the next generation.
     */
    public void observe(long commitCount, long nowNanos) {
        observedNanos = nowNanos;
        if (countAtPrevious >= 0 && commitCount > countAtPrevious) {
            committedUpTo(genAtPrevious);
        }
        countAtPrevious = commitCount;
        genAtPrevious = gen;
        gen++;
    }

    private void committedUpTo(long committedGen) {
        Iterator<Entry> entries = pending.values().iterator();
        while (entries.hasNext()) {
            Entry entry = entries.next();
            if (entry.latestGen <= committedGen) {
                entries.remove();
            } else if (entry.settledGen >= 0 && entry.settledGen <= committedGen) {
                entry.committed = entry.settled;
                entry.settled = null;
                entry.settledGen = -1;
            }
        }
    }

    /**
     * The committed fence of {@code key} when its stored fence may not be committed yet, else {@code null} (the store's value
     * is committed). Read the store first, then call this.
     */
    public Committed committedIfPending(Bytes key) {
        Entry entry = pending.get(key);
        return entry == null ? null : new Committed(entry.committed);
    }

    /**
     * When the stream thread last observed the commit count ({@link System#nanoTime}): it observes between records, so an
     * old observation means the thread has stopped running its loop (and polling).
     */
    public long observedNanos() {
        return observedNanos;
    }

    /** How many keys are pending: for tests and the memory bound. */
    public int size() {
        return pending.size();
    }
}
