package dev.fencedwrites.bench;

import dev.fencedwrites.enforcer.FenceEnforcerConfig;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.streams.StreamsConfig;
import picocli.CommandLine.Option;

/**
 * The enforcer throughput rows a run measures: {@code ./fence bench}'s defaults, or one row of them chosen on the command line
 * to study it (a profile, a setting tried). A run with any of these options is not the full run: it is written under its own
 * name and never as {@code latest.md}.
 */
final class ThroughputOptions {
    @Option(names = "--keys", split = ",", paramLabel = "N", description = "Distinct keys of each throughput row's input, "
            + "comma-separated (default: 10000,1000000; --quick: 1000,20000). Each input holds max(keys, 1000000) records "
            + "(--quick: max(keys, 20000)); the fence state is measured at the most keys.")
    int[] keys;
    @Option(names = "--value-bytes", split = ",", paramLabel = "BYTES", description = "Value sizes of the throughput rows, "
            + "comma-separated (default: 100,1024).")
    int[] valueBytes;
    @Option(names = "--guarantee", split = ",", paramLabel = "GUARANTEE", description = "processing.guarantee of the "
            + "throughput, scale and stale rows, comma-separated: exactly_once_v2, at_least_once (default: both).")
    List<String> guarantees;
    @Option(names = "--runs", paramLabel = "N", description = "Runs of each topology per throughput row; the figure is their "
            + "median (default: 3, in rounds whose order rotates so that each topology runs first, second and third once; "
            + "--quick: 1).")
    Integer runs;
    @Option(names = "--enforcer-setting", paramLabel = "NAME=VALUE", description = "An enforcer setting for the enforcer's "
            + "runs, as in its properties file (e.g. partition.mismatch.policy=reject); repeatable. The baselines keep the "
            + "defaults: for a Kafka Streams setting the baselines should share (the cache size), use --streams-setting. "
            + "Refused: what the bench sets itself (the topics, application.id, state.dir, processing.guarantee, "
            + "bootstrap.servers, the stream thread count, etcd.*), with or without the streams. prefix.")
    Map<String, String> enforcerSettings = new LinkedHashMap<>();
    @Option(names = "--streams-setting", paramLabel = "NAME=VALUE", description = "A Kafka Streams setting for every "
            + "topology's runs, the baselines' and the enforcer's alike, as Kafka Streams names it (e.g. "
            + "producer.batch.size=262144 or commit.interval.ms=1000); repeatable; an --enforcer-setting of the same name wins "
            + "for the enforcer. Refused: what the bench sets itself, as for --enforcer-setting.")
    Map<String, String> streamsSettings = new LinkedHashMap<>();

    /**
     * Checks every option before anything starts.
     *
     * @throws IllegalArgumentException naming the option, when one is out of range or an enforcer setting is refused as the
     *                                  enforcer would refuse it in its properties file
     */
    void validate(boolean quick) throws IOException {
        keys(quick);
        valueBytes();
        guarantees();
        runs(quick);
        for (String name : enforcerSettings.keySet()) {
            String bare = name.startsWith(FenceEnforcerConfig.STREAMS_PREFIX)
                    ? name.substring(FenceEnforcerConfig.STREAMS_PREFIX.length())
                    : name;
            if (BENCH_OWNED.contains(bare) || bare.startsWith("etcd.") || bare.startsWith("token.verification.")) {
                throw new IllegalArgumentException("--enforcer-setting " + name + ": the bench sets this itself (each row's "
                        + "topics, application.id, state.dir, bootstrap.servers, guarantee and thread count, and token "
                        + "verification only in its own part); choose rows with --keys, --value-bytes, --guarantee and --only");
            }
        }
        for (String name : streamsSettings.keySet()) {
            if (BENCH_OWNED.contains(name) || STATE_OWNED.contains(name) || name.startsWith(FenceEnforcerConfig.STREAMS_PREFIX)) {
                throw new IllegalArgumentException("--streams-setting " + name + ": the bench sets this itself, or it is "
                        + "not a Kafka Streams name (no streams. prefix here)");
            }
        }
        Map<String, String> settings = new HashMap<>(enforcerSettings);
        streamsSettings.forEach((name, value) -> settings.putIfAbsent(FenceEnforcerConfig.STREAMS_PREFIX + name, value));
        settings.putIfAbsent(FenceEnforcerConfig.BOOTSTRAP_SERVERS, "127.0.0.1:9092");
        settings.putIfAbsent(FenceEnforcerConfig.APPLICATION_ID, "fence-bench");
        settings.putIfAbsent(FenceEnforcerConfig.TOKEN_VERIFICATION_ENABLE, "false");
        try {
            FenceEnforcerConfig.of(settings);
        } catch (ConfigException e) {
            throw new IllegalArgumentException((streamsSettings.isEmpty()
                    ? "--enforcer-setting: "
                    : "--enforcer-setting or "
                            + "--streams-setting: ")
                    + e.getMessage(), e);
        }
    }

