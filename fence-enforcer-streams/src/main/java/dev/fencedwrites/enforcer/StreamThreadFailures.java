package dev.fencedwrites.enforcer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.function.LongSupplier;
import java.util.function.ToLongFunction;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a stream thread's uncaught exception does: the thread is replaced (KIP-671's {@code REPLACE_THREAD}: its tasks are
 * closed dirty and decided again, under exactly_once_v2 after the open transaction aborts), so a broker, coordinator or
 * etcd member that restarts never stops the instance for good. The instance stops ({@code SHUTDOWN_CLIENT}, exit status 1,
 * for its supervisor to restart or report) only for what a new thread cannot fix: a {@link Error} (out of memory, a linkage
 * error); {@code maxWithoutProgress} threads in a row that died without a single commit (a record that fails every time,
 * however long each restore takes); or more than {@code maxReplacements} replacements within {@code window}. Must be called
 * on the dying stream thread, as Kafka Streams does. Each replacement is logged and counted in {@value #METER}{@code
 * {exception}}.
 */
public final class StreamThreadFailures implements StreamsUncaughtExceptionHandler {
    /** The replacement counter's name. */
    public static final String METER = "fence.enforcer.stream.thread.replacements";
    /** Replacements allowed within {@link #DEFAULT_WINDOW} before the instance stops. */
    public static final int DEFAULT_MAX_REPLACEMENTS = 10;
    /** The window {@link #DEFAULT_MAX_REPLACEMENTS} counts over. */
    public static final Duration DEFAULT_WINDOW = Duration.ofMinutes(10);
    /** Threads in a row allowed to die without a commit. */
    public static final int DEFAULT_MAX_WITHOUT_PROGRESS = 3;
    private static final int MAX_CAUSE_DEPTH = 64;

    private static final Logger LOG = LoggerFactory.getLogger(StreamThreadFailures.class);

    private final MeterRegistry meters;
    private final int maxReplacements;
    private final long windowNanos;
    private final int maxWithoutProgress;
    private final ToLongFunction<String> threadCommits;
    private final LongSupplier nanoTime;
    private final Deque<Long> recent = new ArrayDeque<>();
    private int withoutProgress;

    /**
     * @param meters             where the replacement counter goes
     * @param maxReplacements    replacements allowed within {@code window}, at least 1
     * @param window             how far back replacements count, positive
     * @param maxWithoutProgress threads in a row allowed to die without a commit, at least 1
     * @param threadCommits      a stream thread's successful commits so far, by thread name (Kafka Streams'
     *                           {@code commit-total}, {@link #commitTotal})
     * @param nanoTime           the clock, {@code System::nanoTime} outside tests
     */
    public StreamThreadFailures(MeterRegistry meters, int maxReplacements, Duration window, int maxWithoutProgress,
            ToLongFunction<String> threadCommits, LongSupplier nanoTime) {
        if (maxReplacements < 1 || maxWithoutProgress < 1 || window.isNegative() || window.isZero()) {
            throw new IllegalArgumentException("need at least 1 replacement in a positive window and at least 1 without "
                    + "progress, got " + maxReplacements + " in " + window + " and " + maxWithoutProgress);
        }
        this.meters = meters;
        this.maxReplacements = maxReplacements;
        this.windowNanos = window.toNanos();
        this.maxWithoutProgress = maxWithoutProgress;
        this.threadCommits = threadCommits;
        this.nanoTime = nanoTime;
    }

    /** The enforcer's policy for the stream threads of {@code streams}, with the defaults above. */
    public static StreamThreadFailures standard(MeterRegistry meters, KafkaStreams streams) {
        return new StreamThreadFailures(meters, DEFAULT_MAX_REPLACEMENTS, DEFAULT_WINDOW, DEFAULT_MAX_WITHOUT_PROGRESS,
                commitTotal(streams), System::nanoTime);
    }

    /** Kafka Streams' {@code commit-total} of a stream thread of {@code streams}, by thread name; 0 when it has none. */
    public static ToLongFunction<String> commitTotal(KafkaStreams streams) {
        return thread -> streams.metrics().entrySet().stream()
                .filter(e -> "commit-total".equals(e.getKey().name()) && "stream-thread-metrics".equals(e.getKey().group())
                        && thread.equals(e.getKey().tags().get("thread-id")))
                .mapToLong(e -> ((Number) e.getValue().metricValue()).longValue()).findFirst().orElse(0);
    }

    @Override
    public synchronized StreamThreadExceptionResponse handle(Throwable exception) {
        Throwable error = firstError(exception);
        if (error != null) {
            LOG.error("a stream thread died of {}, which a new thread cannot fix; shutting this instance down",
                    error.getClass().getName(), exception);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        }
        withoutProgress = threadCommits.applyAsLong(Thread.currentThread().getName()) > 0 ? 0 : withoutProgress + 1;
        if (withoutProgress >= maxWithoutProgress) {
            LOG.error("a stream thread died again: {} in a row without a single commit, a failure a new thread cannot "
                    + "fix; shutting this instance down (its tasks move to the other instances)", withoutProgress, exception);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        }
        long now = nanoTime.getAsLong();
        while (!recent.isEmpty() && now - recent.peekFirst() > windowNanos) {
            recent.removeFirst();
        }
        if (recent.size() >= maxReplacements) {
            LOG.error("a stream thread died again after {} replacements within {} s; shutting this instance down (its tasks "
                    + "move to the other instances)", recent.size(), windowNanos / 1_000_000_000L, exception);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        }
        recent.addLast(now);
        String cause = rootCause(exception).getClass().getSimpleName();
        Counter.builder(METER).description("Stream threads replaced after an uncaught exception, by the root cause's class")
                .tag("exception", cause).register(meters).increment();
        LOG.warn("a stream thread died ({}); replacing it, its tasks are decided again from their last commit ({} of {} "
                + "replacements allowed within {} s)", cause, recent.size(), maxReplacements,
                windowNanos / 1_000_000_000L, exception);
        return StreamThreadExceptionResponse.REPLACE_THREAD;
    }

    private static Throwable firstError(Throwable exception) {
        Throwable t = exception;
        for (int depth = 0; t != null && depth < MAX_CAUSE_DEPTH; depth++, t = t.getCause()) {
            if (t instanceof Error) {
                return t;
            }
        }
        return null;
    }

    /** The deepest cause within {@value #MAX_CAUSE_DEPTH} steps (a cause chain can loop through {@code initCause}). */
    private static Throwable rootCause(Throwable exception) {
        Throwable t = exception;
        for (int depth = 0; t.getCause() != null && depth < MAX_CAUSE_DEPTH; depth++) {
            t = t.getCause();
        }
        return t;
    }
}
