package dev.fencedwrites.bench;

import dev.fencedwrites.bench.EnforcerBench.Kind;
import dev.fencedwrites.enforcer.FenceEnforcerConfig;
import dev.fencedwrites.enforcer.FenceEnforcerTopology;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;

/**
 * The scale rows: the enforcer on an input of {@value #PARTITIONS} partitions with one stream thread (its default),
 * with two stream threads in one instance, and as two instances of one thread each (one {@code application.id}, in this JVM,
 * each with its own state directory, as two processes would be), under each guarantee; records/s of the whole group from its
 * first processed record to the end of the last instance's {@code close()}. On a 2-core machine that also runs the broker,
 * the rows show what a second thread or instance can win when the cores are already busy, not how far the enforcer scales.
 */
final class ScaleBench {
    static final int PARTITIONS = 6;
    private static final Duration NO_PROGRESS = Duration.ofSeconds(120);

    /** One shape of the enforcer: instances in the group and stream threads in each. */
    record Shape(int instances, int threads) {
        String describe() {
            return instances + (instances == 1 ? " instance" : " instances") + " x " + threads
                    + (threads == 1 ? " stream thread" : " stream threads");
        }
    }

    private final EnforcerBench bench;
    private final EnforcerRun runs;
    private final Path stateDir;
    private final Consumer<String> progress;

    ScaleBench(EnforcerBench bench, EnforcerRun runs, Path stateDir, Consumer<String> progress) {
        this.bench = bench;
        this.runs = runs;
        this.stateDir = stateDir;
        this.progress = progress;
    }

    /** Each shape against one instance of one thread, over {@code records} in-order writes over {@code keys} keys. */
    List<Figure> measure(int records, int keys, int valueBytes, List<String> guarantees) throws Exception {
        List<Figure> figures = new ArrayList<>();
        byte[] value = new byte[valueBytes];
        new Random(valueBytes).nextBytes(value);
        try (Admin admin = bench.admin()) {
            String input = "bench.input.scale." + EnforcerBench.shortId();
            BenchKafka.createTopics(admin, PARTITIONS, input);
            progress.accept(
                    String.format(Locale.ROOT, "enforcer: producing %,d records of %d B over %,d keys to %s (%d partitions)",
                            records, valueBytes, keys, input, PARTITIONS));
            bench.produce(admin, input, records, i -> EnforcerBench.record(input, i, keys, value));
            Shape single = new Shape(1, 1);
            // Not counted: with --only scale this JVM has run nothing yet, and the first row would pay for the JIT.
            progress.accept("enforcer:   warm-up, one run of 1 instance x 1 stream thread (not counted)");
            run(admin, input, records, guarantees.get(0), single);
            for (String guarantee : guarantees) {
                double base = run(admin, input, records, guarantee, single);
                for (Shape shape : List.of(new Shape(1, 2), new Shape(2, 1))) {
                    double rate = run(admin, input, records, guarantee, shape);
                    figures.add(new Figure(String.format(Locale.ROOT, "enforcer scaling on %d partitions, %s vs 1 instance x 1 "
                            + "stream thread, %d B values, %s keys, %s", PARTITIONS, shape.describe(), valueBytes,
                            EnforcerBench.count(keys), guarantee), rate, base, "records/s", "", true));
                }
            }
            admin.deleteTopics(List.of(input)).all().get(60, TimeUnit.SECONDS);
        }
        return figures;
    }

    private double run(Admin admin, String input, int records, String guarantee, Shape shape) throws Exception {
        String app = "bench-enforcer-scale-" + EnforcerBench.shortId();
        List<String> outputs = EnforcerRun.outputs(Kind.ENFORCER, app);
        BenchKafka.createTopics(admin, PARTITIONS, outputs.toArray(String[]::new));
        PrometheusMeterRegistry meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        FenceEnforcerConfig config = runs.enforcerConfig(app, guarantee, false, true);
        List<KafkaStreams> group = new ArrayList<>();
        List<FenceEnforcerTopology.Built> builts = new ArrayList<>();
        List<AtomicReference<Throwable>> failures = new ArrayList<>();
        try {
            for (int i = 0; i < shape.instances(); i++) {
                FenceEnforcerTopology.Built built = EnforcerRun.topology(Kind.ENFORCER, config, input, outputs, meters, null,
                        PARTITIONS);
                builts.add(built);
                Properties props = EnforcerRun.streamsProperties(config);
                props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.toString(shape.threads()));
                // Every instance counts as caught up: the assignor then spreads the active tasks over both at once, instead of
                // keeping them on the instance that joined first and giving the other warm-up copies for a probing interval.
                props.put(StreamsConfig.ACCEPTABLE_RECOVERY_LAG_CONFIG, Long.toString(Long.MAX_VALUE));
                props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.resolve(app + "-" + i).toString());
                KafkaStreams streams = new KafkaStreams(built.topology(), props);
                failures.add(EnforcerRun.watchFailures(streams));
                group.add(streams);
            }
            group.forEach(KafkaStreams::start);
            double[] first = awaitProcessed(group, failures, records, input, shape);
            List<String> shares = new ArrayList<>();
            for (KafkaStreams streams : group) {
                shares.add(String.format(Locale.ROOT, "%.0f %%", 100 * EnforcerRun.processTotal(streams) / records));
            }
            for (KafkaStreams streams : group) {
                if (!streams.close(Duration.ofSeconds(60))) {
                    throw new IllegalStateException("the enforcer (" + shape.describe() + ") did not close within 60 s");
                }
            }
            double rate = (records - first[1]) / ((System.nanoTime() - first[0]) / 1e9);
            EnforcerRun.expectDecided(meters, records, 0, input);
            progress.accept(String.format(Locale.ROOT, "enforcer:   %s, %s: %,.0f records/s%s", shape.describe(), guarantee, rate,
                    group.size() > 1 ? " (each instance processed " + String.join(" and ", shares) + " of the records)" : ""));
            return rate;
        } finally {
            for (KafkaStreams streams : group) {
                streams.close(Duration.ofSeconds(60));
                streams.cleanUp();
            }
            for (FenceEnforcerTopology.Built built : builts) {
                built.committedFences().close();
            }
            meters.close();
            BenchKafka.deleteTopicsOf(admin, app, outputs);
        }
    }

    /**
     * When the group was first seen to have processed records ({@link System#nanoTime}) and how many it had then; returns once
     * it processed {@code records}.
     */
    private static double[] awaitProcessed(List<KafkaStreams> group, List<AtomicReference<Throwable>> failures, int records,
            String input, Shape shape) throws InterruptedException {
        long firstAt = 0;
        double firstCount = 0;
        double processed = 0;
        long lastProgressAt = System.nanoTime();
        while (processed < records) {
            for (AtomicReference<Throwable> failure : failures) {
                if (failure.get() != null) {
                    throw new IllegalStateException("the enforcer (" + shape.describe() + ") failed: " + failure.get(),
                            failure.get());
                }
            }
            double now = group.stream().mapToDouble(EnforcerRun::processTotal).sum();
            long at = System.nanoTime();
            if (now > processed) {
                if (processed == 0) {
                    firstAt = at;
                    firstCount = now;
                }
                lastProgressAt = at;
                processed = now;
            } else if (at - lastProgressAt > NO_PROGRESS.toNanos()) {
                throw new IllegalStateException(String.format(Locale.ROOT, "the enforcer (%s) processed %,.0f of %,d records of "
                        + "%s and then nothing for %d s", shape.describe(), processed, records, input, NO_PROGRESS.toSeconds()));
            }
            Thread.sleep(2);
        }
        return new double[]{firstAt, firstCount};
    }
}
