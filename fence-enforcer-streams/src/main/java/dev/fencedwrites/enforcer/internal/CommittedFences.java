package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.Fence;
import java.time.Duration;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What {@code GET /fences/{key}} answers: the committed fence of a key, from the fence store's value and the
 * {@link PendingFences} of the task that owns it. One instance per Kafka Streams client, shared by its fence
 * processors (which register their task's pending keys on the stream threads, with the thread's commit count: see
 * {@link PendingFences}), an observer thread ({@link #start}: it notes when each task's stream thread last polled) and the
 * HTTP server (which asks on its own threads); thread-safe. No punctuator: a punctuation makes Kafka Streams commit the
 * task even when it processed nothing ({@code StreamTask.maybePunctuateSystemTime} sets {@code commitNeeded}), a
 * transaction per commit interval on an idle instance.
 *
 * <p>A processor's stream thread counts are read through {@link #THREAD_COUNTS} unless a test passes another source.
 */
public final class CommittedFences implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(CommittedFences.class);
    /** The metric that counts a stream thread's successful commits (Kafka Streams' {@code ThreadMetrics.commitSensor}). */
    public static final String COMMIT_TOTAL = "commit-total";
    /** The metric that counts a stream thread's polls (Kafka Streams' {@code ThreadMetrics.pollSensor}). */
    public static final String POLL_TOTAL = "poll-total";
    /** Their group. */
    public static final String THREAD_METRICS_GROUP = "stream-thread-metrics";
    /** Their tag naming the stream thread: the thread's name. */
    public static final String THREAD_ID_TAG = "thread-id";

    /** A stream thread's counts. */
    public record ThreadCounts(LongSupplier commits, LongSupplier polls) {
    }

    /**
     * Reads the counts of the stream thread that runs a processor (called on it), from Kafka Streams' metrics.
     *
     * @throws IllegalStateException from the returned function when the thread has no {@code commit-total} or
     *                               {@code poll-total}: Kafka Streams' metrics changed, and committed fences cannot be told
     */
    public static final Function<ProcessorContext<?, ?>, ThreadCounts> THREAD_COUNTS = context -> new ThreadCounts(
            threadMetric(context, COMMIT_TOTAL), threadMetric(context, POLL_TOTAL));

    private static LongSupplier threadMetric(ProcessorContext<?, ?> context, String metricName) {
        String thread = Thread.currentThread().getName();
        for (Map.Entry<MetricName, ? extends Metric> metric : context.metrics().metrics().entrySet()) {
            MetricName name = metric.getKey();
            if (name.name().equals(metricName) && name.group().equals(THREAD_METRICS_GROUP)
                    && thread.equals(name.tags().get(THREAD_ID_TAG))) {
                Metric found = metric.getValue();
                return () -> ((Number) found.metricValue()).longValue();
            }
        }
        throw new IllegalStateException("no " + THREAD_METRICS_GROUP + " " + metricName + " metric for stream thread " + thread
                + ": GET /fences/{key} cannot tell committed fences from those of an open transaction");
    }

    private final Function<ProcessorContext<?, ?>, ThreadCounts> threadCounts;
    private final Map<Integer, PendingFences> byPartition = new ConcurrentHashMap<>();
    /** Why committed fences cannot be told (a stream thread without the metrics), or {@code null}. */
    private volatile String blind;
    private final ScheduledExecutorService observer = Executors.newSingleThreadScheduledExecutor(runnable -> {
        Thread thread = new Thread(runnable, "enforcer-commit-observer");
        thread.setDaemon(true);
        return thread;
    });

    /** Committed fences told by each stream thread's {@code commit-total}. */
    public CommittedFences() {
        this(THREAD_COUNTS);
    }

    /** Committed fences told by {@code threadCounts}: for each processor, its stream thread's counts. */
    public CommittedFences(Function<ProcessorContext<?, ?>, ThreadCounts> threadCounts) {
        this.threadCounts = threadCounts;
    }

    /**
     * Observes every task every {@code interval} on a daemon thread until {@link #close}: a stalled stream thread is seen
     * within an interval. The enforcer takes half its {@code commit.interval.ms}, between 20 ms and 1 s
     * ({@link #observationInterval}).
     */
    public void start(Duration interval) {
        // A task that throws is not run again by the executor: an exception is logged, and the next observation comes.
        observer.scheduleWithFixedDelay(() -> {
            try {
                observe();
            } catch (RuntimeException e) {
                LOG.warn("observing the stream threads' polls failed; trying again in {} ms", interval.toMillis(), e);
            }
        }, interval.toNanos(), interval.toNanos(), TimeUnit.NANOSECONDS);
    }

    /** The observation interval for a commit interval of {@code commitIntervalMs}: half of it, between 20 ms and 1 s. */
    public static Duration observationInterval(long commitIntervalMs) {
        return Duration.ofMillis(Math.max(20, Math.min(commitIntervalMs / 2, 1000)));
    }

    /** Observes every task once (the observer thread's work; tests call it directly). */
    public void observe() {
        long now = System.nanoTime();
        byPartition.values().forEach(pending -> pending.observe(now));
    }

    @Override
    public void close() {
        observer.shutdownNow();
    }

    /**
     * The task of input partition {@code partition} starts, its store restored from the changelog (committed fences only): a
     * fresh set of pending keys replaces the previous task's. A closing task marks its set closed
     * ({@link PendingFences#close}): a query that read its store around the close answers 503, never a fence a dirty close
     * dropped.
     */
    PendingFences open(int partition, ProcessorContext<?, ?> context) {
        ThreadCounts counts;
        try {
            counts = threadCounts.apply(context);
        } catch (IllegalStateException e) {
            // A Kafka Streams without these metrics must not stop the enforcer.
            if (blind == null) {
                LOG.error("{}; GET /fences/{key} answers 503 for every key, and records are decided as before",
                        e.getMessage());
            }
            blind = e.getMessage();
            byPartition.remove(partition);
            return null;
        }
        PendingFences fresh = new PendingFences(counts.commits(), counts.polls(), System.nanoTime());
        byPartition.put(partition, fresh);
        return fresh;
    }

    /**
     * When the stream thread that runs the task of input partition {@code partition} was last seen polling
     * ({@link System#nanoTime}), or empty when no task of that partition has run here.
     */
    public OptionalLong streamThreadSeenNanos(int partition) {
        PendingFences pending = byPartition.get(partition);
        return pending == null ? OptionalLong.empty() : OptionalLong.of(pending.polledNanos());
    }

    /**
     * The set of pending keys of input partition {@code partition}'s task, or {@code null} when none has run here: take it
     * before reading the store, and pass it to {@link #committed}.
     */
    public PendingFences pending(int partition) {
        return byPartition.get(partition);
    }

    /**
     * The committed fence of {@code key}, whose fence store of input partition {@code partition} held {@code stored}
     * ({@code null}: none) when read between {@link #pending} (which returned {@code pending}) and this call; {@code null}
     * when the key has no committed fence.
     *
     * @throws IllegalStateException when the partition's task closed or was replaced meanwhile (a rebalance or a dirty close:
     *                               the value read may be a fence of the transaction the close aborted), or when a stream
     *                               thread had no {@code commit-total} or {@code poll-total} metric (committed fences
     *                               cannot be told; logged once)
     */
    public Fence committed(int partition, PendingFences pending, Bytes key, Fence stored) {
        String unknown = blind;
        if (unknown != null) {
            throw new IllegalStateException(unknown);
        }
        // The commit count first (committedIfPending), then the close: a dirty close runs before the thread's next counted
        // commit, so a count that proves the write committed was read after any close that aborted it.
        PendingFences.Committed committed = pending == null ? null : pending.committedIfPending(key);
        if (pending != byPartition.get(partition) || pending != null && pending.closed()) {
            throw new IllegalStateException("the task of partition " + partition + " closed during the read (rebalancing)");
        }
        return committed == null ? stored : committed.fence();
    }
}
