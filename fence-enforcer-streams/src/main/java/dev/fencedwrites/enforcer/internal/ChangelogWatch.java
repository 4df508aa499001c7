package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.Fence;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.internals.WrappedStateStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Under {@code at_least_once}, keeps each key's last record in the fence store's changelog at the task's fence. Nothing
 * fences an instance that lost its task there (no producer epochs; KIP-447 needs transactions), so one that was paused
 * past {@code max.poll.interval.ms} can still write older fences to the changelog after the new owner's newer ones. A
 * restore never lowers a fence ({@link HighestFenceStore}), but the changelog's cleaner keeps only a key's last record;
 * so the owner writes its fence again after any such record:
 * <ul>
 *   <li>keys whose restore skipped a lower record, at the task's first record or punctuation;</li>
 *   <li>records found by counting: at each commit, the changelog offsets since the last commit are this task's writes
 *       plus anyone else's (offsets are assigned one per record, and at_least_once writes no transaction markers); an idle
 *       task compares the changelog's end offset with its last record every {@link #IDLE_CHECK}. The records someone else
 *       wrote are read back, and each key whose last record there is below the store's value is written again.</li>
 * </ul>
 * Runs on the task's stream thread; reads with a consumer of its own, made at first need (the restore consumer's settings).
 */
final class ChangelogWatch implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ChangelogWatch.class);
    /** How often an idle task compares the changelog's end offset with its last record. */
    static final Duration IDLE_CHECK = Duration.ofSeconds(10);
    /** The longest one read of the changelog may take before it is left for the next record or check. */
    private static final Duration READ_TIMEOUT = Duration.ofSeconds(30);

    private final HighestFenceStore store;
    private final KeyValueStore<Bytes, StoredFence> fences;
    private final TopicPartition changelog;
    private final Map<String, Object> appConfigs;
    private final TaskId task;
    private final EnforcerMetrics metrics;
    private final FenceSerde serde = new FenceSerde();
    private final List<Bytes> rolledBack = new ArrayList<>();
    private final List<long[]> unread = new ArrayList<>();
    private Consumer<byte[], byte[]> consumer;

    private ChangelogWatch(HighestFenceStore store, KeyValueStore<Bytes, StoredFence> fences, TopicPartition changelog,
            Map<String, Object> appConfigs, TaskId task, EnforcerMetrics metrics) {
        this.store = store;
        this.fences = fences;
        this.changelog = changelog;
        this.appConfigs = appConfigs;
        this.task = task;
        this.metrics = metrics;
    }

    /**
     * A watch over the changelog {@code changelogTopic} of {@code fences} for {@code task}, started; empty when the store is
     * not a {@link HighestFenceStore} under Kafka Streams' wrappers (caching, logging, metrics).
     */
    static Optional<ChangelogWatch> start(KeyValueStore<Bytes, StoredFence> fences, String changelogTopic,
            Map<String, Object> appConfigs, TaskId task, EnforcerMetrics metrics) {
        StateStore store = fences;
        while (store instanceof WrappedStateStore<?, ?, ?> wrapped) {
            store = wrapped.wrapped();
        }
        if (!(store instanceof HighestFenceStore highest)) {
            return Optional.empty();
        }
        ChangelogWatch watch = new ChangelogWatch(highest, fences, new TopicPartition(changelogTopic, task.partition()),
                appConfigs, task, metrics);
        highest.watch();
        watch.rolledBack.addAll(highest.takeRolledBack());
        return Optional.of(watch);
    }

    /** Writes again what needs it; cheap when nothing does. Call with a record context (a record or a punctuation). */
    void repair() {
        if (!rolledBack.isEmpty()) {
            int rewritten = rewrite(rolledBack);
            LOG.info("task {}: wrote {} fences to {} again, whose restore skipped a lower record", task, rewritten, changelog);
            rolledBack.clear();
        }
        if (store.hasForeign()) {
            unread.addAll(store.takeForeign());
        }
        while (!unread.isEmpty()) {
            long[] range = unread.get(0);
            try {
                read(range[0], range[1]);
            } catch (KafkaException e) {
                LOG.warn("task {}: could not read {} offsets {} to {} back (another instance wrote there), will try again: {}",
                        task, changelog, range[0], range[1], e.toString());
                return;
            }
            unread.remove(0);
        }
    }

    /** For a task with nothing written since its last commit: whether anyone else wrote to the changelog since. */
    void checkIdle() {
        if (store.idle()) {
            try {
                Long end = consumer().endOffsets(List.of(changelog), READ_TIMEOUT).get(changelog);
                if (end != null) {
                    store.idle(end);
                }
            } catch (KafkaException e) {
                LOG.debug("task {}: no end offset of {}: {}", task, changelog, e.toString());
            }
        }
        repair();
    }

    /** Reads the changelog's offsets {@code from} to {@code to} and writes again each key whose last record is below. */
    private void read(long from, long to) {
        Consumer<byte[], byte[]> reader = consumer();
        reader.assign(List.of(changelog));
        reader.seek(changelog, from);
        Map<Bytes, byte[]> last = new LinkedHashMap<>();
        long deadline = System.nanoTime() + READ_TIMEOUT.toNanos();
        while (reader.position(changelog, READ_TIMEOUT) <= to) {
            if (System.nanoTime() > deadline) {
                throw new TimeoutException("reading " + changelog + " offsets " + from + " to " + to + " took over "
                        + READ_TIMEOUT);
            }
            for (ConsumerRecord<byte[], byte[]> record : reader.poll(Duration.ofMillis(200))) {
                if (record.offset() <= to) {
                    last.put(Bytes.wrap(record.key()), record.value());
                }
            }
        }
        List<Bytes> lower = new ArrayList<>();
        last.forEach((key, value) -> {
            StoredFence local = fences.get(key);
            if (local != null && below(value, local)) {
                lower.add(key);
            }
        });
        int rewritten = rewrite(lower);
        metrics.changelogForeign(to - from + 1);
        LOG.warn("task {}: {} offsets {} to {} hold records another instance wrote after this one took the task (one that had "
                + "lost it, at_least_once); wrote {} fences above them again", task, changelog, from, to, rewritten);
    }

    /** Whether the changelog value {@code value} is below {@code local}: a fence lower, or none where the store has one. */
    private boolean below(byte[] value, StoredFence local) {
        byte[] mine = serde.serializer().serialize(null, local);
        if (Arrays.equals(value, mine)) {
            return false;
        }
        if (value == null) {
            return true;
        }
        Fence theirs;
        try {
            theirs = serde.deserializer().deserialize(null, value).fence();
        } catch (SerializationException e) {
            return true;
        }
        Fence ours = local.fence();
        return ours != null && (theirs == null || !HighestFenceStore.higher(theirs, ours));
    }

    private int rewrite(List<Bytes> keys) {
        int rewritten = 0;
        for (Bytes key : keys) {
            StoredFence local = fences.get(key);
            if (local != null) {
                fences.put(key, local);
                rewritten++;
            }
        }
        metrics.changelogRewritten(rewritten);
        return rewritten;
    }

    private Consumer<byte[], byte[]> consumer() {
        if (consumer == null) {
            Map<String, Object> settings = new StreamsConfig(appConfigs).getRestoreConsumerConfigs(
                    appConfigs.get(StreamsConfig.APPLICATION_ID_CONFIG) + "-changelog-watch-" + task);
            settings.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            consumer = new KafkaConsumer<>(settings, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        }
        return consumer;
    }

    @Override
    public void close() {
        if (consumer != null) {
            consumer.close();
            consumer = null;
        }
    }
}
