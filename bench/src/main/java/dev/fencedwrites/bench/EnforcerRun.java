package dev.fencedwrites.bench;

import dev.fencedwrites.bench.EnforcerBench.Kind;
import dev.fencedwrites.bench.EnforcerBench.Throughput;
import dev.fencedwrites.enforcer.FenceEnforcerConfig;
import dev.fencedwrites.enforcer.FenceEnforcerTopology;
import dev.fencedwrites.enforcer.TokenVerifier;
import dev.fencedwrites.etcd.EtcdSettings;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;

/**
 * One timed run of a topology under test (the enforcer or the pass-through) in this JVM: builds it
 * with the enforcer's own Kafka Streams properties, runs it over an input topic until it has
 * processed the records asked for, and measures throughput, and on request the fence state's size
 * per key and the etcd reads of token verification. Stream-thread failures and stalls end a run
 * with an {@link IllegalStateException} that says what happened.
 */
final class EnforcerRun {
    /** The broker's default {@code max.message.bytes}, the limit the enforcer reads from its topics. */
    private static final int MAX_MESSAGE_BYTES = 1_048_588;
    private static final Duration NO_PROGRESS = Duration.ofSeconds(120);

    private final BenchKafka kafka;
    private final Path stateDir;
    private final Consumer<String> progress;
    /** The etcd endpoint the enforcer verifies tokens against when a run asks for verification, or {@code null}. */
    private final String etcdEndpoint;

    /** Enforcer settings for the enforcer's runs on top of the bench's. */
    private final Map<String, String> enforcerSettings;

    /** Kafka Streams settings for every topology's runs, by Kafka Streams' names. */
    private final Map<String, String> streamsSettings;

    /** How the stateful baseline's store is built in the runs from now on; {@code null}: as the enforcer's fence store. */
    private StoreVariant storeVariant;

    /** Where verifying runs get their verifier; {@code null}: the enforcer's own, against {@link #etcdEndpoint}. */
    private Supplier<TokenVerifier> verifiers;

    /** A verifying run's verifier: from {@link #useVerifiers}, else the enforcer's own, its meters in {@code meters}. */
    TokenVerifier verifier(FenceEnforcerConfig config, MeterRegistry meters) {
        return verifiers != null ? verifiers.get() : TokenVerifier.etcd(config.tokenVerification().orElseThrow(), config, meters);
    }

    /** The stateful baseline's runs from now on build its store as {@code variant} says ({@code null}: as the fence store). */
    void useStoreVariant(StoreVariant variant) {
        this.storeVariant = variant;
    }

    /** Verifying runs from now on use a verifier from {@code verifiers} ({@code null}: the enforcer's own). */
    void useVerifiers(Supplier<TokenVerifier> verifiers) {
        this.verifiers = verifiers;
    }

    EnforcerRun(BenchKafka kafka, Path stateDir, Consumer<String> progress, String etcdEndpoint,
            Map<String, String> enforcerSettings, Map<String, String> streamsSettings) {
        this.enforcerSettings = Map.copyOf(enforcerSettings);
        this.streamsSettings = Map.copyOf(streamsSettings);
        this.kafka = kafka;
        this.stateDir = stateDir;
        this.progress = progress;
        this.etcdEndpoint = etcdEndpoint;
    }

    /**
     * Runs {@code kind} over {@code input} from the beginning until Kafka Streams has processed
     * {@code records} records, then closes it. The rate is taken from the first processed record
     * (thread metric {@code process-total}, so the group join and task start-up are not counted)
     * to the end of {@code close()}, which flushes the fence store's cache to RocksDB and the
     * changelog, flushes the producer and commits: under at_least_once (30 s commit interval) a
     * run would otherwise end before any of that. With {@code whole}, {@code records} is all of
     * the input and the enforcer must have accepted every one of them. With {@code stateKeys > 0},
     * also measures the fence state's size per key over that many keys. With {@code verify}, the
     * enforcer verifies every token that raises a fence against the bench's etcd with the
     * enforcer's own verifier and defaults ({@code etcd.endpoints} set, the rest unset), and the
     * result carries its etcd range reads per second over the timed part.
     */
    Throughput runToEnd(Admin admin, Kind kind, String input, int records, boolean whole, int stateKeys, String guarantee,
            boolean verify)
            throws Exception {
        return runToEnd(admin, kind, input, records, whole, stateKeys, guarantee, verify, records, 0);
    }

