package dev.fencedwrites.cli.verify;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.function.Consumer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads the pipeline's topics for {@code fence verify}: each partition from its beginning to the end offset it had when first
 * read ({@code read_committed}, no consumer group), the same range on every pass, with a progress line every
 * {@value #PROGRESS_SECONDS} s; and the committed offsets of the enforcer's and the sink's consumer groups.
 */
final class PipelineScan implements TopicSource, AutoCloseable {
    private static final int PROGRESS_SECONDS = 5;

    private final Map<String, Object> client;
    private final PrintWriter progress;
    private final Admin admin;
    private final Map<String, Map<TopicPartition, Long>> ends = new HashMap<>();

    /** @param client every Kafka client setting (bootstrap.servers, security); {@code progress}: where progress lines go */
    PipelineScan(Map<String, Object> client, PrintWriter progress) {
        this.client = Map.copyOf(client);
        this.progress = progress;
        Properties props = new Properties();
        props.putAll(client);
        props.putIfAbsent("default.api.timeout.ms", "15000");
        props.putIfAbsent("request.timeout.ms", "10000");
        this.admin = Admin.create(props);
    }

    /** The topic's partition count, or 0 when it does not exist. */
    int partitions(String topic) throws InterruptedException {
        try {
            TopicDescription description = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            return description.partitions().size();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof UnknownTopicOrPartitionException) {
                return 0;
            }
            throw new IllegalStateException("cannot describe topic " + topic + ": " + e.getCause(), e.getCause());
        }
    }

    /** The group's committed offset per partition of {@code topic}; a partition it has not committed is absent. */
    Map<Integer, Long> committed(String group, String topic) throws InterruptedException {
        try {
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                    .get();
            Map<Integer, Long> out = new HashMap<>();
            offsets.forEach((partition, at) -> {
                if (partition.topic().equals(topic) && at != null) {
                    out.put(partition.partition(), at.offset());
                }
            });
            return out;
        } catch (ExecutionException e) {
            throw new IllegalStateException("cannot read the committed offsets of consumer group " + group + ": " + e.getCause(),
                    e.getCause());
        }
    }

    /** The end offset of each partition of {@code topic} (read_committed), fixed at the first call for the topic. */
    Map<TopicPartition, Long> ends(String topic) {
        return ends.computeIfAbsent(topic, t -> {
            try (KafkaConsumer<byte[], byte[]> consumer = consumer()) {
                List<TopicPartition> partitions = consumer.partitionsFor(t, Duration.ofSeconds(15)).stream()
                        .map(p -> new TopicPartition(t, p.partition())).toList();
                return Map.copyOf(consumer.endOffsets(partitions));
            }
        });
    }

    /** Feeds {@code handler} every record of {@code topic} below {@link #ends}, each partition in offset order. */
    @Override
    public void read(String topic, String pass, Consumer<ConsumerRecord<byte[], byte[]>> handler) {
        Map<TopicPartition, Long> end = ends(topic);
        long started = System.nanoTime();
        long records = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = consumer()) {
            consumer.assign(end.keySet());
            consumer.seekToBeginning(end.keySet());
            long total = end.keySet().stream().mapToLong(p -> end.get(p) - consumer.position(p)).sum();
            long lastReport = started;
            while (end.keySet().stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    if (record.offset() < end.get(new TopicPartition(record.topic(), record.partition()))) {
                        handler.accept(record);
                        records++;
                    }
                }
                if (System.nanoTime() - lastReport > Duration.ofSeconds(PROGRESS_SECONDS).toNanos()) {
                    lastReport = System.nanoTime();
                    progress.printf("[verify] %s: %s, %,d of about %,d records%n", pass, topic, records, total);
                    progress.flush();
                }
            }
        }
        progress.printf("[verify] %s: read %,d %s of %s in %.1f s%n", pass, records, records == 1 ? "record" : "records", topic,
                (System.nanoTime() - started) / 1e9);
        progress.flush();
    }

    /**
     * Feeds {@code handler} the records of {@code topic} written since {@link #ends} was taken, up to its end now: what
     * the sink may have written to its table after the passes read the topic.
     */
    void readSince(String topic, Consumer<ConsumerRecord<byte[], byte[]>> handler) {
        Map<TopicPartition, Long> from = ends(topic);
        try (KafkaConsumer<byte[], byte[]> consumer = consumer()) {
            consumer.assign(from.keySet());
            Map<TopicPartition, Long> now = consumer.endOffsets(from.keySet());
            from.forEach(consumer::seek);
            while (now.keySet().stream().anyMatch(p -> consumer.position(p) < now.get(p))) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    if (record.offset() < now.get(new TopicPartition(record.topic(), record.partition()))) {
                        handler.accept(record);
                    }
                }
            }
        }
    }

    private KafkaConsumer<byte[], byte[]> consumer() {
        Properties props = new Properties();
        props.putAll(client);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        // A position deleted by retention during the read moves to the earliest record, not past the rest.
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.putIfAbsent(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "2000");
        props.putIfAbsent(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        props.remove(ConsumerConfig.GROUP_ID_CONFIG);
        return new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    @Override
    public void close() {
        admin.close(Duration.ofSeconds(5));
    }
}
