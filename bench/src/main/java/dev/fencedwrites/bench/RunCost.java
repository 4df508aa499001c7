package dev.fencedwrites.bench;

import com.sun.management.OperatingSystemMXBean;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;
import java.util.regex.Pattern;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.streams.KafkaStreams;

/**
 * Where one timed run's time went, per record: CPU time of this JVM (and of it the stream thread's and the garbage
 * collector's wall time) and of the broker, the stream thread's time split as Kafka Streams reports it (process, commit and
 * poll ratios), and the producer's transaction commits. Taken over the same span as the run's rate: from the first
 * processed record to the end of {@code close()}; the stream thread's figures end at the last record (its thread is gone
 * after {@code close()}).
 *
 * @param wallMicros          wall time per record, us (the inverse of the rate)
 * @param jvmCpuMicros        this JVM's CPU time per record, us (every thread: the stream thread, the clients' network
 *                            threads, RocksDB's background threads, the JIT and the garbage collector)
 * @param streamThreadMicros  the stream threads' CPU time per record, us, until the last record
 * @param gcMicros            the garbage collectors' collection time per record, us (wall time of the pauses and
 *                            concurrent cycles as the JVM counts them)
 * @param brokerCpuMicros     the broker process's CPU time per record, us; NaN when the broker is not a process here
 * @param processRatio        Kafka Streams' {@code process-ratio} of the stream thread, the mean of one sample a second
 * @param commitRatio         its {@code commit-ratio}, sampled the same way
 * @param pollRatio           its {@code poll-ratio}, sampled the same way
 * @param txnCommitMicros     the producers' {@code txn-commit-time-ns-total} per record, us, until the last record (the
 *                            commit inside {@code close()} is not in it); 0 without transactions
 */
