package dev.fencedwrites.bench;

import dev.fencedwrites.enforcer.FenceEnforcerConfig;
import dev.fencedwrites.enforcer.FenceEnforcerTopology;
import dev.fencedwrites.enforcer.TokenVerifier;
import dev.fencedwrites.enforcer.internal.EtcdTokenVerifier;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.NewTopics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;

/**
 * The enforcer's Kafka Streams topology against a pass-through topology (input → output, no
 * state) on the same local broker: throughput over the same input topic, end-to-end latency from
 * produce to the output topic, and the fence state's size per key.
 *
 * <p>Both topologies run with the enforcer's own Kafka Streams properties
 * ({@link FenceEnforcerConfig#streamsProperties()}: one stream thread, the guarantee's default
 * commit interval, 100 ms for {@code exactly_once_v2} and 30 s for {@code at_least_once}), in
 * this JVM, on input topics of {@value #PARTITIONS} partitions (the enforcer's
 * {@code topics.create.partitions} default). The input is what {@code FencedProducer} writes:
 * every record carries {@code fence.token}, {@code fence.seq}, {@code fence.lease} and
 * {@code fence.writer}, keys are spread by Kafka's default partitioner, and every write is in
 * order, so the enforcer accepts all of them: the cost measured is the check, not rejections.
 */
final class EnforcerBench {
    /** The enforcer's {@code topics.create.partitions} default. */
    static final int PARTITIONS = 3;
    /** The broker's default {@code max.message.bytes}, the limit the enforcer reads from its topics. */
    private static final int MAX_MESSAGE_BYTES = 1_048_588;
    private static final Duration NO_PROGRESS = Duration.ofSeconds(120);
    private static final int WARM_UP_RECORDS = 100_000;
    private static final String[] GUARANTEES = {StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE};

    private final String bootstrap;
    private final Path stateDir;
    private final Consumer<String> progress;
    /** The etcd endpoint the enforcer verifies tokens against when a run asks for verification, or {@code null}. */
    private final String etcdEndpoint;

    EnforcerBench(String bootstrap, Path stateDir, Consumer<String> progress) {
        this(bootstrap, stateDir, progress, null);
    }

    EnforcerBench(String bootstrap, Path stateDir, Consumer<String> progress, String etcdEndpoint) {
        this.bootstrap = bootstrap;
        this.stateDir = stateDir;
        this.progress = progress;
        this.etcdEndpoint = etcdEndpoint;
    }

    /** The topology under test: the enforcer or the pass-through, built for one run's topics. */
    enum Kind {
        PASS_THROUGH, ENFORCER
    }

