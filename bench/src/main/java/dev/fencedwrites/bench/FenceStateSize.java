package dev.fencedwrites.bench;

import dev.fencedwrites.enforcer.FenceEnforcerConfig;
import dev.fencedwrites.enforcer.FenceEnforcerTopology;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.StateRestoreListener;

/**
 * The enforcer's fence state after a run over a known number of keys: the changelog's log on the broker's disk,
 * then the time a new instance takes to restore the whole changelog into an empty state directory (what an instance does
 * when its state directory is lost, or when it takes over partitions it had no standby for), and the restored store's
 * RocksDB files.
 */
final class FenceStateSize {
    private static final Duration RESTORE_TIMEOUT = Duration.ofMinutes(5);

    private FenceStateSize() {
    }

    /**
     * The figures for the enforcer run {@code app} over {@code keys} keys, run with {@code config} on {@code input} to
     * {@code outputs}; the run's instance must be closed, its changelog still on the broker.
     */
    static Figure[] measure(Admin admin, FenceEnforcerConfig config, String app, String input, List<String> outputs,
            Path restoreDir, int keys) throws Exception {
        long log = changelogBytes(admin, FenceEnforcerTopology.changelogTopic(app));
        Properties props = EnforcerRun.streamsProperties(config);
        props.put(StreamsConfig.STATE_DIR_CONFIG, restoreDir.toString());
        PrometheusMeterRegistry meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        FenceEnforcerTopology.Built built = EnforcerRun.topology(EnforcerBench.Kind.ENFORCER, config, input, outputs, meters,
                null);
        AtomicLong restored = new AtomicLong();
        AtomicLong firstStart = new AtomicLong();
        AtomicLong lastEnd = new AtomicLong();
        KafkaStreams streams = new KafkaStreams(built.topology(), props);
        try {
            streams.setGlobalStateRestoreListener(listener(restored, firstStart, lastEnd));
            streams.start();
            long deadline = System.nanoTime() + RESTORE_TIMEOUT.toNanos();
            while (streams.state() != KafkaStreams.State.RUNNING || restored.get() < keys) {
                if (System.nanoTime() > deadline || streams.state() == KafkaStreams.State.ERROR) {
                    throw new IllegalStateException(String.format(Locale.ROOT, "restoring %,d keys: %,d restored after %d s "
                            + "(state %s)", keys, restored.get(), RESTORE_TIMEOUT.toSeconds(), streams.state()));
                }
                Thread.sleep(20);
            }
        } finally {
            streams.close(Duration.ofSeconds(60));
            built.committedFences().close();
            meters.close();
        }
        long store = rocksDbBytes(restoreDir);
        streams.cleanUp();
        double millis = (lastEnd.get() - firstStart.get()) / 1e6;
        if (store <= 0 || log == 0) {
            throw new IllegalStateException(
                    "the enforcer's state is empty after " + keys + " keys: store " + store + " B, changelog " + log + " B");
        }
        String at = EnforcerBench.count(keys) + " keys";
        return new Figure[]{new Figure("fence state per key at " + at + ": state store (RocksDB files)", (double) store / keys,
                Double.NaN, "B/key", "", false),
                new Figure("fence state per key at " + at + ": changelog topic (log on disk)", (double) log / keys, Double.NaN,
                        "B/key", "", false),
                new Figure("fence store restore of " + at + " from the changelog into an empty state directory", millis,
                        Double.NaN, "ms", "", false)};
    }

    /** Progress line of {@link #measure}'s figures. */
    static String describe(Figure[] figures) {
        return String.format(Locale.ROOT, "enforcer:   fence state: store %.1f B/key, changelog %.1f B/key, restore %.0f ms",
                figures[0].fenced(), figures[1].fenced(), figures[2].fenced());
    }

    private static StateRestoreListener listener(AtomicLong restored, AtomicLong firstStart, AtomicLong lastEnd) {
        return new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition partition, String store, long startingOffset, long endingOffset) {
                firstStart.compareAndSet(0, System.nanoTime());
            }

            @Override
            public void onBatchRestored(TopicPartition partition, String store, long batchEndOffset, long numRestored) {
                if (store.equals(FenceEnforcerTopology.STORE)) {
                    restored.addAndGet(numRestored);
                }
            }

            @Override
            public void onRestoreEnd(TopicPartition partition, String store, long totalRestored) {
                lastEnd.set(System.nanoTime());
            }
        };
    }

    private static long rocksDbBytes(Path stateDir) throws IOException {
        try (Stream<Path> files = Files.walk(stateDir)) {
            return files.filter(Files::isRegularFile)
                    .filter(f -> f.toString().contains("/rocksdb/" + FenceEnforcerTopology.STORE + "/"))
                    .mapToLong(FenceStateSize::size).sum();
        }
    }

    private static long changelogBytes(Admin admin, String changelog) throws Exception {
        int broker = admin.describeCluster().nodes().get(30, TimeUnit.SECONDS).iterator().next().id();
        long log = 0;
        for (LogDirDescription dir : admin.describeLogDirs(List.of(broker)).allDescriptions().get(30, TimeUnit.SECONDS)
                .get(broker).values()) {
            for (Map.Entry<TopicPartition, ReplicaInfo> replica : dir.replicaInfos().entrySet()) {
                if (replica.getKey().topic().equals(changelog)) {
                    log += replica.getValue().size();
                }
            }
        }
        return log;
    }

    private static long size(Path file) {
        try {
            return Files.size(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
