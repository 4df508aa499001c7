package dev.fencedwrites.bench;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.enforcer.FenceEnforcerConfig;
import dev.fencedwrites.enforcer.TokenVerifier;
import dev.fencedwrites.services.Service;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import java.util.zip.CRC32;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.StreamsConfig;

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
 *
 * <p>This class runs the throughput series; {@link EnforcerRun} times one run, {@link LatencyBench}
 * measures latency and {@link BenchKafka} holds the Kafka plumbing.
 */
final class EnforcerBench {
    /** The enforcer's {@code topics.create.partitions} default. */
    static final int PARTITIONS = 3;
    private static final String[] GUARANTEES = {StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE};

    private final BenchKafka kafka;
    private final EnforcerRun runs;
    private final Consumer<String> progress;
    private final Path stateDir;
    /** The cost table's lines so far, one per throughput row and topology ({@link #costTable}). */
    private final List<String> costLines = new ArrayList<>();

    /**
     * @param kafka            the local broker the runs use
     * @param etcdEndpoint     the etcd endpoint the enforcer verifies tokens against when a run asks for verification, or
     *                         {@code null}
     * @param enforcerSettings enforcer settings for the enforcer's runs on top of the bench's (its properties file's names)
     * @param streamsSettings  Kafka Streams settings for every topology's runs (Kafka Streams' names)
     */
    EnforcerBench(Service kafka, Path stateDir, Consumer<String> progress, String etcdEndpoint,
            Map<String, String> enforcerSettings, Map<String, String> streamsSettings) {
        this.kafka = new BenchKafka(kafka.address(), ProcessHandle.of(kafka.process().pid()).orElse(null));
        this.runs = new EnforcerRun(this.kafka, stateDir, progress, etcdEndpoint, enforcerSettings, streamsSettings);
        this.progress = progress;
        this.stateDir = stateDir;
    }

    /**
     * The topology under test, built for one run's topics: the pass-through (input to output, no state), the minimal stateful
     * baseline ({@link MaxPerKey}: a store like the fence store, read and written per record) or the enforcer.
     */
    enum Kind {
        PASS_THROUGH, STATEFUL, ENFORCER
    }

    /** One throughput run's result; {@code stateSize} only when asked for; {@code etcdReadsPerSecond} 0 without verification. */
    record Throughput(double recordsPerSecond, Figure[] stateSize, double etcdReadsPerSecond, double etcdReads,
            double indexAnswered, double verified, RunCost cost) {
    }

