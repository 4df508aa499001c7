package dev.fencedwrites.localstack;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencedwrites.contract.NewTopics;
import dev.fencedwrites.testing.KafkaBrokerExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link NewTopics#awaitWritable} against a real broker: an idempotent producer that writes the
 * moment the wait returns loses nothing (KAFKA-15591 loses a first request refused
 * {@code NOT_LEADER_OR_FOLLOWER}), and a topic that never appears ends the wait with its name.
 *
 * <p>Control: {@code -Dnewtopics.control=true} skips the wait, which on a loaded machine lets a
 * round lose records (the producer reports the expired batch).
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class NewTopicsIT {
    private static final int ROUNDS = 10;
    private static final int PARTITIONS = 6;
    private static final int RECORDS = 3000;

    @RegisterExtension
    static final KafkaBrokerExtension kafka = new KafkaBrokerExtension();
    private static Admin admin;

    @BeforeAll
    static void connect() {
        admin = kafka.admin();
    }

    @Test
    void anIdempotentProducerWritingTheMomentTheWaitReturnsLosesNothing() throws Exception {
        boolean control = Boolean.getBoolean("newtopics.control");
        List<String> lost = new ArrayList<>();
        for (int round = 0; round < ROUNDS; round++) {
            String topic = "fresh-" + round;
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get(60, TimeUnit.SECONDS);
            if (!control) {
                NewTopics.awaitWritable(admin, List.of(topic), Duration.ofSeconds(60));
            }
            AtomicInteger failed = new AtomicInteger();
            AtomicReference<Exception> first = new AtomicReference<>();
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProperties(), new ByteArraySerializer(),
                    new ByteArraySerializer())) {
                for (int i = 0; i < RECORDS; i++) {
                    producer.send(new ProducerRecord<>(topic, i % PARTITIONS, null, new byte[100]), (metadata, e) -> {
                        if (e != null) {
                            failed.incrementAndGet();
                            first.compareAndSet(null, e);
                        }
                    });
                }
                producer.flush();
            }
            long written = written(topic);
            if (written != RECORDS || failed.get() > 0) {
                lost.add(topic + ": " + written + " of " + RECORDS + " records written, " + failed.get()
                        + " sends failed (first: " + first.get() + ")");
            }
        }
        assertThat(lost).as("rounds that lost records%s", control ? " (control run: the wait skipped)" : "").isEmpty();
    }

    @Test
    void aTopicThatNeverAppearsEndsTheWaitWithItsName() {
        assertThatThrownBy(() -> NewTopics.awaitWritable(admin, List.of("never-created"), Duration.ofSeconds(2)))
                .isInstanceOf(TimeoutException.class)
                .hasMessageContaining("never-created")
                .hasMessageContaining("2000 ms")
                // The broker answers "unknown topic" at once, or the admin client retries that answer until the wait ends.
                .hasMessageMatching("(?s).*(UnknownTopicOrPartitionException|describeTopics \\(an unknown topic).*");
    }

    private static Properties producerProperties() {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        // Many small requests in flight per partition from the first millisecond: the shape that meets the race.
        props.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        props.put(ProducerConfig.BATCH_SIZE_CONFIG, 512);
        props.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5);
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5000);
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 15000);
        return props;
    }

    private static long written(String topic) throws Exception {
        Map<TopicPartition, OffsetSpec> ends = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            ends.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        long written = 0;
        for (ListOffsetsResult.ListOffsetsResultInfo end : admin.listOffsets(ends).all().get(30, TimeUnit.SECONDS).values()) {
            written += end.offset();
        }
        return written;
    }
}
