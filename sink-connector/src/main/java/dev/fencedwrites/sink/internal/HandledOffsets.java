package dev.fencedwrites.sink.internal;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.sink.SinkRecord;

/**
 * Per source partition, the offset after the last record a sink task has written or reported: the
 * offsets {@code SinkTask.preCommit} may commit. Keyed by each record's original topic-partition and
 * offset (before any transformation). Thread-safe: {@code preCommit} may run on another thread than {@code put}.
 */
public final class HandledOffsets {
    private final Map<TopicPartition, OffsetAndMetadata> handled = new ConcurrentHashMap<>();

    /** Marks every record of a {@code put} that returned as handled. */
    public void handled(Collection<SinkRecord> records) {
        for (SinkRecord record : records) {
            handled.merge(new TopicPartition(record.originalTopic(), record.originalKafkaPartition()),
                    new OffsetAndMetadata(record.originalKafkaOffset() + 1), (a, b) -> a.offset() >= b.offset() ? a : b);
        }
    }

    /**
     * The offsets to commit among {@code currentOffsets}' partitions: only those with handled records,
     * each at most its {@code holdBack} offset (a record handled but not finished, read again after a restart).
     */
    public Map<TopicPartition, OffsetAndMetadata> committable(Map<TopicPartition, OffsetAndMetadata> currentOffsets,
            Map<TopicPartition, Long> holdBack) {
        Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
        for (TopicPartition partition : currentOffsets.keySet()) {
            OffsetAndMetadata done = handled.get(partition);
            Long held = holdBack.get(partition);
            if (done != null) {
                commit.put(partition, held != null && held < done.offset() ? new OffsetAndMetadata(held) : done);
            }
        }
        return commit;
    }

    /** Forgets {@code partitions}, which the task no longer owns. */
    public void forget(Collection<TopicPartition> partitions) {
        partitions.forEach(handled::remove);
    }

    /** Forgets every partition. */
    public void clear() {
        handled.clear();
    }
}
