package dev.fencedwrites.cli.verify;

import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/** Where {@code fence verify}'s passes read a topic: each partition in offset order, the same records on every pass. */
@FunctionalInterface
interface TopicSource {
    /** Feeds {@code handler} the topic's records; {@code pass} names the pass in progress lines. */
    void read(String topic, String pass, Consumer<ConsumerRecord<byte[], byte[]>> handler);
}
