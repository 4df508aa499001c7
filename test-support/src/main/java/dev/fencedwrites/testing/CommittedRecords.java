package dev.fencedwrites.testing;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * What a topic holds now, as a test checks it: every committed record ({@code isolation.level=read_committed}, so records
 * of aborted or open transactions are not seen) from the beginning of each partition to the end offsets it had when asked.
 * Keys are UTF-8 strings, values raw bytes unless a deserializer is given. A manually assigned consumer without a group:
 * nothing is committed.
 */
public final class CommittedRecords {
    /** How long reading to the end offsets may take before the read fails: generous, for a loaded machine. */
    public static final Duration READ_TIMEOUT = Duration.ofSeconds(60);

    private CommittedRecords() {
    }

    /**
     * The committed records of {@code topic} whose key passes {@code keys} (records without a key are left out), partition
     * by partition, each in offset order.
     *
     * @param bootstrap the brokers' {@code bootstrap.servers}
     * @throws IllegalStateException if the end offsets are not reached within {@link #READ_TIMEOUT}
     */
    public static List<ConsumerRecord<String, byte[]>> read(String bootstrap, String topic, Predicate<String> keys) {
        return read(bootstrap, topic, keys, new ByteArrayDeserializer());
    }

    /**
     * As {@link #read(String, String, Predicate)}, with the values read by {@code values}.
     *
     * @throws IllegalStateException if the end offsets are not reached within {@link #READ_TIMEOUT}
     */
    public static <V> List<ConsumerRecord<String, V>> read(String bootstrap, String topic, Predicate<String> keys,
            Deserializer<V> values) {
        Map<String, Object> config = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed", ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        List<ConsumerRecord<String, V>> found = new ArrayList<>();
        try (KafkaConsumer<String, V> consumer = new KafkaConsumer<>(config, new StringDeserializer(), values)) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            long deadline = System.nanoTime() + READ_TIMEOUT.toNanos();
            while (partitions.stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("could not read " + topic + " to its end offsets " + end + " within "
                            + READ_TIMEOUT.toSeconds() + " s");
                }
                for (ConsumerRecord<String, V> record : consumer.poll(Duration.ofMillis(500))) {
                    if (record.key() != null && keys.test(record.key())) {
                        found.add(record);
                    }
                }
            }
        }
        return found;
    }

    /** The committed records of {@code topic} whose key starts with {@code prefix}. */
    public static List<ConsumerRecord<String, byte[]>> withPrefix(String bootstrap, String topic, String prefix) {
        return read(bootstrap, topic, key -> key.startsWith(prefix));
    }
}