    /**
     * {@link #runToEnd(Admin, Kind, String, int, boolean, int, String, boolean)} over an input of which {@code processed -
     * records} records are misrouted: Kafka Streams processes each of those twice, from the input and from the
     * repartition topic, so the run ends after {@code processed} records; the rate is still of input records. With
     * {@code whole}, the enforcer must have rejected exactly {@code stale} records and accepted the others.
     */
    Throughput runToEnd(Admin admin, Kind kind, String input, int records, boolean whole, int stateKeys, String guarantee,
            boolean verify, int processedTarget, int stale)
            throws Exception {
        String app = "bench-" + EnforcerBench.describe(kind).replace(' ', '-') + "-" + BenchKafka.shortId();
        List<String> outputs = outputs(kind, app);
        BenchKafka.createTopics(admin, outputs.toArray(String[]::new));
        PrometheusMeterRegistry meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        FenceEnforcerConfig config = enforcerConfig(app, guarantee, verify, kind == Kind.ENFORCER);
        TokenVerifier verifier = verify ? verifier(config, meters) : null;
        FenceEnforcerTopology.Built built = topology(kind, config, input, outputs, meters, verifier, EnforcerBench.PARTITIONS,
                storeVariant(config));
        KafkaStreams streams = new KafkaStreams(built.topology(), measuredProperties(kind, config, verifier));
        AtomicReference<Throwable> failure = watchFailures(streams);
        RunCost.Meter meter = new RunCost.Meter(kafka.broker());
        try {
            streams.start();
            Processed processed = awaitProcessed(streams, failure, kind, processedTarget, input, meter);
            meter.lastRecord(streams);
            if (!streams.close(Duration.ofSeconds(60))) {
                throw new IllegalStateException(EnforcerBench.describe(kind) + " did not close within 60 s");
            }
            double seconds = (System.nanoTime() - processed.firstAt()) / 1e9;
            double rate = (processed.count() - processed.firstCount()) / seconds * records / processedTarget;
            RunCost cost = meter.end((processed.count() - processed.firstCount()) * records / processedTarget);
            if (kind == Kind.ENFORCER && whole) {
                expectDecided(meters, records, stale, input);
            }
            Figure[] stateSize = null;
            if (stateKeys > 0) {
                stateSize = FenceStateSize.measure(admin, config, app, input, outputs, stateDir.resolve("restore-" + app),
                        stateKeys);
                progress.accept(FenceStateSize.describe(stateSize));
            }
            // Reads from the first record on: the ones before (at most the first poll's) are not in the rate either, so this
            // slightly overstates.
            Counter readCounter = meters.find("fence.enforcer.token.verification.etcd.reads").counter();
            double etcdReads = readCounter == null ? 0 : readCounter.count();
            Counter indexCounter = meters.find("fence.enforcer.token.verification.index.lookups").tag("result", "answered")
                    .counter();
            double indexAnswered = indexCounter == null ? 0 : indexCounter.count();
            Counter verifiedCounter = meters.find("fence.enforcer.token.verifications").tag("outcome", "verified").counter();
            double verified = verifiedCounter == null ? 0 : verifiedCounter.count();
            if (readCounter != null) {
                progress.accept(String.format(Locale.ROOT, "verification:     answered by the index of lock holders %,.0f, "
                        + "reads sent ahead %,.0f, answers used %,.0f, not sent ahead (read.ahead.max reached) %,.0f",
                        indexAnswered, readAhead(meters, "sent"), readAhead(meters, "used"), readAhead(meters, "full")));
            }
            return new Throughput(rate, stateSize, etcdReads / seconds, etcdReads, indexAnswered, verified, cost);
        } finally {
            streams.close(Duration.ofSeconds(60));
            built.committedFences().close();
            if (verifier != null) {
                verifier.close();
            }
            streams.cleanUp();
            meters.close();
            BenchKafka.deleteTopicsOf(admin, app, outputs);
        }
    }

    /**
     * The run's Kafka Streams properties: the enforcer's, a metrics window of {@link RunCost#METRICS_WINDOW} so that sampled
     * ratios cover the run and not its start, and for the stateful baseline its store variant's.
     */
    private Properties measuredProperties(Kind kind, FenceEnforcerConfig config, TokenVerifier verifier) {
        Properties properties = streamsProperties(config, verifier);
        properties.put(StreamsConfig.METRICS_SAMPLE_WINDOW_MS_CONFIG, Long.toString(RunCost.METRICS_WINDOW.toMillis()));
        if (kind == Kind.STATEFUL) {
            properties.putAll(storeVariant(config).streamsProperties());
        }
        return properties;
    }

