package dev.fencedwrites.cli;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/** Reads a topic for the operator commands ({@code ./fence rejected}, {@code ./fence consume}). */
public final class TopicReader {

    private TopicReader() {
    }

    /**
     * Reads every partition of {@code topic} (read_committed, no consumer group) from the beginning,
     * or from {@code window} back, to the end offsets, or on until Ctrl-C with {@code follow}
     * (while {@code stackUp} holds, checked after every poll).
     *
     * @param client the command's client settings ({@code --command-config}, {@code -X}); they win over the defaults here
     * @return whether it stopped following because {@code stackUp} turned false
     * @throws IllegalStateException when Kafka cannot be reached within 10 s or the topic does not exist
     */
    public static boolean read(String servers, Map<String, Object> client, String topic, Duration window, boolean follow,
            Consumer<ConsumerRecord<String, byte[]>> handler,
            Runnable afterPoll, BooleanSupplier stackUp) {
        Properties props = new Properties();
        props.putAll(client);
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
        props.putIfAbsent(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.putIfAbsent(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
        props.putIfAbsent(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        AtomicBoolean stopping = new AtomicBoolean();
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(props, new StringDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = assignFrom(consumer, servers, topic, window);
            Thread main = Thread.currentThread();
            Thread onCtrlC = new Thread(() -> {
                stopping.set(true);
                consumer.wakeup();
                try {
                    main.join(5_000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "fence-reader-stop");
            Runtime.getRuntime().addShutdownHook(onCtrlC);
            try {
                Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
                while (follow || partitions.stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
                    for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                        handler.accept(record);
                    }
                    afterPoll.run();
                    if (follow && !stackUp.getAsBoolean()) {
                        return true;
                    }
                }
            } catch (WakeupException e) {
                // Ctrl-C while following: done.
            } finally {
                if (!stopping.get()) {
                    Runtime.getRuntime().removeShutdownHook(onCtrlC);
                }
            }
        }
        return false;
    }

    /**
     * Assigns every partition of {@code topic} and seeks to the beginning, or to the first offset at
     * or after {@code window} back (the end where there is none).
     */
    private static List<TopicPartition> assignFrom(KafkaConsumer<String, byte[]> consumer, String servers, String topic,
            Duration window) {
        List<TopicPartition> partitions;
        try {
            var infos = consumer.partitionsFor(topic, Duration.ofSeconds(10));
            if (infos == null || infos.isEmpty()) {
                throw new IllegalStateException("topic " + topic + " does not exist at " + servers);
            }
            partitions = infos.stream().map(p -> new TopicPartition(topic, p.partition())).toList();
        } catch (TimeoutException e) {
            throw new IllegalStateException("cannot reach Kafka at " + servers + " within 10 s (is ./fence up running? does "
                    + "its listener need security.protocol and credentials in --command-config?)");
        }
        consumer.assign(partitions);
        consumer.seekToBeginning(partitions);
        if (window != null) {
            long from = System.currentTimeMillis() - window.toMillis();
            Map<TopicPartition, Long> query = new HashMap<>();
            partitions.forEach(p -> query.put(p, from));
            Map<TopicPartition, OffsetAndTimestamp> found = consumer.offsetsForTimes(query);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            for (TopicPartition partition : partitions) {
                OffsetAndTimestamp at = found.get(partition);
                consumer.seek(partition, at == null ? end.get(partition) : at.offset());
            }
        }
        return partitions;
    }
}
