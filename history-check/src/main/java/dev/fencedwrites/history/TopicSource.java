package dev.fencedwrites.history;

import java.util.Map;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/** Where {@code fence verify}'s passes read a topic: each partition in offset order, the same records on every pass. */
@FunctionalInterface
interface TopicSource {
    /**
     * Feeds {@code handler} the topic's records from {@code from} up to (not including) {@code until}, per partition;
     * a partition absent from {@code from} is read from its beginning, one absent from {@code until} to its end.
     * {@code pass} names the pass in progress lines.
     */
    void read(String topic, String pass, Map<Integer, Long> from, Map<Integer, Long> until,
            Consumer<ConsumerRecord<byte[], byte[]>> handler);

    /** Feeds {@code handler} every record of the topic. */
    default void read(String topic, String pass, Consumer<ConsumerRecord<byte[], byte[]>> handler) {
        read(topic, pass, Map.of(), Map.of(), handler);
    }
}