    /** Settings each run sets itself, which an {@code --enforcer-setting} would silently override or mislabel. */
    private static final Set<String> BENCH_OWNED = Set.of(FenceEnforcerConfig.BOOTSTRAP_SERVERS,
            FenceEnforcerConfig.APPLICATION_ID, FenceEnforcerConfig.STATE_DIR, FenceEnforcerConfig.PROCESSING_GUARANTEE,
            FenceEnforcerConfig.INPUT_TOPIC, FenceEnforcerConfig.ACCEPTED_TOPIC, FenceEnforcerConfig.REJECTED_TOPIC,
            FenceEnforcerConfig.MARKERS_TOPIC, StreamsConfig.NUM_STREAM_THREADS_CONFIG,
            StreamsConfig.METRICS_SAMPLE_WINDOW_MS_CONFIG);

    /**
     * Kafka Streams settings the state part sets itself for some of its topologies: a --streams-setting of it would apply to
     * some variants and not others.
     */
    private static final Set<String> STATE_OWNED = Set.of(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG);

    /** Whether any option chose other rows or settings than the defaults. */
    boolean custom() {
        return keys != null || valueBytes != null || guarantees != null || runs != null || !enforcerSettings.isEmpty()
                || !streamsSettings.isEmpty();
    }

    int[] keys(boolean quick) {
        return positive("--keys", keys != null ? keys : quick ? new int[]{1_000, 20_000} : new int[]{10_000, 1_000_000});
    }

    int[] valueBytes() {
        return positive("--value-bytes", valueBytes != null ? valueBytes : new int[]{100, 1024});
    }

    private static int[] positive(String option, int[] values) {
        for (int value : values) {
            if (value < 1) {
                throw new IllegalArgumentException(option + " " + value + ": expected at least 1");
            }
        }
        return values;
    }

    List<String> guarantees() {
        List<String> chosen = guarantees != null
                ? guarantees
                : List.of(StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE);
        for (String guarantee : chosen) {
            if (!guarantee.equals(StreamsConfig.EXACTLY_ONCE_V2) && !guarantee.equals(StreamsConfig.AT_LEAST_ONCE)) {
                throw new IllegalArgumentException("--guarantee " + guarantee + ": expected exactly_once_v2 or at_least_once");
            }
        }
        return chosen;
    }

    int runs(boolean quick) {
        if (runs != null && runs < 1) {
            throw new IllegalArgumentException("--runs " + runs + ": expected at least 1");
        }
        return runs != null ? runs : quick ? 1 : 3;
    }

    /** The options given, as they would be typed again. */
    List<String> arguments() {
        List<String> arguments = new ArrayList<>();
        if (keys != null) {
            arguments.add("--keys " + join(keys));
        }
        if (valueBytes != null) {
            arguments.add("--value-bytes " + join(valueBytes));
        }
        if (guarantees != null) {
            arguments.add("--guarantee " + String.join(",", guarantees));
        }
        if (runs != null) {
            arguments.add("--runs " + runs);
        }
        enforcerSettings.forEach((name, value) -> arguments.add("--enforcer-setting " + name + "=" + value));
        streamsSettings.forEach((name, value) -> arguments.add("--streams-setting " + name + "=" + value));
        return arguments;
    }

    private static String join(int[] values) {
        List<String> parts = new ArrayList<>();
        for (int value : values) {
            parts.add(Integer.toString(value));
        }
        return String.join(",", parts);
    }
}