    /**
     * Throughput of the enforcer and of the pass-through over the same input, for each value
     * size, key count and guarantee; and the fence state's bytes per key after the enforcer's
     * {@code exactly_once_v2} run at the largest key count.
     *
     * @param valueSizes value sizes in bytes
     * @param keyCounts  distinct keys; each input topic holds {@code max(keys, minRecords)} records
     * @param minRecords the fewest records an input topic holds
     * @param repeats    runs of each topology per figure (the figure is their mean)
     */
    List<Figure> throughput(int[] valueSizes, int[] keyCounts, int minRecords, int repeats) throws Exception {
        List<Figure> figures = new ArrayList<>();
        int largest = keyCounts[keyCounts.length - 1];
        Figure[] stateSize = null;
        boolean warm = false;
        try (Admin admin = admin()) {
            for (int valueBytes : valueSizes) {
                for (int keys : keyCounts) {
                    int records = Math.max(keys, minRecords);
                    String input = "bench.input." + valueBytes + "b." + keys + "keys." + shortId();
                    createTopics(admin, input);
                    progress.accept(String.format(Locale.ROOT, "enforcer: producing %,d records of %d B over %,d keys to %s", records,
                            valueBytes, keys, input));
                    try {
                        produce(admin, input, records, keys, valueBytes);
                    } catch (IllegalStateException e) {
                        // Seen once on a loaded 2-core machine: batches expired after 120 s. Once more, into a new topic.
                        progress.accept("enforcer:   " + e.getMessage() + "; producing again into a new topic");
                        admin.deleteTopics(List.of(input)).all().get(60, TimeUnit.SECONDS);
                        input = "bench.input." + valueBytes + "b." + keys + "keys." + shortId();
                        createTopics(admin, input);
                        produce(admin, input, records, keys, valueBytes);
                    }
                    if (!warm) {
                        // A short run of each under each guarantee first, not counted, so no figure pays for the JIT and class loading.
                        int warmUp = Math.min(records / 4, WARM_UP_RECORDS);
                        progress.accept(String.format(Locale.ROOT, "enforcer:   warm-up, %,d records through each topology under each guarantee (not counted)", warmUp));
                        for (String guarantee : GUARANTEES) {
                            for (Kind kind : Kind.values()) {
                                runToEnd(admin, kind, input, warmUp, false, 0, guarantee);
                            }
                        }
                        warm = true;
                    }
                    int run = 0;
                    for (String guarantee : GUARANTEES) {
                        boolean measureState = keys == largest && valueBytes == valueSizes[0] && guarantee.equals(StreamsConfig.EXACTLY_ONCE_V2);
                        // Runs in the order A B B A (repeats 2) or A B, A alternating between pass-through and enforcer,
                        // so drift on a busy machine does not always favour one; each figure is the mean of its runs.
                        Kind first = run++ % 2 == 0 ? Kind.PASS_THROUGH : Kind.ENFORCER;
                        Kind second = first == Kind.ENFORCER ? Kind.PASS_THROUGH : Kind.ENFORCER;
                        List<Kind> order = new ArrayList<>();
                        for (int r = 0; r < repeats; r++) {
                            order.addAll(r % 2 == 0 ? List.of(first, second) : List.of(second, first));
                        }
                        Map<Kind, Double> rates = new HashMap<>();
                        for (Kind kind : order) {
                            boolean takeState = measureState && kind == Kind.ENFORCER && stateSize == null; // each run starts with an empty store
                            Throughput result = runToEnd(admin, kind, input, records, true, takeState ? keys : 0, guarantee);
                            rates.merge(kind, result.recordsPerSecond() / repeats, Double::sum);
                            progress.accept(String.format(Locale.ROOT, "enforcer:   %s, %s: %,.0f records/s", describe(kind), guarantee,
                                    result.recordsPerSecond()));
                            if (result.stateSize() != null) {
                                stateSize = result.stateSize();
                            }
                        }
                        figures.add(new Figure(String.format(Locale.ROOT, "enforcer vs pass-through throughput, %s values, %s keys, %s",
                                valueBytes >= 1024 ? valueBytes / 1024 + " KB" : valueBytes + " B", count(keys), guarantee),
                                rates.get(Kind.ENFORCER), rates.get(Kind.PASS_THROUGH), "records/s", ">= 0.95", true));
                    }
                    admin.deleteTopics(List.of(input)).all().get(60, TimeUnit.SECONDS);
                }
            }
        }
        if (stateSize != null) {
            figures.addAll(List.of(stateSize));
        }
        return figures;
    }

    /** One throughput run's result; {@code stateSize} only when asked for; {@code etcdReadsPerSecond} 0 without verification. */
    record Throughput(double recordsPerSecond, Figure[] stateSize, double etcdReadsPerSecond, double etcdReads) {
    }

    /**
     * Runs {@code kind} over {@code input} from the beginning until Kafka Streams has processed
     * {@code records} records, then closes it. The rate is taken from the first processed record
     * (thread metric {@code process-total}, so the group join and task start-up are not counted)
     * to the end of {@code close()}, which flushes the fence store's cache to RocksDB and the
     * changelog, flushes the producer and commits: under at_least_once (30 s commit interval) a
     * run would otherwise end before any of that. With {@code whole}, {@code records} is all of
     * the input and the enforcer must have accepted every one of them. With {@code stateKeys > 0},
     * also measures the fence state's size per key over that many keys.
     */
    private Throughput runToEnd(Admin admin, Kind kind, String input, int records, boolean whole, int stateKeys, String guarantee) throws Exception {
        return runToEnd(admin, kind, input, records, whole, stateKeys, guarantee, false);
    }

