package dev.fencedwrites.sink.internal;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.sink.SinkRecord;

/**
 * Takeover markers that wait for their row: a {@code FENCE} marker whose row has not yet reached the
 * fence it superseded ({@code fence.marker.previous}) would overtake the previous holder's accepted
 * writes still on their way (Connect gives no order between the markers topic and the accepted
 * topic), so the sink task keeps it and tries it again with every {@code put} until its row catches
 * up or a higher fence covers it. A waiting marker holds back its partition's committed offset, so a
 * restart or a rebalance delivers it again. At most {@code max} wait; past that the oldest is given
 * up. Keyed by each record's original topic-partition and offset. Thread-safe.
 */
public final class PendingMarkers {
    private final int max;
    private final Map<Position, SinkRecord> waiting = new LinkedHashMap<>();

    private record Position(TopicPartition partition, long offset) {
        static Position of(SinkRecord record) {
            return new Position(new TopicPartition(record.originalTopic(), record.originalKafkaPartition()),
                    record.originalKafkaOffset());
        }
    }

    /** @param max how many markers may wait ({@code fence.marker.pending.max}), at least 1 */
    public PendingMarkers(int max) {
        if (max < 1) {
            throw new IllegalArgumentException("max must be at least 1: " + max);
        }
        this.max = max;
    }

    /** {@code batch} without the markers already waiting (delivered again after a failed {@code put}). */
    public synchronized List<SinkRecord> notWaiting(Collection<SinkRecord> batch) {
        if (waiting.isEmpty()) {
            return new ArrayList<>(batch);
        }
        return batch.stream().filter(record -> !waiting.containsKey(Position.of(record))).toList();
    }

    /** The waiting markers, oldest first. */
    public synchronized List<SinkRecord> records() {
        return new ArrayList<>(waiting.values());
    }

    /**
     * Replaces the waiting markers after a committed {@code put}: {@code stillWaiting} are those that
     * tried again (or arrived) and still wait.
     *
     * @return the markers given up because more than {@code max} wait, oldest first
     */
    public synchronized List<SinkRecord> replace(List<SinkRecord> stillWaiting) {
        waiting.clear();
        for (SinkRecord record : stillWaiting) {
            waiting.put(Position.of(record), record);
        }
        List<SinkRecord> givenUp = new ArrayList<>();
        Iterator<SinkRecord> oldest = waiting.values().iterator();
        while (waiting.size() > max) {
            givenUp.add(oldest.next());
            oldest.remove();
        }
        return givenUp;
    }

    /** Per partition, the offset of its oldest waiting marker: its committed offset may not pass it. */
    public synchronized Map<TopicPartition, Long> holdBack() {
        Map<TopicPartition, Long> offsets = new HashMap<>();
        for (Position position : waiting.keySet()) {
            offsets.merge(position.partition(), position.offset(), Math::min);
        }
        return offsets;
    }

    /** How many markers wait. */
    public synchronized int size() {
        return waiting.size();
    }

    /** Forgets the markers of {@code partitions}, which the task no longer owns (their new owner reads them again). */
    public synchronized void forget(Collection<TopicPartition> partitions) {
        waiting.keySet().removeIf(position -> partitions.contains(position.partition()));
    }
}
