package dev.fencedwrites.producer;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Measures how long this JVM was stalled (GC pause, suspended VM, SIGSTOP): a daemon thread asks
 * to wake up every {@code interval} and records how much later than asked it woke up. This is the
 * gap a lease cannot cover: a stall longer than the lease TTL lets another worker take over while
 * this one still believes it holds the lease. The largest stall of the last minute is exported
 * next to the TTL so operators see pauses approach it; the fence stays the correctness mechanism.
 *
 * <p>Metrics (Prometheus names): {@code fence_pause_largest_recent_seconds} (largest stall in the
 * last 60 s), {@code fence_pause_stall_seconds} (distribution of stalls above two intervals),
 * {@code fence_pause_lease_ttl_seconds} (the TTL it is compared with). A stall above half the TTL
 * is logged as a warning.
 */
public final class PauseDetector implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PauseDetector.class);
    private static final int WINDOW_SECONDS = 60;

    private final long intervalNanos;
    private final Duration leaseTtl;
    private final long[] maxPerSecond = new long[WINDOW_SECONDS];
    private final long[] secondOfSlot = new long[WINDOW_SECONDS];
    private final DistributionSummary stalls;
    private final Thread thread;
    private volatile boolean running = true;

    private PauseDetector(Duration interval, Duration leaseTtl, MeterRegistry registry) {
        this.intervalNanos = interval.toNanos();
        this.leaseTtl = leaseTtl;
        this.stalls = DistributionSummary.builder("fence.pause.stall").baseUnit("seconds")
                .description("JVM stalls longer than two detector intervals").register(registry);
        Gauge.builder("fence.pause.largest.recent", this, d -> d.largestRecentStall().toNanos() / 1e9).baseUnit("seconds")
                .description("Largest JVM stall in the last 60 s").register(registry);
        Gauge.builder("fence.pause.lease.ttl", this, d -> d.leaseTtl.toNanos() / 1e9).baseUnit("seconds")
                .description("Lease TTL the stalls are compared with").register(registry);
        this.thread = new Thread(this::run, "fence-pause-detector");
        this.thread.setDaemon(true);
    }

    /**
     * Starts a detector.
     *
     * @param interval how often to wake up, e.g. 50 ms; stalls shorter than this are not seen
     * @param leaseTtl the TTL of the leases this process holds, reported beside the stalls
     * @param registry where the metrics go
     */
    public static PauseDetector start(Duration interval, Duration leaseTtl, MeterRegistry registry) {
        if (interval.isNegative() || interval.isZero()) {
            throw new IllegalArgumentException("interval must be positive, got " + interval);
        }
        PauseDetector detector = new PauseDetector(interval, leaseTtl, registry);
        detector.thread.start();
        return detector;
    }

    private void run() {
        while (running) {
            long before = System.nanoTime();
            try {
                TimeUnit.NANOSECONDS.sleep(intervalNanos);
            } catch (InterruptedException e) {
                return;
            }
            record(System.nanoTime() - before - intervalNanos);
        }
    }

    private synchronized void record(long stallNanos) {
        long second = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime());
        int slot = (int) Math.floorMod(second, (long) WINDOW_SECONDS);
        if (secondOfSlot[slot] != second) {
            secondOfSlot[slot] = second;
            maxPerSecond[slot] = 0;
        }
        maxPerSecond[slot] = Math.max(maxPerSecond[slot], Math.max(0, stallNanos));
        if (stallNanos > 2 * intervalNanos) {
            stalls.record(stallNanos / 1e9);
            if (stallNanos > leaseTtl.toNanos() / 2) {
                LOG.warn(
                        "the JVM stalled for {} ms; leases here have a TTL of {} ms: a stall near the TTL lets another worker "
                                + "take over while this one still believes it holds the lease",
                        TimeUnit.NANOSECONDS.toMillis(stallNanos), leaseTtl.toMillis());
            }
        }
    }

    /** The largest stall measured in the last 60 s (zero when none). */
    public synchronized Duration largestRecentStall() {
        long now = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime());
        long max = 0;
        for (int slot = 0; slot < WINDOW_SECONDS; slot++) {
            if (now - secondOfSlot[slot] < WINDOW_SECONDS) {
                max = Math.max(max, maxPerSecond[slot]);
            }
        }
        return Duration.ofNanos(max);
    }

    @Override
    public void close() {
        running = false;
        thread.interrupt();
    }
}