    /**
     * {@link #runToEnd(Admin, Kind, String, int, boolean, int, String)}; with {@code verify}, the
     * enforcer verifies every token that raises a fence against {@link #etcdEndpoint} with the
     * enforcer's own verifier and defaults ({@code etcd.endpoints} set, the rest unset), and the
     * result carries its etcd range reads per second over the timed part.
     */
    Throughput runToEnd(Admin admin, Kind kind, String input, int records, boolean whole, int stateKeys, String guarantee, boolean verify)
            throws Exception {
        String app = "bench-" + (kind == Kind.ENFORCER ? "enforcer" : "pass-through") + "-" + shortId();
        List<String> outputs = outputs(kind, app);
        createTopics(admin, outputs.toArray(String[]::new));
        PrometheusMeterRegistry meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        FenceEnforcerConfig config = enforcerConfig(app, guarantee, verify);
        TokenVerifier verifier = verify ? new EtcdTokenVerifier(config.tokenVerification().orElseThrow(), config.tokenVerificationOptions(), meters) : null;
        KafkaStreams streams = new KafkaStreams(topology(kind, input, outputs, meters, verifier), streamsProperties(config));
        AtomicReference<Throwable> failure = watchFailures(streams);
        try {
            streams.start();
            long firstAt = 0;
            double firstCount = 0;
            double processed = 0;
            long lastProgressAt = System.nanoTime();
            while (processed < records) {
                if (failure.get() != null) {
                    throw new IllegalStateException(describe(kind) + " failed: " + failure.get(), failure.get());
                }
                double now = processTotal(streams);
                long at = System.nanoTime();
                if (now > processed) {
                    lastProgressAt = at;
                    if (processed == 0) {
                        firstAt = at;
                        firstCount = now;
                    }
                    processed = now;
                } else if (at - lastProgressAt > NO_PROGRESS.toNanos()) {
                    throw new IllegalStateException(String.format(Locale.ROOT, "%s processed %,.0f of %,d records of %s and then nothing for %d s (state %s)",
                            describe(kind), processed, records, input, NO_PROGRESS.toSeconds(), streams.state()));
                }
                Thread.sleep(2);
            }
            if (!streams.close(Duration.ofSeconds(60))) {
                throw new IllegalStateException(describe(kind) + " did not close within 60 s");
            }
            double seconds = (System.nanoTime() - firstAt) / 1e9;
            double rate = (processed - firstCount) / seconds;
            if (kind == Kind.ENFORCER && whole) {
                expectAllAccepted(meters, records, input);
            }
            Figure[] stateSize = stateKeys > 0 ? stateSize(admin, app, stateKeys) : null;
            // Reads from the first record on: the ones before (at most the first poll's) are not in the rate either, so this slightly overstates.
            double reads = verify ? meters.get("fence.token.verification.etcd.reads").counter().count() : 0;
            double etcdReads = verify ? meters.get("fence.token.verification.etcd.reads").counter().count() : 0;
            return new Throughput(rate, stateSize, reads / seconds, etcdReads);
        } finally {
            streams.close(Duration.ofSeconds(60));
            if (verifier != null) {
                verifier.close();
            }
            streams.cleanUp();
            meters.close();
            deleteTopicsOf(admin, app, outputs);
        }
    }

    /** The input is all in order, so a rejection means the bench measured the wrong path (headers, partitions). */
    private static void expectAllAccepted(PrometheusMeterRegistry meters, int records, String input) {
        double accepted = meters.get("accepted.writes").counter().count();
        double rejected = meters.find("fenced.writes").counters().stream().mapToDouble(io.micrometer.core.instrument.Counter::count).sum();
        if (accepted != records || rejected != 0) {
            throw new IllegalStateException(String.format(Locale.ROOT,
                    "the enforcer accepted %,.0f and rejected %,.0f of the %,d records of %s; the input is all in order, so it should accept all of them",
                    accepted, rejected, records, input));
        }
    }