    private StoreVariant storeVariant(FenceEnforcerConfig config) {
        return storeVariant != null ? storeVariant : StoreVariant.asTheFenceStore(config);
    }

    /** When the first record was processed ({@link System#nanoTime()}), the count then, and the count at the end. */
    private record Processed(long firstAt, double firstCount, double count) {
    }

    /**
     * Waits until {@code streams} has processed {@code records} records; fails on a stream-thread failure or 120 s without
     * progress.
     */
    private static Processed awaitProcessed(KafkaStreams streams, AtomicReference<Throwable> failure, Kind kind, int records,
            String input, RunCost.Meter meter)
            throws InterruptedException {
        long firstAt = 0;
        double firstCount = 0;
        double processed = 0;
        long lastProgressAt = System.nanoTime();
        while (processed < records) {
            if (failure.get() != null) {
                throw new IllegalStateException(EnforcerBench.describe(kind) + " failed: " + failure.get(), failure.get());
            }
            double now = processTotal(streams);
            long at = System.nanoTime();
            if (now > processed) {
                lastProgressAt = at;
                if (processed == 0) {
                    firstAt = at;
                    firstCount = now;
                    meter.start(streams, at);
                }
                processed = now;
            } else if (at - lastProgressAt > NO_PROGRESS.toNanos()) {
                throw new IllegalStateException(String.format(Locale.ROOT,
                        "%s processed %,.0f of %,d records of %s and then nothing for %d s (state %s)",
                        EnforcerBench.describe(kind), processed, records, input, NO_PROGRESS.toSeconds(), streams.state()));
            }
            meter.sample(streams, at);
            Thread.sleep(2);
        }
        return new Processed(firstAt, firstCount, processed);
    }

    /**
     * The input is in order but for {@code stale} stale writes, so any other outcome means the bench measured the wrong path
     * (headers, partitions).
     */
    static void expectDecided(PrometheusMeterRegistry meters, int records, int stale, String input) {
        double accepted = meters.get("fence.enforcer.records.accepted").counter().count();
        double rejected = meters.find("fence.enforcer.records.fenced").counters().stream().mapToDouble(Counter::count).sum();
        if (accepted != records - stale || rejected != stale) {
            throw new IllegalStateException(String.format(Locale.ROOT,
                    "the enforcer accepted %,.0f and rejected %,.0f of the %,d records of %s; the input is in order but for %,d "
                            + "stale writes, so it should reject those and accept the others",
                    accepted, rejected, records, input, stale));
        }
    }