record RunCost(double wallMicros, double jvmCpuMicros, double streamThreadMicros, double gcMicros, double brokerCpuMicros,
        double processRatio, double commitRatio, double pollRatio, double txnCommitMicros) {

    /** {@code 9.8 us wall, CPU 14.1 us (stream thread 6.2, GC 0.4) + broker 3.0; process 0.71 commit 0.12 poll 0.05}. */
    String describe() {
        return String.format(Locale.ROOT, "%.2f us wall; CPU %.2f us here (stream thread %.2f, GC %.2f) + %s us broker; "
                + "process %s, commit %s, poll %s of the stream thread; transaction commits %.2f us",
                wallMicros, jvmCpuMicros, streamThreadMicros, gcMicros, orDash(brokerCpuMicros), orDash(processRatio),
                orDash(commitRatio), orDash(pollRatio), txnCommitMicros);
    }

    /** Each field's median over {@code runs} (a field may come from another run than the next). */
    static RunCost median(List<RunCost> runs) {
        return new RunCost(median(runs, RunCost::wallMicros), median(runs, RunCost::jvmCpuMicros),
                median(runs, RunCost::streamThreadMicros), median(runs, RunCost::gcMicros),
                median(runs, RunCost::brokerCpuMicros),
                median(runs, RunCost::processRatio), median(runs, RunCost::commitRatio), median(runs, RunCost::pollRatio),
                median(runs, RunCost::txnCommitMicros));
    }

    private static double median(List<RunCost> runs, ToDoubleFunction<RunCost> field) {
        double[] sorted = runs.stream().mapToDouble(field).sorted().toArray();
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    /** One line of the cost table: {@link #HEADER}'s columns after the row's and the topology's; {@code -} for no figure. */
    String cells() {
        return String.format(Locale.ROOT, "%.2f | %.2f | %.2f | %.2f | %s | %s / %s / %s | %.2f", wallMicros, jvmCpuMicros,
                streamThreadMicros, gcMicros, orDash(brokerCpuMicros), orDash(processRatio), orDash(commitRatio),
                orDash(pollRatio), txnCommitMicros);
    }

    private static String orDash(double value) {
        return Double.isNaN(value) ? "-" : String.format(Locale.ROOT, "%.2f", value);
    }

    /** The cost table's header from the wall time on. */
    static final String HEADER = "wall us | CPU us here | of it stream thread | GC us | broker CPU us | process / commit / poll "
            + "ratio | txn commit us";

    /** Kafka Streams' metrics window for runs measured this way: a ratio sampled each second covers about the last second. */
    static final Duration METRICS_WINDOW = Duration.ofSeconds(1);

    /** Takes a run's {@link RunCost}: {@link #start} at the first record, {@link #sample} while it runs, then the ends. */
    static final class Meter {
        private static final OperatingSystemMXBean OS = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
        /** Kafka Streams' stream threads: {@code <client id>-StreamThread-<n>}, not their clients' network threads. */
        private static final Pattern STREAM_THREAD = Pattern.compile(".*-StreamThread-\\d+");

        private final ProcessHandle broker;
        private long startedAt;
        private long jvmCpuAtStart;
        private long gcAtStart;
        private long brokerAtStart;
        private Map<Long, Long> streamThreadsAtStart = Map.of();
        private double txnCommitAtStart;
        private long nextSampleAt;
        private int samples;
        private double process;
        private double commit;
        private double poll;
        private long streamThreadCpu;
        private double txnCommit;

        /** @param broker the broker's process, or {@code null} when it is not one on this machine */
        Meter(ProcessHandle broker) {
            this.broker = broker;
        }

        /** At the first processed record. */
        void start(KafkaStreams streams, long at) {
            startedAt = at;
            nextSampleAt = at + METRICS_WINDOW.toNanos();
            jvmCpuAtStart = OS.getProcessCpuTime();
            gcAtStart = gcMillis();
            brokerAtStart = brokerCpu();
            streamThreadsAtStart = streamThreads();
            txnCommitAtStart = metricSum(streams, "producer-metrics", "txn-commit-time-ns-total");
        }

        /** While the run goes: a sample of the stream thread's ratios once a second. */
        void sample(KafkaStreams streams, long at) {
            if (startedAt == 0 || at < nextSampleAt) {
                return;
            }
            nextSampleAt = at + METRICS_WINDOW.toNanos();
            samples++;
            process += metricSum(streams, "stream-thread-metrics", "process-ratio");
            commit += metricSum(streams, "stream-thread-metrics", "commit-ratio");
            poll += metricSum(streams, "stream-thread-metrics", "poll-ratio");
        }

        /** At the last record, before {@code close()}: the stream threads' CPU time and the transaction commits. */
        void lastRecord(KafkaStreams streams) {
            long cpu = 0;
            for (Map.Entry<Long, Long> thread : streamThreads().entrySet()) {
                cpu += thread.getValue() - streamThreadsAtStart.getOrDefault(thread.getKey(), 0L);
            }
            streamThreadCpu = cpu;
            txnCommit = metricSum(streams, "producer-metrics", "txn-commit-time-ns-total") - txnCommitAtStart;
        }

        /** After {@code close()}: the cost of {@code records} records. */
        RunCost end(double records) {
            long wall = System.nanoTime() - startedAt;
            long brokerCpu = brokerCpu();
            double perRecord = 1e3 * records;
            return new RunCost(wall / perRecord, (OS.getProcessCpuTime() - jvmCpuAtStart) / perRecord,
                    streamThreadCpu / perRecord, (gcMillis() - gcAtStart) * 1e6 / perRecord,
                    brokerCpu < 0 || brokerAtStart < 0 ? Double.NaN : (brokerCpu - brokerAtStart) / perRecord,
                    samples == 0 ? Double.NaN : process / samples, samples == 0 ? Double.NaN : commit / samples,
                    samples == 0 ? Double.NaN : poll / samples, txnCommit / perRecord);
        }

        /** The broker's CPU time so far, ns; -1 when there is no broker process here or the system does not say. */
        private long brokerCpu() {
            return broker == null ? -1 : broker.info().totalCpuDuration().map(Duration::toNanos).orElse(-1L);
        }

        private static long gcMillis() {
            long total = 0;
            for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
                total += Math.max(0, gc.getCollectionTime());
            }
            return total;
        }

        /** CPU time (ns) of each live stream thread by id. */
        private static Map<Long, Long> streamThreads() {
            Map<Long, Long> cpu = new HashMap<>();
            for (Thread thread : Thread.getAllStackTraces().keySet()) {
                if (STREAM_THREAD.matcher(thread.getName()).matches()) {
                    long time = THREADS.getThreadCpuTime(thread.getId());
                    if (time >= 0) {
                        cpu.put(thread.getId(), time);
                    }
                }
            }
            return cpu;
        }

        /** The sum of {@code name} over {@code group}'s metrics (every thread's, every producer's). */
        private static double metricSum(KafkaStreams streams, String group, String name) {
            double total = 0;
            for (Map.Entry<MetricName, ? extends Metric> metric : streams.metrics().entrySet()) {
                if (metric.getKey().name().equals(name) && metric.getKey().group().equals(group)
                        && metric.getValue().metricValue() instanceof Number value && !Double.isNaN(value.doubleValue())) {
                    total += value.doubleValue();
                }
            }
            return total;
        }
    }
}