    /** A stream thread's unexpected exception, kept for the caller to report, and the client shut down. */
    private static AtomicReference<Throwable> watchFailures(KafkaStreams streams) {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        streams.setUncaughtExceptionHandler(e -> {
            failure.compareAndSet(null, e);
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        return failure;
    }

    /** Deletes a run's topics: {@code topics} and the application's internal ones (changelog). */
    private static void deleteTopicsOf(Admin admin, String app, List<String> topics) throws Exception {
        List<String> delete = new ArrayList<>(topics);
        delete.addAll(admin.listTopics().names().get(30, TimeUnit.SECONDS).stream().filter(t -> t.startsWith(app + "-")).toList());
        admin.deleteTopics(delete).all().get(60, TimeUnit.SECONDS);
    }

    /**
     * Bytes per key of the enforcer's state after a run over {@code keys} distinct keys: the
     * RocksDB files of the {@value FenceEnforcerTopology#STORE} store (flushed by close), and the
     * changelog topic's log on the broker's disk (before compaction: one record per key per commit).
     */
    private Figure[] stateSize(Admin admin, String app, int keys) throws Exception {
        long store;
        try (Stream<Path> files = Files.walk(stateDir.resolve(app))) {
            store = files.filter(Files::isRegularFile).filter(f -> f.toString().contains("/rocksdb/" + FenceEnforcerTopology.STORE + "/"))
                    .mapToLong(EnforcerBench::size).sum();
        }
        String changelog = app + "-" + FenceEnforcerTopology.STORE + "-changelog";
        int broker = admin.describeCluster().nodes().get(30, TimeUnit.SECONDS).iterator().next().id();
        long log = 0;
        for (LogDirDescription dir : admin.describeLogDirs(List.of(broker)).allDescriptions().get(30, TimeUnit.SECONDS).get(broker).values()) {
            for (Map.Entry<TopicPartition, ReplicaInfo> replica : dir.replicaInfos().entrySet()) {
                if (replica.getKey().topic().equals(changelog)) {
                    log += replica.getValue().size();
                }
            }
        }
        if (store == 0 || log == 0) {
            throw new IllegalStateException("the enforcer's state is empty after " + keys + " keys: store " + store + " B, changelog " + log + " B");
        }
        progress.accept(String.format(Locale.ROOT, "enforcer:   fence state at %,d keys: store %,d B, changelog %,d B", keys, store, log));
        return new Figure[] {
                new Figure("fence state per key at " + count(keys) + " keys: state store (RocksDB files)", (double) store / keys, Double.NaN, "B/key", "", false),
                new Figure("fence state per key at " + count(keys) + " keys: changelog topic (log on disk)", (double) log / keys, Double.NaN, "B/key", "", false)};
    }

    /**
     * End-to-end latency of each topology and guarantee: records produced at {@code ratePerSecond}
     * for {@code duration} into a fresh input topic while the topology runs, read from the output
     * topic with {@code read_committed}; latency is the time a record is read minus its produce
     * timestamp (which Kafka Streams carries to the output). The first second is warm-up.
     */
    List<Figure> latency(int ratePerSecond, Duration duration) throws Exception {
        List<Figure> figures = new ArrayList<>();
        try (Admin admin = admin()) {
            int run = 0;
            for (String guarantee : new String[] {StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE}) {
                Kind first = run++ % 2 == 0 ? Kind.PASS_THROUGH : Kind.ENFORCER;
                Kind second = first == Kind.ENFORCER ? Kind.PASS_THROUGH : Kind.ENFORCER;
                Map<Kind, double[]> latencies = new HashMap<>();
                for (Kind kind : new Kind[] {first, second}) {
                    progress.accept(String.format(Locale.ROOT, "enforcer: end-to-end latency, %s, %s: %d records/s for %d s", describe(kind), guarantee,
                            ratePerSecond, duration.toSeconds()));
                    latencies.put(kind, latencyRun(admin, kind, guarantee, ratePerSecond, duration));
                }
                for (int p : new int[] {50, 99}) {
                    figures.add(new Figure("end-to-end latency p" + p + ", produce to output topic, enforcer vs pass-through, " + guarantee,
                            AcquisitionBench.percentile(latencies.get(Kind.ENFORCER), p), AcquisitionBench.percentile(latencies.get(Kind.PASS_THROUGH), p),
                            "ms", "", false));
                }
            }
        }
        return figures;
    }

    private double[] latencyRun(Admin admin, Kind kind, String guarantee, int ratePerSecond, Duration duration) throws Exception {
        String app = "bench-latency-" + (kind == Kind.ENFORCER ? "enforcer" : "pass-through") + "-" + shortId();
        String input = app + ".input";
        List<String> outputs = outputs(kind, app);
        List<String> all = new ArrayList<>(outputs);
        all.add(input);
        createTopics(admin, all.toArray(String[]::new));
        PrometheusMeterRegistry meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        KafkaStreams streams = new KafkaStreams(topology(kind, input, outputs, meters, null), streamsProperties(enforcerConfig(app, guarantee, false)));
        AtomicReference<Throwable> failure = watchFailures(streams);
        CountDownLatch running = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.RUNNING) {
                running.countDown();
            }
        });
        List<Double> samples = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProperties());
             KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProperties(0))) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) {
                partitions.add(new TopicPartition(outputs.get(0), p));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            partitions.forEach(consumer::position);
            streams.start();
            if (!running.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException(describe(kind) + " did not reach RUNNING in 60 s (state " + streams.state() + ")");
            }
            int total = (int) (ratePerSecond * duration.toSeconds());
            long start = System.currentTimeMillis();
            long warmUpEnds = start + 1000;
            Thread sender = new Thread(() -> {
                long startNanos = System.nanoTime();
                for (int i = 0; i < total; i++) {
                    long due = startNanos + (long) (i * 1e9 / ratePerSecond);
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        java.util.concurrent.locks.LockSupport.parkNanos(wait);
                    }
                    producer.send(record(input, i, 1000, new byte[100]));
                }
                producer.flush();
            }, "bench-latency-producer");
            sender.start();
            int received = 0;
            long deadline = System.nanoTime() + duration.toNanos() + TimeUnit.SECONDS.toNanos(90);
            while (received < total && System.nanoTime() < deadline) {
                if (failure.get() != null) {
                    throw new IllegalStateException(describe(kind) + " failed: " + failure.get(), failure.get());
                }
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(50))) {
                    long now = System.currentTimeMillis();
                    received++;
                    if (record.timestamp() >= warmUpEnds) {
                        samples.add((double) (now - record.timestamp()));
                    }
                }
            }
            sender.join(TimeUnit.SECONDS.toMillis(30));
            if (received < total) {
                throw new IllegalStateException(String.format(Locale.ROOT, "%s: only %d of %d records reached %s within 90 s of the last produce",
                        describe(kind), received, total, outputs.get(0)));
            }
        } finally {
            streams.close(Duration.ofSeconds(60));
            streams.cleanUp();
            meters.close();
            deleteTopicsOf(admin, app, all);
        }
        if (samples.isEmpty()) {
            throw new IllegalStateException(describe(kind) + ": no latency samples after the 1 s warm-up");
        }
        return samples.stream().mapToDouble(Double::doubleValue).toArray();
    }

    static String describe(Kind kind) {
        return kind == Kind.ENFORCER ? "enforcer" : "pass-through";
    }

    /** The topics a run writes to; the first is the one records reach when they pass. */
    private static List<String> outputs(Kind kind, String app) {
        return kind == Kind.ENFORCER ? List.of(app + ".accepted", app + ".rejected") : List.of(app + ".output");
    }

    /** The enforcer's counters go to {@code meters}, a Prometheus registry as in the enforcer itself. */
    private static Topology topology(Kind kind, String input, List<String> outputs, PrometheusMeterRegistry meters, TokenVerifier verifier) {
        if (kind == Kind.ENFORCER) {
            return FenceEnforcerTopology.build(input, outputs.get(0), outputs.get(1), null,
                    new FenceEnforcerTopology.Limits(PARTITIONS, MAX_MESSAGE_BYTES, MAX_MESSAGE_BYTES, MAX_MESSAGE_BYTES), meters, verifier);
        }
        Topology topology = new Topology();
        topology.addSource("input", new ByteArrayDeserializer(), new ByteArrayDeserializer(), input);
        topology.addSink("output", outputs.get(0), new ByteArraySerializer(), new ByteArraySerializer(), "input");
        return topology;
    }

    /** The enforcer's configuration for this run; with {@code verify}, {@code etcd.endpoints} names the bench's etcd. */
    private FenceEnforcerConfig enforcerConfig(String app, String guarantee, boolean verify) {
        Map<String, String> settings = new HashMap<>();
        settings.put(FenceEnforcerConfig.BOOTSTRAP_SERVERS, bootstrap);
        settings.put(FenceEnforcerConfig.APPLICATION_ID, app);
        settings.put(FenceEnforcerConfig.STATE_DIR, stateDir.toString());
        settings.put(FenceEnforcerConfig.PROCESSING_GUARANTEE, guarantee);
        if (verify) {
            if (etcdEndpoint == null) {
                throw new IllegalStateException("a run with token verification needs an etcd endpoint");
            }
            settings.put(EtcdSettings.ENDPOINTS, etcdEndpoint);
        }
        return new FenceEnforcerConfig(settings);
    }

    /** The enforcer's own Kafka Streams properties for this run; the pass-through gets the same. */
    private static Properties streamsProperties(FenceEnforcerConfig config) {
        Properties props = config.streamsProperties();
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        return props;
    }

    /** Sum of the stream threads' {@code process-total}: records processed so far. */
    private static double processTotal(KafkaStreams streams) {
        double total = 0;
        for (Map.Entry<MetricName, ? extends Metric> metric : streams.metrics().entrySet()) {
            MetricName name = metric.getKey();
            if (name.name().equals("process-total") && name.group().equals("stream-thread-metrics")) {
                total += ((Number) metric.getValue().metricValue()).doubleValue();
            }
        }
        return total;
    }

    private void produce(Admin admin, String topic, int records, int keys, int valueBytes) throws Exception {
        byte[] value = new byte[valueBytes];
        new Random(valueBytes).nextBytes(value);
        produce(admin, topic, records, i -> record(topic, i, keys, value));
    }

    /** Produces {@code records} records, the i-th from {@code recordAt}, and checks that the topic holds them all. */
    void produce(Admin admin, String topic, int records, java.util.function.IntFunction<ProducerRecord<byte[], byte[]>> recordAt) throws Exception {
        AtomicReference<Exception> failure = new AtomicReference<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProperties(20))) {
            for (int i = 0; i < records && failure.get() == null; i++) {
                producer.send(recordAt.apply(i), (metadata, e) -> {
                    if (e != null) {
                        failure.compareAndSet(null, e);
                    }
                });
            }
            producer.flush();
        }
        if (failure.get() != null) {
            throw new IllegalStateException("producing the input to " + topic + " failed: " + failure.get(), failure.get());
        }
        Map<TopicPartition, OffsetSpec> ends = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            ends.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        long written = 0;
        for (ListOffsetsResult.ListOffsetsResultInfo end : admin.listOffsets(ends).all().get(30, TimeUnit.SECONDS).values()) {
            written += end.offset();
        }
        if (written != records) {
            throw new IllegalStateException(String.format(Locale.ROOT, "%s holds %,d records, expected %,d", topic, written, records));
        }
    }

    /**
     * The {@code i}-th write of the input: key {@code i % keys}, each key's writes in order (a
     * new token every fourth write, seq 1 to 4 under each), with the headers FencedProducer adds.
     */
    private static ProducerRecord<byte[], byte[]> record(String topic, int i, int keys, byte[] value) {
        int key = i % keys;
        int write = i / keys;
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, FenceHeaders.encode(1000L + write / 4));
        headers.add(FenceHeaders.SEQ, FenceHeaders.encode(write % 4 + 1L));
        headers.add(FenceHeaders.LEASE, FenceHeaders.encode(7_587_869_054_862_721_000L + key));
        headers.add(FenceHeaders.WRITER, FenceHeaders.encode("bench-worker-" + key % 16));
        return new ProducerRecord<>(topic, null, null, String.format(Locale.ROOT, "customer-%07d", key).getBytes(StandardCharsets.UTF_8), value, headers);
    }

    Properties producerProperties(int lingerMs) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.LINGER_MS_CONFIG, Integer.toString(lingerMs));
        props.put(ProducerConfig.BATCH_SIZE_CONFIG, Integer.toString(256 * 1024));
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        return props;
    }

    private Properties consumerProperties() {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        return props;
    }

    Admin admin() {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap));
    }

    static void createTopics(Admin admin, String... topics) throws Exception {
        List<NewTopic> create = new ArrayList<>();
        for (String topic : topics) {
            create.add(new NewTopic(topic, PARTITIONS, (short) 1));
        }
        admin.createTopics(create).all().get(60, TimeUnit.SECONDS);
        NewTopics.awaitWritable(admin, List.of(topics), Duration.ofSeconds(60));
    }

    private static long size(Path file) {
        try {
            return Files.size(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static String shortId() {
        return UUID.randomUUID().toString().substring(0, 8);
    }

    /** 10 000 as "10k", 1 000 000 as "1M". */
    static String count(int n) {
        if (n >= 1_000_000 && n % 1_000_000 == 0) {
            return n / 1_000_000 + "M";
        }
        if (n >= 1000 && n % 1000 == 0) {
            return n / 1000 + "k";
        }
        return Integer.toString(n);
    }
}
