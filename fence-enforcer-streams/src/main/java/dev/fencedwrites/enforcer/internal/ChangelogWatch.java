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
 * so the owner reads back the changelog offsets that may hold such records and writes each key's fence again whose last
 * record there is below the store's value. The offsets come from {@link HighestFenceStore}: records a restore skipped;
 * and records found by counting: at each commit, the changelog offsets since the last commit are this task's writes plus
 * anyone else's (offsets are assigned one per record, and at_least_once writes no transaction markers); an idle task
 * compares the changelog's end offset with its last record every {@link #IDLE_CHECK}. They are kept in the task
 * directory until the rewritten fences are committed ({@link UnrepairedRanges}).
 * Runs on the task's stream thread; reads with a consumer of its own (the restore consumer's settings), each call bounded
 * by {@link #TIMEOUT}, and after a failure waits {@link #RETRY_BACKOFF} before it reads again.
 */
final class ChangelogWatch implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ChangelogWatch.class);
    /** How often an idle task compares the changelog's end offset with its last record. */
    static final Duration IDLE_CHECK = Duration.ofSeconds(10);
    /** The longest one request, or one read of a range, may block the stream thread. */
    static final Duration TIMEOUT = Duration.ofSeconds(5);
    /** The wait after a failed read before the next attempt. */
    static final Duration RETRY_BACKOFF = Duration.ofSeconds(30);

    private final HighestFenceStore store;
    private final KeyValueStore<Bytes, StoredFence> fences;
    private final TopicPartition changelog;
    private final Map<String, Object> appConfigs;
    private final TaskId task;
    private final EnforcerMetrics metrics;
    private final FenceSerde serde = new FenceSerde();
    private Consumer<byte[], byte[]> consumer;
    private long retryAt = System.nanoTime();

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
        return Optional.of(watch);
    }

    /** Writes again what needs it; cheap when nothing does. Call with a record context (a record or a punctuation). */
    void repair() {
        UnrepairedRanges ranges = store.unrepaired();
        if (!ranges.hasWaiting() || System.nanoTime() - retryAt < 0) {
            return;
        }
        List<long[]> taken = ranges.take();
        for (int i = 0; i < taken.size(); i++) {
            long[] range = taken.get(i);
            try {
                read(range[0], range[1]);
            } catch (KafkaException e) {
                LOG.warn("task {}: could not read {} offsets {} to {} back (records an instance that had lost the task may "
                        + "have written), will try again in {} s: {}", task, changelog, range[0], range[1],
                        RETRY_BACKOFF.toSeconds(), e.toString());
                taken.subList(i, taken.size()).forEach(ranges::giveBack);
                retryAt = System.nanoTime() + RETRY_BACKOFF.toNanos();
                return;
            }
        }
    }

    /** For a task with nothing written since its last commit: whether anyone else wrote to the changelog since. */
    void checkIdle() {
        if (store.idle() && System.nanoTime() - retryAt >= 0) {
            try {
                Long end = consumer().endOffsets(List.of(changelog), TIMEOUT).get(changelog);
                if (end != null) {
                    store.idle(end);
                }
            } catch (KafkaException e) {
                LOG.debug("task {}: no end offset of {}: {}", task, changelog, e.toString());
                retryAt = System.nanoTime() + RETRY_BACKOFF.toNanos();
            }
        }
        repair();
    }

    /** Reads the changelog's offsets {@code from} to {@code to} and writes again each key whose last record is below. */
    private void read(long from, long until) {
        long to = until;
        Consumer<byte[], byte[]> reader = consumer();
        Long end = reader.endOffsets(List.of(changelog), TIMEOUT).get(changelog);
        if (end == null) {
            throw new TimeoutException("no end offset of " + changelog);
        }
        to = Math.min(to, end - 1);
        if (to < from) {
            return;
        }
        reader.seek(changelog, from);
        Map<Bytes, byte[]> last = new LinkedHashMap<>();
        long records = 0;
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (reader.position(changelog, TIMEOUT) <= to) {
            if (System.nanoTime() > deadline) {
                throw new TimeoutException("reading " + changelog + " offsets " + from + " to " + to + " took over "
                        + TIMEOUT);
            }
            for (ConsumerRecord<byte[], byte[]> record : reader.poll(Duration.ofMillis(200))) {
                if (record.offset() <= to) {
                    last.put(Bytes.wrap(record.key()), record.value());
                    records++;
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
        metrics.changelogRead(records);
        if (rewritten > 0) {
            LOG.warn("task {}: {} offsets {} to {} hold records below this task's fences, written by an instance that had lost "
                    + "the task (at_least_once); wrote {} fences above them again", task, changelog, from, to, rewritten);
        } else {
            LOG.info("task {}: read {} offsets {} to {} back (records this task did not write): none below its fences", task,
                    changelog, from, to);
        }
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
            // Assigned once: an end-offset answer for a partition the consumer does not hold logs a WARN each time.
            consumer.assign(List.of(changelog));
        }
        return consumer;
    }

    @Override
    public void close() {
        store.unwatch();
        if (consumer != null) {
            consumer.close();
            consumer = null;
        }
    }
}