    /** A stream thread's unexpected exception, kept for the caller to report, and the client shut down. */
    static AtomicReference<Throwable> watchFailures(KafkaStreams streams) {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        streams.setUncaughtExceptionHandler(e -> {
            failure.compareAndSet(null, e);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        return failure;
    }

    /** The topics a run writes to; the first is the one records reach when they pass. */
    static List<String> outputs(Kind kind, String app) {
        return kind == Kind.ENFORCER ? List.of(app + ".accepted", app + ".rejected") : List.of(app + ".output");
    }

    /**
     * The topology of {@code kind} over {@code input} to {@code outputs}; the enforcer's built as the enforcer builds it from
     * {@code config} (its partition mismatch policy, its committed-fence bookkeeping), its counters in {@code meters}, a
     * Prometheus registry as in the enforcer itself. The caller closes the bookkeeping after the run.
     */
    static FenceEnforcerTopology.Built topology(Kind kind, FenceEnforcerConfig config, String input, List<String> outputs,
            PrometheusMeterRegistry meters, TokenVerifier verifier) {
        return topology(kind, config, input, outputs, meters, verifier, EnforcerBench.PARTITIONS);
    }

    /** {@link #topology(Kind, FenceEnforcerConfig, String, List, PrometheusMeterRegistry, TokenVerifier)} on an input of
     * {@code partitions} partitions. */
    static FenceEnforcerTopology.Built topology(Kind kind, FenceEnforcerConfig config, String input, List<String> outputs,
            PrometheusMeterRegistry meters, TokenVerifier verifier, int partitions) {
        return topology(kind, config, input, outputs, meters, verifier, partitions, StoreVariant.asTheFenceStore(config));
    }

    /** The same, the stateful baseline's store built as {@code variant} says. */
    private static FenceEnforcerTopology.Built topology(Kind kind, FenceEnforcerConfig config, String input,
            List<String> outputs, PrometheusMeterRegistry meters, TokenVerifier verifier, int partitions, StoreVariant variant) {
        if (kind == Kind.ENFORCER) {
            Map<String, Object> settings = new HashMap<>(config.originals());
            settings.putAll(Map.of(FenceEnforcerConfig.INPUT_TOPIC, input, FenceEnforcerConfig.ACCEPTED_TOPIC, outputs.get(0),
                    FenceEnforcerConfig.REJECTED_TOPIC, outputs.get(1), FenceEnforcerConfig.MARKERS_TOPIC, ""));
            FenceEnforcerConfig topics = new FenceEnforcerConfig(settings);
            return FenceEnforcerTopology.buildAsTheEnforcer(topics, new FenceEnforcerTopology.Limits(partitions,
                    MAX_MESSAGE_BYTES, MAX_MESSAGE_BYTES, MAX_MESSAGE_BYTES), meters, verifier);
        }
        return new FenceEnforcerTopology.Built(baseline(kind, variant, input, outputs), () -> {
        });
    }

    private static Topology baseline(Kind kind, StoreVariant variant, String input, List<String> outputs) {
        if (kind == Kind.STATEFUL) {
            return MaxPerKey.topology(input, outputs.get(0), variant);
        }
        Topology topology = new Topology();
        topology.addSource("input", new ByteArrayDeserializer(), new ByteArrayDeserializer(), input);
        topology.addSink("output", outputs.get(0), new ByteArraySerializer(), new ByteArraySerializer(), "input");
        return topology;
    }

    private static double readAhead(PrometheusMeterRegistry meters, String event) {
        return meters.get("fence.enforcer.token.verification.read.ahead").tag("event", event).counter().count();
    }

    /**
     * The enforcer's configuration for this run; with {@code verify}, {@code etcd.endpoints} names the bench's etcd; with the
     * Kafka Streams settings the bench was given for every topology, and for the {@code enforcer} itself, its settings.
     */
    FenceEnforcerConfig enforcerConfig(String app, String guarantee, boolean verify, boolean enforcer) {
        Map<String, String> settings = new HashMap<>();
        streamsSettings.forEach((name, value) -> settings.put(FenceEnforcerConfig.STREAMS_PREFIX + name, value));
        if (enforcer) {
            settings.putAll(enforcerSettings);
        }
        settings.put(FenceEnforcerConfig.BOOTSTRAP_SERVERS, kafka.bootstrap());
        settings.put(FenceEnforcerConfig.APPLICATION_ID, app);
        settings.put(FenceEnforcerConfig.STATE_DIR, stateDir.toString());
        settings.put(FenceEnforcerConfig.PROCESSING_GUARANTEE, guarantee);
        if (verify) {
            if (etcdEndpoint == null) {
                throw new IllegalStateException("a run with token verification needs an etcd endpoint");
            }
            settings.put(EtcdSettings.ENDPOINTS, etcdEndpoint);
        } else {
            settings.put(FenceEnforcerConfig.TOKEN_VERIFICATION_ENABLE, "false");
        }
        return new FenceEnforcerConfig(settings);
    }

    /** The enforcer's own Kafka Streams properties for this run; the pass-through gets the same. */
    static Properties streamsProperties(FenceEnforcerConfig config) {
        Properties props = config.streamsProperties();
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        return props;
    }

    /** {@link #streamsProperties(FenceEnforcerConfig)}; with a {@code verifier}, its main consumer reads tokens ahead. */
    static Properties streamsProperties(FenceEnforcerConfig config, TokenVerifier verifier) {
        Properties props = streamsProperties(config);
        if (verifier != null) {
            TokenVerifier.readAheadOnPoll(props, verifier);
        }
        return props;
    }

    /** Sum of the stream threads' {@code process-total}: records processed so far. */
    static double processTotal(KafkaStreams streams) {
        double total = 0;
        for (Map.Entry<MetricName, ? extends Metric> metric : streams.metrics().entrySet()) {
            MetricName name = metric.getKey();
            if (name.name().equals("process-total") && name.group().equals("stream-thread-metrics")) {
                total += ((Number) metric.getValue().metricValue()).doubleValue();
            }
        }
        return total;
    }
}
