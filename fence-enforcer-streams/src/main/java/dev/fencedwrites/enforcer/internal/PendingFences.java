package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.Fence;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import org.apache.kafka.common.utils.Bytes;

/**
 * The keys of one task whose fence in the state store may not be committed yet, each with the last fence known to be
 * committed ({@code null}: none, so {@code /fences/{key}} answers 404), so that interactive queries answer only committed
 * fences.
 *
 * <p>Why: under {@code exactly_once_v2} the store holds the writes of the open transaction, which is aborted if the
 * instance dies or is fenced; the next owner restores the changelog as committed and re-decides from the committed
 * offsets, so an answer read from the store could be higher than any fence the key will ever have had, and a later answer
 * lower. Under {@code at_least_once} the store's cache holds values not yet in the changelog, lost the same way.
 *
 * <p>How a write becomes committed: Kafka Streams 4.3.1 records its stream thread's {@code commit-total} (group
 * {@code stream-thread-metrics}) in {@code StreamThread.maybeCommit}, on the stream thread, right after
 * {@code TaskManager.commit} committed at least one task without throwing: after the transaction committed
 * (exactly_once_v2), or after the caches and the producer were flushed and the offsets committed (at_least_once). A failed or
 * timed-out commit throws or counts nothing. A commit covers every task of the thread that processed a record since its
 * last commit. The write reads that count on the stream thread, the thread that later commits: a count above the one a
 * write read proves a commit began and ended after the write, and covered it. The keys written while the count had one
 * value form a generation, tagged with it; the first write after a commit starts a new one, and the old one, committed,
 * is dropped. A reader compares the tag with the count it reads itself, so an answer advances as soon as the commit after
 * the write is counted, whether or not another record comes (a rule that looked at the count only between two
 * observations would leave the last write before an idle spell uncommitted in the answers).
 *
 * <p>Threads: {@link #written} runs on the task's stream thread; {@link #committedIfPending} on any (the HTTP server's);
 * {@link #observe} on the observer's. A write records its key here before it puts the new fence into the store, and a
 * reader reads the store before it asks here: a reader that saw the new fence in the store sees its generation or a later
 * one.
 *
 * <p>Cost and memory: one read of the commit count (a metric read: a lock held for a counter's value) and one
 * {@code putIfAbsent} per accepted record; a commit drops the whole map at the next write. Held: the keys written since the
 * thread's last commit. Bounded: once a generation holds {@value #COMMIT_REQUEST_KEYS} keys, {@link #written} says so and
 * the writer (the processor, or an expiry pass) asks Kafka Streams for a commit ({@code ProcessorContext#commit}), so under
 * {@code at_least_once} (a 30 s
 * commit interval) a backlog over many keys holds about that many entries (about 120 bytes each), not every key written in
 * 30 s; while commits fail the map still grows, to at most one entry per key of the store.
 */
public final class PendingFences {
    /** Keys of one generation at which the processor asks for a commit; also the most a new generation is sized for. */
    public static final int COMMIT_REQUEST_KEYS = 1 << 16;
    /** Stands for "no fence" in a generation's map. */
    private static final Object NONE = new Object();

    private final LongSupplier commitCount;
    private final LongSupplier pollCount;
    /** The keys written since the commit count last changed; replaced whole by the stream thread. */
    private volatile Generation current = new Generation(Long.MIN_VALUE, Map.of());
    /** Keys in {@link #current}; stream thread only. */
    private int keys;
    /** Set when the task closes; a closed set answers no query ({@link #closed}). */
    private volatile boolean closed;
    /** When an observation last saw the stream thread's poll count change ({@link System#nanoTime}). */
    private volatile long polledNanos;
    /** The poll count at the last observation; observer only. */
    private long pollsAtPrevious = -1;

    /** The fences keys had before their first write while the stream thread's commit count was {@code commits}. */
    private record Generation(long commits, Map<Bytes, Object> before) {
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
     * ({@code null}: none); call before the put, on the stream thread.
     *
     * @return whether this write brought the generation to {@value #COMMIT_REQUEST_KEYS} keys: the caller asks for a commit
     *         (once per generation)
     */
    public boolean written(Bytes key, Fence before, Fence after) {
        long commits = commitCount.getAsLong();
        Generation generation = current;
        if (generation.commits() != commits) {
            // Sized for as many keys as the last generation held: growing a map from 16 entries to thousands between two
            // commits resized it a dozen times per commit (5 % of the stream thread's time at 1M keys).
            generation = new Generation(commits, new ConcurrentHashMap<>(Math.min(Math.max(16, keys), COMMIT_REQUEST_KEYS)));
            current = generation;
            keys = 0;
        }
        if (generation.before().putIfAbsent(key, before == null ? NONE : before) != null) {
            return false;
        }
        return ++keys == COMMIT_REQUEST_KEYS;
    }

    /**
     * The committed fence of {@code key} when its stored fence may not be committed yet, else {@code null} (the store's value
     * is committed). Read the store first, then call this.
     */
    public Committed committedIfPending(Bytes key) {
        Generation generation = current;
        Object before = generation.before().get(key);
        if (before == null || commitCount.getAsLong() > generation.commits()) {
            return null;
        }
        return new Committed(before == NONE ? null : (Fence) before);
    }

    /**
     * The task closed (on its stream thread, {@code Processor.close}): a dirty close drops the open transaction's fences,
     * and the thread's next commit, which would count them as committed, does not cover this task any more.
     */
    public void close() {
        closed = true;
    }

    /** Whether the task closed: its store's values may include fences its dirty close dropped. */
    public boolean closed() {
        return closed;
    }

    /** One observation at {@code nowNanos}: records whether the stream thread polled since the last one. */
    public synchronized void observe(long nowNanos) {
        long polls = pollCount.getAsLong();
        if (polls != pollsAtPrevious) {
            pollsAtPrevious = polls;
            polledNanos = nowNanos;
        }
    }

    /**
     * When an observation last saw the stream thread's {@code poll-total} change ({@link System#nanoTime}; at first, when
     * the task started): a thread that stops polling is removed from the group once {@code max.poll.interval.ms} passes.
     */
    public long polledNanos() {
        return polledNanos;
    }

    /** How many keys are pending: for tests. */
    public int size() {
        Generation generation = current;
        return commitCount.getAsLong() > generation.commits() ? 0 : generation.before().size();
    }
}
