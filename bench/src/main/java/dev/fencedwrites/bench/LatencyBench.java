package dev.fencedwrites.bench;

import dev.fencedwrites.bench.EnforcerBench.Kind;
import dev.fencedwrites.enforcer.FenceEnforcerConfig;
import dev.fencedwrites.enforcer.FenceEnforcerTopology;
import dev.fencedwrites.enforcer.TokenVerifier;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;

/**
 * End-to-end latency of the enforcer against the pass-through: records produced at a fixed rate into
 * a fresh input topic while the topology runs, read from the output topic with {@code read_committed};
 * latency is the time a record is read minus its produce timestamp (which Kafka Streams carries to the
 * output). The first second is warm-up.
 */
final class LatencyBench {
    private final BenchKafka kafka;
    private final EnforcerRun runs;
    private final Consumer<String> progress;

    LatencyBench(BenchKafka kafka, EnforcerRun runs, Consumer<String> progress) {
        this.kafka = kafka;
        this.runs = runs;
        this.progress = progress;
    }

    /** p50 and p99 of each topology under each guarantee, at {@code ratePerSecond} for {@code duration}. */
    List<Figure> latency(int ratePerSecond, Duration duration) throws Exception {
        List<Figure> figures = new ArrayList<>();
        try (Admin admin = kafka.admin()) {
            int run = 0;
            for (String guarantee : new String[]{StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE}) {
                Kind first = run++ % 2 == 0 ? Kind.PASS_THROUGH : Kind.ENFORCER;
                Kind second = first == Kind.ENFORCER ? Kind.PASS_THROUGH : Kind.ENFORCER;
                Map<Kind, double[]> latencies = new HashMap<>();
                for (Kind kind : new Kind[]{first, second}) {
                    progress.accept(String.format(Locale.ROOT, "enforcer: end-to-end latency, %s, %s: %d records/s for %d s",
                            EnforcerBench.describe(kind), guarantee, ratePerSecond, duration.toSeconds()));
                    latencies.put(kind, latencyRun(admin, kind, guarantee, ratePerSecond, duration, false,
                            (topic, i) -> EnforcerBench.record(topic, i, 1000, new byte[100])));
                }
                for (int p : new int[]{50, 99}) {
                    figures.add(new Figure(
                            "end-to-end latency p" + p + ", produce to output topic, enforcer vs pass-through, " + guarantee,
                            AcquisitionBench.percentile(latencies.get(Kind.ENFORCER), p),
                            AcquisitionBench.percentile(latencies.get(Kind.PASS_THROUGH), p),
                            "ms", p == 99 ? "<= 1.1" : "", false));
                }
            }
        }
        return figures;
    }

    /**
     * p50 and p99 of the enforcer with token verification against without it, {@code exactly_once_v2}, at
     * {@code ratePerSecond} for {@code duration}, over the records {@code recordOf} gives (the i-th input record for a
     * topic), whose tokens must be real in the etcd the enforcer verifies against.
     */
    List<Figure> verifiedLatency(String shape, int ratePerSecond, Duration duration,
            BiFunction<String, Integer, ProducerRecord<byte[], byte[]>> recordOf) throws Exception {
        Map<Boolean, double[]> latencies = new HashMap<>();
        String guarantee = StreamsConfig.EXACTLY_ONCE_V2;
        try (Admin admin = kafka.admin()) {
            for (boolean verify : new boolean[]{false, true}) {
                progress.accept(String.format(Locale.ROOT,
                        "verification: end-to-end latency, enforcer, verification %s, %s: %d records/s for %d s",
                        verify ? "on" : "off", guarantee, ratePerSecond, duration.toSeconds()));
                latencies.put(verify, latencyRun(admin, Kind.ENFORCER, guarantee, ratePerSecond, duration, verify, recordOf));
            }
        }
        List<Figure> figures = new ArrayList<>();
        for (int p : new int[]{50, 99}) {
            figures.add(new Figure("end-to-end latency p" + p + ", produce to accepted topic, enforcer with vs without token "
                    + "verification, " + shape + ", " + guarantee,
                    AcquisitionBench.percentile(latencies.get(true), p), AcquisitionBench.percentile(latencies.get(false), p),
                    "ms", "", false));
        }
        return figures;
    }

