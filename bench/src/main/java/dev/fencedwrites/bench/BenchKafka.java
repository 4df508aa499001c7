package dev.fencedwrites.bench;

import dev.fencedwrites.contract.NewTopics;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntFunction;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The enforcer bench's Kafka plumbing on the local broker at {@code bootstrap}: Admin client, topics
 * of {@value EnforcerBench#PARTITIONS} partitions that take writes before they are used (KAFKA-15591),
 * producer and {@code read_committed} consumer settings, and producing an input that is checked to be
 * complete.
 */
final class BenchKafka {
    private final String bootstrap;
    private final ProcessHandle broker;

    /** @param broker the broker's process, whose CPU time runs measure; {@code null} when it is not one on this machine */
    BenchKafka(String bootstrap, ProcessHandle broker) {
        this.bootstrap = bootstrap;
        this.broker = broker;
    }

    String bootstrap() {
        return bootstrap;
    }

    /** The broker's process, or {@code null}. */
    ProcessHandle broker() {
        return broker;
    }

    Admin admin() {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap));
    }

    static void createTopics(Admin admin, String... topics) throws Exception {
        createTopics(admin, EnforcerBench.PARTITIONS, topics);
    }

    /** {@link #createTopics(Admin, String...)} with {@code partitions} partitions each. */
    static void createTopics(Admin admin, int partitions, String... topics) throws Exception {
        List<NewTopic> create = new ArrayList<>();
        for (String topic : topics) {
            create.add(new NewTopic(topic, partitions, (short) 1));
        }
        admin.createTopics(create).all().get(60, TimeUnit.SECONDS);
        NewTopics.awaitWritable(admin, List.of(topics), Duration.ofSeconds(60));
    }

    /** Deletes a run's topics: {@code topics} and the application's internal ones (changelog). */
    static void deleteTopicsOf(Admin admin, String app, List<String> topics) throws Exception {
        List<String> delete = new ArrayList<>(topics);
        delete.addAll(
                admin.listTopics().names().get(30, TimeUnit.SECONDS).stream().filter(t -> t.startsWith(app + "-")).toList());
        admin.deleteTopics(delete).all().get(60, TimeUnit.SECONDS);
    }

    /** Produces {@code records} records, the i-th from {@code recordAt}, and checks that the topic holds them all. */
    void produce(Admin admin, String topic, int records, IntFunction<ProducerRecord<byte[], byte[]>> recordAt) throws Exception {
        AtomicReference<Exception> failure = new AtomicReference<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProperties(20))) {
            for (int i = 0; i < records && failure.get() == null; i++) {
                producer.send(recordAt.apply(i), (metadata, e) -> {
                    if (e != null) {
                        failure.compareAndSet(null, e);
                    }
                });
            }
            producer.flush();
        }
        if (failure.get() != null) {
            throw new IllegalStateException("producing the input to " + topic + " failed: " + failure.get(), failure.get());
        }
        Map<TopicPartition, OffsetSpec> ends = new HashMap<>();
        int partitions = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic).partitions()
                .size();
        for (int p = 0; p < partitions; p++) {
            ends.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        long written = 0;
        for (ListOffsetsResult.ListOffsetsResultInfo end : admin.listOffsets(ends).all().get(30, TimeUnit.SECONDS).values()) {
            written += end.offset();
        }
        if (written != records) {
            throw new IllegalStateException(
                    String.format(Locale.ROOT, "%s holds %,d records, expected %,d", topic, written, records));
        }
    }

    /**
     * Reads all {@code records} records of {@code topic} from its beginning with a plain consumer (no group, read_committed)
     * and returns the rate in records/s from the first record to the last: the consume ceiling kafka-consumer-perf-test
     * would show.
     */
    double consumeAll(String topic, int records) {
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProperties())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (int p = 0; p < EnforcerBench.PARTITIONS; p++) {
                partitions.add(new TopicPartition(topic, p));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            long first = 0;
            long read = 0;
            long idleSince = System.nanoTime();
            while (read < records) {
                int got = consumer.poll(Duration.ofMillis(100)).count();
                if (got > 0 && read == 0) {
                    first = System.nanoTime();
                }
                read += got;
                idleSince = got > 0 ? System.nanoTime() : idleSince;
                if (System.nanoTime() - idleSince > Duration.ofSeconds(60).toNanos()) {
                    throw new IllegalStateException(String.format(Locale.ROOT, "read %,d of the %,d records of %s, then "
                            + "nothing for 60 s", read, records, topic));
                }
            }
            return read / ((System.nanoTime() - first) / 1e9);
        }
    }

    Properties producerProperties(int lingerMs) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.LINGER_MS_CONFIG, Integer.toString(lingerMs));
        props.put(ProducerConfig.BATCH_SIZE_CONFIG, Integer.toString(256 * 1024));
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        return props;
    }

    Properties consumerProperties() {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        return props;
    }

    static String shortId() {
        return UUID.randomUUID().toString().substring(0, 8);
    }
}
