package dev.fencedwrites.enforcer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.function.LongSupplier;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a stream thread's uncaught exception does: the thread is replaced (KIP-671's {@code REPLACE_THREAD}: its tasks are
 * closed dirty and decided again, under exactly_once_v2 after the open transaction aborts), so a broker, coordinator or
 * etcd member that restarts never stops the instance for good. The instance stops ({@code SHUTDOWN_CLIENT}) only for what a
 * new thread cannot fix: a {@link Error} (out of memory, a linkage error) or more than {@code maxReplacements} replacements
 * within {@code window}, a failure that comes back at once. Each replacement is logged and counted in
 * {@value #METER}{@code {exception}}.
 */
public final class StreamThreadFailures implements StreamsUncaughtExceptionHandler {
    /** The replacement counter's name. */
    public static final String METER = "fence.enforcer.stream.thread.replacements";
    /** Replacements allowed within {@link #DEFAULT_WINDOW} before the instance stops. */
    public static final int DEFAULT_MAX_REPLACEMENTS = 10;
    /** The window {@link #DEFAULT_MAX_REPLACEMENTS} counts over. */
    public static final Duration DEFAULT_WINDOW = Duration.ofMinutes(10);

    private static final Logger LOG = LoggerFactory.getLogger(StreamThreadFailures.class);

    private final MeterRegistry meters;
    private final int maxReplacements;
    private final long windowNanos;
    private final LongSupplier nanoTime;
    private final Deque<Long> recent = new ArrayDeque<>();

    /**
     * @param meters          where the replacement counter goes
     * @param maxReplacements replacements allowed within {@code window}, at least 1
     * @param window          how far back replacements count, positive
     * @param nanoTime        the clock, {@code System::nanoTime} outside tests
     */
    public StreamThreadFailures(MeterRegistry meters, int maxReplacements, Duration window, LongSupplier nanoTime) {
        if (maxReplacements < 1 || window.isNegative() || window.isZero()) {
            throw new IllegalArgumentException("need at least 1 replacement in a positive window, got " + maxReplacements
                    + " in " + window);
        }
        this.meters = meters;
        this.maxReplacements = maxReplacements;
        this.windowNanos = window.toNanos();
        this.nanoTime = nanoTime;
    }

    /** The enforcer's policy: {@value #DEFAULT_MAX_REPLACEMENTS} replacements within {@link #DEFAULT_WINDOW}. */
    public static StreamThreadFailures standard(MeterRegistry meters) {
        return new StreamThreadFailures(meters, DEFAULT_MAX_REPLACEMENTS, DEFAULT_WINDOW, System::nanoTime);
    }

    @Override
    public synchronized StreamThreadExceptionResponse handle(Throwable exception) {
        Throwable error = firstError(exception);
        if (error != null) {
            LOG.error("a stream thread died of {}, which a new thread cannot fix; shutting this instance down",
                    error.getClass().getName(), exception);
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
        for (Throwable t = exception; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof Error) {
                return t;
            }
        }
        return null;
    }

    private static Throwable rootCause(Throwable exception) {
        Throwable t = exception;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }
}