    private double[] latencyRun(Admin admin, Kind kind, String guarantee, int ratePerSecond, Duration duration, boolean verify,
            BiFunction<String, Integer, ProducerRecord<byte[], byte[]>> recordOf) throws Exception {
        String app = "bench-latency-" + (kind == Kind.ENFORCER ? "enforcer" : "pass-through") + "-" + BenchKafka.shortId();
        String input = app + ".input";
        List<String> outputs = EnforcerRun.outputs(kind, app);
        List<String> all = new ArrayList<>(outputs);
        all.add(input);
        BenchKafka.createTopics(admin, all.toArray(String[]::new));
        PrometheusMeterRegistry meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        FenceEnforcerConfig config = runs.enforcerConfig(app, guarantee, verify, kind == Kind.ENFORCER);
        TokenVerifier verifier = verify ? runs.verifier(config, meters) : null;
        FenceEnforcerTopology.Built built = EnforcerRun.topology(kind, config, input, outputs, meters, verifier);
        KafkaStreams streams = new KafkaStreams(built.topology(), EnforcerRun.streamsProperties(config, verifier));
        AtomicReference<Throwable> failure = EnforcerRun.watchFailures(streams);
        CountDownLatch running = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.RUNNING) {
                running.countDown();
            }
        });
        List<Double> samples = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(kafka.consumerProperties());
                KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(kafka.producerProperties(0))) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (int p = 0; p < EnforcerBench.PARTITIONS; p++) {
                partitions.add(new TopicPartition(outputs.get(0), p));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            partitions.forEach(consumer::position);
            streams.start();
            if (!running.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException(
                        EnforcerBench.describe(kind) + " did not reach RUNNING in 60 s (state " + streams.state() + ")");
            }
            int total = (int) (ratePerSecond * duration.toSeconds());
            long warmUpEnds = System.currentTimeMillis() + 1000;
            Thread sender = sender(producer, input, total, ratePerSecond, recordOf);
            sender.start();
            int received = receive(consumer, failure, kind, total, warmUpEnds, duration, samples);
            sender.join(TimeUnit.SECONDS.toMillis(30));
            if (received < total) {
                throw new IllegalStateException(
                        String.format(Locale.ROOT, "%s: only %d of %d records reached %s within 90 s of the last produce",
                                EnforcerBench.describe(kind), received, total, outputs.get(0)));
            }
        } finally {
            streams.close(Duration.ofSeconds(60));
            built.committedFences().close();
            if (verifier != null) {
                verifier.close();
            }
            streams.cleanUp();
            meters.close();
            BenchKafka.deleteTopicsOf(admin, app, all);
        }
        if (samples.isEmpty()) {
            throw new IllegalStateException(EnforcerBench.describe(kind) + ": no latency samples after the 1 s warm-up");
        }
        return samples.stream().mapToDouble(Double::doubleValue).toArray();
    }

    /** A thread that sends {@code total} input records ({@code recordOf}) at {@code ratePerSecond}, each when due. */
    private static Thread sender(KafkaProducer<byte[], byte[]> producer, String input, int total, int ratePerSecond,
            BiFunction<String, Integer, ProducerRecord<byte[], byte[]>> recordOf) {
        return new Thread(() -> {
            long startNanos = System.nanoTime();
            for (int i = 0; i < total; i++) {
                long due = startNanos + (long) (i * 1e9 / ratePerSecond);
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    LockSupport.parkNanos(wait);
                }
                producer.send(recordOf.apply(input, i));
            }
            producer.flush();
        }, "bench-latency-producer");
    }

    /**
     * Reads up to {@code total} records within the run's duration plus 90 s, sampling the latency of those produced after
     * {@code warmUpEnds}; returns how many were read.
     */
    private static int receive(KafkaConsumer<byte[], byte[]> consumer, AtomicReference<Throwable> failure, Kind kind, int total,
            long warmUpEnds,
            Duration duration, List<Double> samples) {
        int received = 0;
        long deadline = System.nanoTime() + duration.toNanos() + TimeUnit.SECONDS.toNanos(90);
        while (received < total && System.nanoTime() < deadline) {
            if (failure.get() != null) {
                throw new IllegalStateException(EnforcerBench.describe(kind) + " failed: " + failure.get(), failure.get());
            }
            for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(50))) {
                long now = System.currentTimeMillis();
                received++;
                if (record.timestamp() >= warmUpEnds) {
                    samples.add((double) (now - record.timestamp()));
                }
            }
        }
        return received;
    }
}
