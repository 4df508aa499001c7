package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.Fence;
import java.time.Duration;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.api.ProcessorContext;

/**
 * What {@code GET /fences/{key}} answers: the committed fence of a key, from the fence store's value and the
 * {@link PendingFences} of the task that owns it (issue 17). One instance per Kafka Streams client, shared by its fence
 * processors (which register their task's pending keys on the stream threads) and the HTTP server (which asks on its own
 * threads); thread-safe.
 *
 * <p>A processor learns of its stream thread's commits from the thread's {@code commit-total} (see {@link PendingFences}),
 * read through {@link #THREAD_COMMITS} unless a test passes another source.
 */
public final class CommittedFences {
    /** The metric that counts a stream thread's successful commits (Kafka Streams' {@code ThreadMetrics.commitSensor}). */
    public static final String COMMIT_TOTAL = "commit-total";
    /** Its group. */
    public static final String THREAD_METRICS_GROUP = "stream-thread-metrics";
    /** Its tag naming the stream thread: the thread's name. */
    public static final String THREAD_ID_TAG = "thread-id";
    /** How often a processor looks at the commit count at most (it looks twice per commit interval, at least every 20 ms). */
    static final Duration MAX_OBSERVATION_INTERVAL = Duration.ofSeconds(1);

    /**
     * Reads the commit count of the stream thread that runs a processor, from Kafka Streams' metrics.
     *
     * @throws IllegalStateException from the returned function when the thread has no {@code commit-total}: Kafka Streams'
     *                               metrics changed, and committed fences cannot be told apart
     */
    public static final Function<ProcessorContext<?, ?>, LongSupplier> THREAD_COMMITS = context -> {
        String thread = Thread.currentThread().getName();
        for (Map.Entry<MetricName, ? extends Metric> metric : context.metrics().metrics().entrySet()) {
            MetricName name = metric.getKey();
            if (name.name().equals(COMMIT_TOTAL) && name.group().equals(THREAD_METRICS_GROUP)
                    && thread.equals(name.tags().get(THREAD_ID_TAG))) {
                Metric found = metric.getValue();
                return () -> ((Number) found.metricValue()).longValue();
            }
        }
        throw new IllegalStateException("no " + THREAD_METRICS_GROUP + " " + COMMIT_TOTAL + " metric for stream thread "
                + thread + ": GET /fences/{key} cannot tell committed fences from those of an open transaction");
    };

    private final Function<ProcessorContext<?, ?>, LongSupplier> commitCounts;
    private final Map<Integer, PendingFences> byPartition = new ConcurrentHashMap<>();

    /** Committed fences told by each stream thread's {@code commit-total}. */
    public CommittedFences() {
        this(THREAD_COMMITS);
    }

    /** Committed fences told by {@code commitCounts}: for each processor, a source of its stream thread's commit count. */
    public CommittedFences(Function<ProcessorContext<?, ?>, LongSupplier> commitCounts) {
        this.commitCounts = commitCounts;
    }

    /** The source of the commit count for a processor being initialised (on its stream thread). */
    LongSupplier commitCount(ProcessorContext<?, ?> context) {
        return commitCounts.apply(context);
    }

    /**
     * How often a processor observes the commit count: half the commit interval ({@code commit.interval.ms}), between 20 ms
     * and {@link #MAX_OBSERVATION_INTERVAL}.
     */
    static Duration observationInterval(Map<String, Object> appConfigs) {
        Object configured = appConfigs.get(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG);
        long commitMs = configured == null ? MAX_OBSERVATION_INTERVAL.toMillis() * 2 : Long.parseLong(configured.toString());
        return Duration.ofMillis(Math.max(20, Math.min(commitMs / 2, MAX_OBSERVATION_INTERVAL.toMillis())));
    }

    /**
     * The task of input partition {@code partition} starts, its store restored from the changelog (committed fences only): a
     * fresh set of pending keys replaces the previous task's. A closing task leaves its set in place, so that a query that
     * read its store just before it closed (a dirty close drops the open transaction's fences) still gets the committed one;
     * a closed task's store answers no query.
     */
    PendingFences open(int partition) {
        PendingFences fresh = new PendingFences(System.nanoTime());
        byPartition.put(partition, fresh);
        return fresh;
    }

    /**
     * When the stream thread that runs the task of input partition {@code partition} last ran its loop (observed its commit
     * count; {@link System#nanoTime}), or empty when no task of that partition has run here.
     */
    public OptionalLong streamThreadSeenNanos(int partition) {
        PendingFences pending = byPartition.get(partition);
        return pending == null ? OptionalLong.empty() : OptionalLong.of(pending.observedNanos());
    }

    /**
     * The committed fence of {@code key}, whose fence store of input partition {@code partition} held {@code stored}
     * ({@code null}: none) when read just before this call; {@code null} when the key has no committed fence.
     */
    public Fence committed(int partition, Bytes key, Fence stored) {
        PendingFences pending = byPartition.get(partition);
        PendingFences.Committed committed = pending == null ? null : pending.committedIfPending(key);
        return committed == null ? stored : committed.fence();
    }
}