    /**
     * Throughput of the enforcer and of the pass-through over the same input, for each value
     * size, key count and guarantee; and the fence state's bytes per key after the enforcer's
     * {@code exactly_once_v2} run at the largest key count.
     *
     * @param valueSizes value sizes in bytes
     * @param keyCounts  distinct keys; each input topic holds {@code max(keys, minRecords)} records
     * @param minRecords the fewest records an input topic holds
     * @param repeats    runs of each topology per figure (the figure is their median)
     * @param guarantees the {@code processing.guarantee}s of the rows
     */
    List<Figure> throughput(int[] valueSizes, int[] keyCounts, int minRecords, int repeats, List<String> guarantees)
            throws Exception {
        List<Figure> figures = new ArrayList<>();
        int largest = Arrays.stream(keyCounts).max().orElseThrow();
        Figure[] stateSize = null;
        boolean warm = false;
        try (Admin admin = admin()) {
            for (int valueBytes : valueSizes) {
                for (int keys : keyCounts) {
                    int records = Math.max(keys, minRecords);
                    String row = String.format(Locale.ROOT, "%s values, %s keys",
                            valueBytes >= 1024 ? valueBytes / 1024 + " KB" : valueBytes + " B", count(keys));
                    long producing = System.nanoTime();
                    String input = produceInput(admin, records, keys, valueBytes);
                    double produced = records / ((System.nanoTime() - producing) / 1e9);
                    double consumed = kafka.consumeAll(input, records);
                    progress.accept(String.format(Locale.ROOT, "enforcer:   plain clients: produced %,.0f records/s, consumed "
                            + "%,.0f records/s", produced, consumed));
                    figures.add(new Figure("ceiling: raw produce of the input, plain producer (acks=all), " + row, produced,
                            Double.NaN, "records/s", "", true));
                    figures.add(new Figure("ceiling: raw consume of the input, plain consumer (read_committed), " + row,
                            consumed, Double.NaN, "records/s", "", true));
                    if (!warm) {
                        warmUp(admin, input, records);
                        warm = true;
                    }
                    for (String guarantee : guarantees) {
                        boolean measureState = keys == largest && valueBytes == valueSizes[0]
                                && guarantee.equals(StreamsConfig.EXACTLY_ONCE_V2);
                        Measured measured = measure(admin, input, records, keys, guarantee, figures.size(), repeats,
                                measureState && stateSize == null);
                        stateSize = measured.stateSize() != null ? measured.stateSize() : stateSize;
                        figures.addAll(measured.figures(row + ", " + guarantee, keys >= 1_000_000 ? ">= 0.6" : ">= 0.9"));
                        for (Kind kind : Kind.values()) {
                            costLines.add(String.format(Locale.ROOT, "| %s, %s | %s | %,.0f (%s) | %s |", row, guarantee,
                                    describe(kind), measured.median(kind), measured.spread(kind),
                                    RunCost.median(measured.costs().get(kind)).cells()));
                        }
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

    /**
     * The enforcer's throughput over the same writes produced by a writer with librdkafka's default partitioner
     * (CRC32 of the key: about (N-1)/N of the records land on another partition than murmur2 assigns and are re-routed
     * through the repartition topic) against a writer with Kafka's (murmur2: none re-routed), under each guarantee.
     *
     * @param records    records of each input
     * @param keys       distinct keys
     * @param valueBytes value size in bytes
     */
    List<Figure> rerouting(int records, int keys, int valueBytes) throws Exception {
        List<Figure> figures = new ArrayList<>();
        byte[] value = new byte[valueBytes];
        new Random(valueBytes).nextBytes(value);
        try (Admin admin = admin()) {
            String murmur2 = "bench.input.murmur2." + shortId();
            String crc32 = "bench.input.crc32." + shortId();
            createTopics(admin, murmur2, crc32);
            progress.accept(String.format(Locale.ROOT,
                    "enforcer: producing %,d records of %d B over %,d keys with murmur2 to %s and with CRC32 to %s", records,
                    valueBytes, keys, murmur2, crc32));
            produce(admin, murmur2, records, i -> record(murmur2, i, keys, value));
            produce(admin, crc32, records, i -> onCrc32Partition(record(crc32, i, keys, value)));
            int misrouted = 0;
            for (int i = 0; i < records; i++) {
                byte[] key = record(crc32, i, keys, value).key();
                misrouted += crc32Partition(key) != Utils.toPositive(Utils.murmur2(key)) % PARTITIONS ? 1 : 0;
            }
            for (String guarantee : GUARANTEES) {
                double direct = runToEnd(admin, Kind.ENFORCER, murmur2, records, true, 0, guarantee, false).recordsPerSecond();
                double rerouted = runs.runToEnd(admin, Kind.ENFORCER, crc32, records, true, 0, guarantee, false,
                        records + misrouted, 0).recordsPerSecond();
                progress.accept(String.format(Locale.ROOT, "enforcer:   %s: murmur2 writer %,.0f records/s, CRC32 writer %,.0f "
                        + "records/s (%d %% re-routed)", guarantee, direct, rerouted, 100L * misrouted / records));
                figures.add(new Figure(String.format(Locale.ROOT,
                        "enforcer throughput, CRC32 writer (re-routed) vs murmur2 writer, %d B values, %s keys, %s", valueBytes,
                        count(keys), guarantee), rerouted, direct, "records/s", "", true));
            }
            admin.deleteTopics(List.of(murmur2, crc32)).all().get(60, TimeUnit.SECONDS);
        }
        return figures;
    }

    /**
     * The enforcer over in-order writes of which every fifth write of each key is stale (a token below every
     * earlier one: 20 %, each rejected {@code STALE_TOKEN} with a copy on the rejected topic) against the same writes all in
     * order, under each guarantee, one run of each.
     *
     * @param records    records of each input
     * @param keys       distinct keys (at least five writes each, so that each key has stale ones)
     * @param valueBytes value size in bytes
     */
    List<Figure> staleMix(int records, int keys, int valueBytes, List<String> guarantees) throws Exception {
        List<Figure> figures = new ArrayList<>();
        byte[] value = new byte[valueBytes];
        new Random(valueBytes).nextBytes(value);
        try (Admin admin = admin()) {
            String inOrder = "bench.input.in-order." + shortId();
            String mixed = "bench.input.stale-mix." + shortId();
            createTopics(admin, inOrder, mixed);
            progress.accept(String.format(Locale.ROOT, "enforcer: producing %,d records of %d B over %,d keys all in order to %s "
                    + "and with every fifth write of each key stale to %s", records, valueBytes, keys, inOrder, mixed));
            produce(admin, inOrder, records, i -> record(inOrder, i, keys, value));
            int stale = 0;
            for (int i = 0; i < records; i++) {
                stale += stale(i, keys) ? 1 : 0;
            }
            produce(admin, mixed, records,
                    i -> stale(i, keys) ? staleRecord(mixed, i, keys, value) : record(mixed, i, keys, value));
            // Not counted: with --only stale this JVM has run nothing yet, and the first run would pay for the JIT.
            progress.accept("enforcer:   warm-up, one run over the in-order writes (not counted)");
            runToEnd(admin, Kind.ENFORCER, inOrder, records, true, 0, guarantees.get(0), false);
            for (String guarantee : guarantees) {
                double all = runToEnd(admin, Kind.ENFORCER, inOrder, records, true, 0, guarantee, false).recordsPerSecond();
                double some = runs.runToEnd(admin, Kind.ENFORCER, mixed, records, true, 0, guarantee, false, records, stale)
                        .recordsPerSecond();
                progress.accept(String.format(Locale.ROOT, "enforcer:   %s: all accepted %,.0f records/s, %d %% stale %,.0f "
                        + "records/s", guarantee, all, 100L * stale / records, some));
                figures.add(new Figure(String.format(Locale.ROOT,
                        "enforcer throughput, 20 %% stale (rejected) vs all accepted, %d B values, %s keys, %s", valueBytes,
                        count(keys), guarantee), some, all, "records/s", "", true));
            }
            admin.deleteTopics(List.of(inOrder, mixed)).all().get(60, TimeUnit.SECONDS);
        }
        return figures;
    }

    /**
     * Where each throughput row's time went, per record and topology (medians of its runs), as a Markdown table; empty when no
     * throughput row ran.
     */
    String costTable() {
        if (costLines.isEmpty()) {
            return "";
        }
        return "| row | topology | records/s (spread) | " + RunCost.HEADER
                + " |\n|---|---|---:|---:|---:|---:|---:|---:|---|---:|\n"
                + String.join("\n", costLines) + "\n";
    }

    /** See {@link StateCostBench#measure}. */
    String stateCost(int records, int keys, int valueBytes, int repeats, List<String> guarantees) throws Exception {
        return new StateCostBench(this, runs, progress).measure(records, keys, valueBytes, repeats, guarantees);
    }

    /** See {@link ScaleBench#measure}. */
    List<Figure> scale(int records, int keys, int valueBytes, List<String> guarantees) throws Exception {
        return new ScaleBench(this, runs, stateDir, progress).measure(records, keys, valueBytes, guarantees);
    }

    /** Whether the {@code i}-th write of a stale mix is stale: every fifth write of each key. */
    private static boolean stale(int i, int keys) {
        return (i / keys) % 5 == 4;
    }

    /** The {@code i}-th write of the input with a token below every token of {@link #record}: rejected STALE_TOKEN. */
    private static ProducerRecord<byte[], byte[]> staleRecord(String topic, int i, int keys, byte[] value) {
        ProducerRecord<byte[], byte[]> record = record(topic, i, keys, value);
        record.headers().remove(FenceHeaders.TOKEN);
        record.headers().add(FenceHeaders.TOKEN, FenceHeaders.encode(999L));
        return record;
    }

    /** librdkafka's {@code consistent_random} for a key: CRC32 of its bytes modulo the partition count. */
    private static int crc32Partition(byte[] key) {
        CRC32 crc = new CRC32();
        crc.update(key);
        return (int) (crc.getValue() % PARTITIONS);
    }

    private static ProducerRecord<byte[], byte[]> onCrc32Partition(ProducerRecord<byte[], byte[]> record) {
        return new ProducerRecord<>(record.topic(), crc32Partition(record.key()), record.timestamp(), record.key(),
                record.value(), record.headers());
    }

    /** Creates an input topic and produces {@code records} in-order writes over {@code keys} keys into it; returns its name. */
    String produceInput(Admin admin, int records, int keys, int valueBytes) throws Exception {
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
        return input;
    }

    /** A short run of each topology under each guarantee, not counted, so no figure pays for the JIT and class loading. */
    void warmUp(Admin admin, String input, int warmUp) throws Exception {
        progress.accept(String.format(Locale.ROOT,
                "enforcer:   warm-up, %,d records through each topology under each guarantee (not counted)", warmUp));
        for (String guarantee : GUARANTEES) {
            for (Kind kind : Kind.values()) {
                runToEnd(admin, kind, input, warmUp, false, 0, guarantee, false);
            }
        }
    }

    /** Each topology's rates over one row's runs, and the fence state's size when one of them measured it. */
    private record Measured(Map<Kind, List<Double>> rates, Map<Kind, List<RunCost>> costs, Figure[] stateSize) {
        /** The median rate: the middle run's, or the mean of the middle two. */
        double median(Kind kind) {
            List<Double> sorted = rates.get(kind).stream().sorted().toList();
            int n = sorted.size();
            return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
        }

        /** Half the range of the runs, as a percentage of the median: {@code +-4 %}; {@code one run} for one. */
        String spread(Kind kind) {
            double spread = halfRange(kind);
            return Double.isNaN(spread) ? "one run" : String.format(Locale.ROOT, "+-%.0f %%", spread * 100);
        }

        /** Half the range of the runs, as a fraction of the median ({@code NaN} for one run). */
        double halfRange(Kind kind) {
            return Figure.halfRange(rates.get(kind));
        }

        /**
         * The row's three ratios (enforcer to stateful baseline, stateful baseline to pass-through, enforcer to pass-through),
         * each of the topologies' medians, with their spreads.
         */
        List<Figure> figures(String row, String passThroughGoal) {
            int n = rates.get(Kind.ENFORCER).size();
            String runs = n == 1 ? "one run each" : "medians of " + n + " runs";
            return List.of(
                    figure("enforcer vs stateful baseline throughput, " + row, Kind.ENFORCER, Kind.STATEFUL, ">= 0.95", runs),
                    figure("stateful baseline vs pass-through throughput, " + row, Kind.STATEFUL, Kind.PASS_THROUGH, "", runs),
                    figure("enforcer vs pass-through throughput, " + row, Kind.ENFORCER, Kind.PASS_THROUGH, passThroughGoal,
                            runs));
        }

        private Figure figure(String measure, Kind fenced, Kind baseline, String goal, String runs) {
            String spreads = rates.get(fenced).size() == 1 ? "" : ", spread " + spread(fenced) + " and " + spread(baseline);
            return new Figure(measure + " (" + runs + spreads + ")", median(fenced), median(baseline), "records/s", goal, true,
                    halfRange(fenced) + halfRange(baseline));
        }
    }

    /**
     * Each topology's rate over {@code repeats} rounds of one run each; the order within a round rotates with the round and
     * with {@code row}, so over three rounds each topology runs first, second and third once, and drift on a busy machine
     * favours none. With {@code measureState}, the first enforcer run also measures the fence state (each run starts with an
     * empty store).
     */
    private Measured measure(Admin admin, String input, int records, int keys, String guarantee, int row, int repeats,
            boolean measureState) throws Exception {
        List<Kind> kinds = List.of(Kind.values());
        List<Kind> order = new ArrayList<>();
        for (int r = 0; r < repeats; r++) {
            for (int k = 0; k < kinds.size(); k++) {
                order.add(kinds.get((k + r + row) % kinds.size()));
            }
        }
        Map<Kind, List<Double>> rates = new EnumMap<>(Kind.class);
        Map<Kind, List<RunCost>> costs = new EnumMap<>(Kind.class);
        Figure[] stateSize = null;
        for (Kind kind : order) {
            boolean takeState = measureState && kind == Kind.ENFORCER && stateSize == null;
            Throughput result = runToEnd(admin, kind, input, records, true, takeState ? keys : 0, guarantee, false);
            rates.computeIfAbsent(kind, k -> new ArrayList<>()).add(result.recordsPerSecond());
            costs.computeIfAbsent(kind, k -> new ArrayList<>()).add(result.cost());
            progress.accept(String.format(Locale.ROOT, "enforcer:   %s, %s: %,.0f records/s; %s", describe(kind), guarantee,
                    result.recordsPerSecond(), result.cost().describe()));
            if (result.stateSize() != null) {
                stateSize = result.stateSize();
            }
        }
        return new Measured(rates, costs, stateSize);
    }

    /** See {@link EnforcerRun#runToEnd}. */
    Throughput runToEnd(Admin admin, Kind kind, String input, int records, boolean whole, int stateKeys, String guarantee,
            boolean verify)
            throws Exception {
        return runs.runToEnd(admin, kind, input, records, whole, stateKeys, guarantee, verify);
    }

    /** See {@link EnforcerRun#enforcerConfig}. */
    FenceEnforcerConfig enforcerConfig(String app, String guarantee, boolean verify, boolean enforcer) {
        return runs.enforcerConfig(app, guarantee, verify, enforcer);
    }

    /** See {@link EnforcerRun#useVerifiers}. */
    void useVerifiers(Supplier<TokenVerifier> verifiers) {
        runs.useVerifiers(verifiers);
    }

    /** See {@link LatencyBench#verifiedLatency}. */
    List<Figure> verifiedLatency(String shape, int ratePerSecond, Duration duration,
            BiFunction<String, Integer, ProducerRecord<byte[], byte[]>> recordOf) throws Exception {
        return new LatencyBench(kafka, runs, progress).verifiedLatency(shape, ratePerSecond, duration, recordOf);
    }

    /** See {@link LatencyBench#latency}. */
    List<Figure> latency(int ratePerSecond, Duration duration) throws Exception {
        return new LatencyBench(kafka, runs, progress).latency(ratePerSecond, duration);
    }

    private void produce(Admin admin, String topic, int records, int keys, int valueBytes) throws Exception {
        byte[] value = new byte[valueBytes];
        new Random(valueBytes).nextBytes(value);
        produce(admin, topic, records, i -> record(topic, i, keys, value));
    }

    /** See {@link BenchKafka#produce}. */
    void produce(Admin admin, String topic, int records, IntFunction<ProducerRecord<byte[], byte[]>> recordAt) throws Exception {
        kafka.produce(admin, topic, records, recordAt);
    }

    /**
     * The {@code i}-th write of the input: key {@code i % keys}, each key's writes in order (a
     * new token every fourth write, seq 1 to 4 under each), with the headers FencedProducer adds.
     */
    static ProducerRecord<byte[], byte[]> record(String topic, int i, int keys, byte[] value) {
        int key = i % keys;
        int write = i / keys;
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, FenceHeaders.encode(1000L + write / 4));
        headers.add(FenceHeaders.SEQ, FenceHeaders.encode(write % 4 + 1L));
        headers.add(FenceHeaders.LEASE, FenceHeaders.encode(7_587_869_054_862_721_000L + key));
        headers.add(FenceHeaders.WRITER, FenceHeaders.encode("bench-worker-" + key % 16));
        return new ProducerRecord<>(topic, null, null,
                String.format(Locale.ROOT, "customer-%07d", key).getBytes(StandardCharsets.UTF_8), value, headers);
    }

    Admin admin() {
        return kafka.admin();
    }

    static void createTopics(Admin admin, String... topics) throws Exception {
        BenchKafka.createTopics(admin, topics);
    }

    static String describe(Kind kind) {
        return switch (kind) {
            case ENFORCER -> "enforcer";
            case STATEFUL -> "stateful baseline";
            case PASS_THROUGH -> "pass-through";
        };
    }

    static String shortId() {
        return BenchKafka.shortId();
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
