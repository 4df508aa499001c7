package dev.fencedwrites.enforcer;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.processor.StateRestoreListener;

/**
 * What the enforcer's Kafka Streams client is doing, for the probes and for Prometheus:
 * its state, and the state store partitions it is restoring from their changelogs with how many
 * changelog offsets each has left. Kafka Streams' own restore metrics reach Micrometer's binder
 * only at its next refresh; these are current from the first restored batch.
 *
 * <p>Meters: {@code fence_enforcer_streams_state{state}} (1 for the client's current
 * {@link KafkaStreams.State}, 0 for every other), {@code fence_enforcer_restoring_partitions} and
 * {@code fence_enforcer_restore_remaining_offsets} (changelog offsets between the last restored
 * batch and the end offset read when the restore began: an upper bound of the records left, since
 * transaction markers and compacted offsets count too).
 *
 * <p>Public so that tools and tests can register the same meters the enforcer exports.
 */
public final class StreamsProgress implements StateRestoreListener {
    private final Map<TopicPartition, Long> remaining = new ConcurrentHashMap<>();
    private final Map<TopicPartition, Long> endOffsets = new ConcurrentHashMap<>();
    private volatile KafkaStreams.State state = KafkaStreams.State.CREATED;

    /** Registers the meters in {@code registry}; the state reads CREATED until {@link #state} is called. */
    public StreamsProgress(MeterRegistry registry) {
        for (KafkaStreams.State each : KafkaStreams.State.values()) {
            Gauge.builder("fence.enforcer.streams.state", this, p -> p.state == each ? 1 : 0).tag("state", each.name())
                    .description("1 for the Kafka Streams client's current state, 0 for the others").register(registry);
        }
        Gauge.builder("fence.enforcer.restoring.partitions", remaining, Map::size)
                .description("State store partitions being restored from their changelogs").register(registry);
        Gauge.builder("fence.enforcer.restore.remaining.offsets", this, StreamsProgress::remainingOffsets)
                .description("Changelog offsets left to restore, summed over the partitions being restored").register(registry);
    }

    /** Records the client's new state; call from its state listener. */
    void state(KafkaStreams.State newState) {
        state = newState;
    }

    /** The partitions being restored now. */
    int restoringPartitions() {
        return remaining.size();
    }

    /** Changelog offsets left to restore, summed over the partitions being restored. */
    long remainingOffsets() {
        return remaining.values().stream().mapToLong(Long::longValue).sum();
    }

    @Override
    public void onRestoreStart(TopicPartition partition, String storeName, long startingOffset, long endingOffset) {
        endOffsets.put(partition, endingOffset);
        remaining.put(partition, Math.max(0, endingOffset - startingOffset));
    }

    @Override
    public void onBatchRestored(TopicPartition partition, String storeName, long batchEndOffset, long numRestored) {
        Long end = endOffsets.get(partition);
        if (end != null) {
            // batchEndOffset is the last offset restored; endingOffset the first one not to restore.
            remaining.computeIfPresent(partition, (p, left) -> Math.max(0, end - batchEndOffset - 1));
        }
    }

    @Override
    public void onRestoreEnd(TopicPartition partition, String storeName, long totalRestored) {
        remaining.remove(partition);
        endOffsets.remove(partition);
    }

    @Override
    public void onRestoreSuspended(TopicPartition partition, String storeName, long totalRestored) {
        remaining.remove(partition);
        endOffsets.remove(partition);
    }
}
