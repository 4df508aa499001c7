package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.enforcer.internal.PartitionRoute;
import dev.fencedwrites.services.EnforcerProcess;
import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.Service;
import dev.fencedwrites.testing.KafkaBrokerExtension;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Partitioner;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: the repartition topic is created, written inside the transaction and read
 * back by real Kafka Streams tasks on a real broker, and the producer's partitioner is a real
 * client's (any writer, any partitioner).
 */
@Timeout(value = 6, unit = TimeUnit.MINUTES)
class EnforcerRerouteIT {
    private static final int PARTITIONS = 3;
    private static final int WRITES_PER_KEY = 20;
    private static final Duration DECIDED_WITHIN = Duration.ofSeconds(90);

    @RegisterExtension
    static final KafkaBrokerExtension kafkaBroker = new KafkaBrokerExtension();
    @TempDir
    static Path dir;
    /** The default policy, reroute, on rr-*. */
    static Service rerouting;
    /** partition.mismatch.policy=reject on st-*. */
    static Service strict;
    /** Re-routing on sm-*, whose repartition topic an operator made smaller than the changelog ({@value #SMALL_REROUTE} B). */
    static Service smallDetour;
    static final int SMALL_REROUTE = 16_384;

    @BeforeAll
    static void start() throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafkaBroker.bootstrapServers()))) {
            admin.createTopics(List.of(new NewTopic("sm-enforcer-fence-reroute-repartition", PARTITIONS, (short) 1)
                    .configs(Map.of("max.message.bytes", Integer.toString(SMALL_REROUTE), "retention.ms", "-1"))))
                    .all().get(30, TimeUnit.SECONDS);
        }
        rerouting = enforcer("rr", Map.of());
        strict = enforcer("st", Map.of(FenceEnforcerConfig.PARTITION_MISMATCH_POLICY, "reject"));
        smallDetour = enforcer("sm", Map.of());
    }

    private static Service enforcer(String prefix, Map<String, String> settings) {
        Map<String, String> config = new HashMap<>(settings);
        config.putAll(Map.of("input.topic", prefix + "-in", "accepted.topic", prefix + "-ok", "rejected.topic", prefix + "-dlq",
                "markers.topic", "", "application.id", prefix + "-enforcer", "topics.create.enable", "true",
                "topics.create.partitions", Integer.toString(PARTITIONS)));
        try {
            return EnforcerProcess.start(dir.resolve(prefix), kafkaBroker.log4j2(), kafkaBroker.bootstrapServers(), config);
        } catch (Exception e) {
            throw new IllegalStateException("enforcer " + prefix + " did not start", e);
        }
    }

    @AfterAll
    static void stop() {
        for (Service service : new Service[]{rerouting, strict, smallDetour}) {
            if (service != null) {
                service.close();
            }
        }
    }

    @Test
    void acceptsEveryWriteOfACrc32PartitioningWriterInItsOrderAndRejectsItsStaleOneWithItsInputOffset() throws Exception {
        List<String> keys = keys("order-", 6);
        long staleOffset;
        try (KafkaProducer<byte[], byte[]> writer = producer(Crc32Partitioner.class)) {
            for (int seq = 1; seq <= WRITES_PER_KEY; seq++) {
                for (String key : keys) {
                    writer.send(write("rr-in", key, 10, seq));
                }
            }
            writer.flush();
            RecordMetadata stale = writer.send(write("rr-in", keys.get(0), 5, 1)).get();
            assertThat(stale.partition()).isNotEqualTo(murmur2Partition(utf8(keys.get(0)), PARTITIONS));
            staleOffset = stale.offset();
        }

        List<ConsumerRecord<byte[], byte[]>> accepted = readCommitted("rr-ok", keys, keys.size() * WRITES_PER_KEY);
        for (String key : keys) {
            assertThat(accepted).filteredOn(r -> text(r.key()).equals(key)).extracting(r -> header(r, FenceHeaders.SEQ))
                    .as("%s's writes on the accepted topic, in the order sent", key)
                    .containsExactlyElementsOf(sequence(WRITES_PER_KEY));
        }
        for (ConsumerRecord<byte[], byte[]> record : accepted) {
            assertThat(record.headers().lastHeader("fence.reroute.origin")).as("no internal header leaves").isNull();
        }
        List<ConsumerRecord<byte[], byte[]>> rejections = readCommitted("rr-dlq", keys, 1);
        assertThat(rejections).hasSize(1);
        ConsumerRecord<byte[], byte[]> rejected = rejections.get(0);
        assertThat(header(rejected, FenceHeaders.REJECTED_REASON)).isEqualTo("STALE_TOKEN");
        assertThat(header(rejected, FenceHeaders.SOURCE_TOPIC)).isEqualTo("rr-in");
        assertThat(header(rejected, FenceHeaders.SOURCE_PARTITION))
                .isEqualTo(Integer.toString(Crc32Partitioner.partition(utf8(keys.get(0)), PARTITIONS)));
        assertThat(header(rejected, FenceHeaders.SOURCE_OFFSET)).isEqualTo(Long.toString(staleOffset));
        assertThat(metric(rerouting, "fence_enforcer_records_rerouted_total")).as("every write of these keys was re-routed")
                .isGreaterThanOrEqualTo(keys.size() * WRITES_PER_KEY + 1.0);
        System.out.printf("re-routed %d writes of %d CRC32-partitioned keys, all accepted in order; the stale one rejected "
                + "STALE_TOKEN naming rr-in-%s@%d%n", keys.size() * WRITES_PER_KEY, keys.size(),
                header(rejected, FenceHeaders.SOURCE_PARTITION), staleOffset);
    }

    /** A key written through two partitioners is decided against one fence: the token decides, whichever way it came. */
    @Test
    void decidesAKeyWrittenThroughTwoPartitionersAgainstOneFence() throws Exception {
        String key = keys("two-", 1).get(0);
        try (KafkaProducer<byte[], byte[]> crc32 = producer(Crc32Partitioner.class);
                KafkaProducer<byte[], byte[]> murmur2 = producer(null)) {
            crc32.send(write("rr-in", key, 10, 1)).get();
            awaitCount("rr-ok", key, 1);
            murmur2.send(write("rr-in", key, 5, 1)).get();
            awaitCount("rr-dlq", key, 1);
            murmur2.send(write("rr-in", key, 12, 1)).get();
        }

        assertThat(readCommitted("rr-ok", key, 2)).extracting(r -> header(r, FenceHeaders.TOKEN)).containsExactly("10", "12");
        assertThat(readCommitted("rr-dlq", key, 1)).extracting(r -> header(r, FenceHeaders.REJECTED_REASON))
                .containsExactly("STALE_TOKEN");
    }

    /**
     * A stale write placed straight onto a partition of the repartition topic that does not own its key (where that
     * partition's store has no fence for it), with a forged origin header, is rejected WRONG_PARTITION: only the owner
     * decides a key. The key's fence and its next write are unaffected.
     */
    @Test
    void rejectsAWriteWrittenStraightToANonOwningPartitionOfTheRepartitionTopic() throws Exception {
        String key = keys("straight-", 1).get(0);
        int owner = murmur2Partition(utf8(key), PARTITIONS);
        int elsewhere = (owner + 1) % PARTITIONS;
        try (KafkaProducer<byte[], byte[]> writer = producer(null)) {
            writer.send(write("rr-in", key, 10, 1)).get();
            awaitCount("rr-ok", key, 1);
            ProducerRecord<byte[], byte[]> stale = write("rr-in", key, 5, 1);
            stale.headers().add(PartitionRoute.ORIGIN_HEADER, utf8(elsewhere + ":0:0"));
            writer.send(new ProducerRecord<>(FenceEnforcerTopology.rerouteTopic("rr-enforcer"), elsewhere, stale.key(),
                    stale.value(), stale.headers())).get();
            writer.send(write("rr-in", key, 10, 2)).get();
        }

        ConsumerRecord<byte[], byte[]> rejected = readCommitted("rr-dlq", key, 1).get(0);
        assertThat(header(rejected, FenceHeaders.REJECTED_REASON)).isEqualTo("WRONG_PARTITION");
        assertThat(header(rejected, FenceHeaders.TOKEN)).isEqualTo("5");
        assertThat(readCommitted("rr-ok", key, 2)).extracting(r -> header(r, FenceHeaders.TOKEN) + "." + header(r,
                FenceHeaders.SEQ)).containsExactly("10.1", "10.2");
    }

    /**
     * The repartition topic's own max.message.bytes bounds a re-routed record (read at start, not assumed equal to the
     * changelog's): a write that would not fit is rejected TOO_LARGE where it arrived, and the key's next write is decided.
     */
    @Test
    void rejectsAMisroutedWriteLargerThanTheRepartitionTopicTakesTooLargeAndGoesOn() throws Exception {
        String key = keys("big-", 1).get(0);
        long bigOffset;
        try (KafkaProducer<byte[], byte[]> writer = producer(Crc32Partitioner.class)) {
            ProducerRecord<byte[], byte[]> small = write("sm-in", key, 10, 1);
            ProducerRecord<byte[], byte[]> big = new ProducerRecord<>("sm-in", null, small.key(), new byte[SMALL_REROUTE * 2],
                    small.headers());
            bigOffset = writer.send(big).get().offset();
            writer.send(write("sm-in", key, 11, 1)).get();
        }

        ConsumerRecord<byte[], byte[]> rejected = readCommitted("sm-dlq", key, 1).get(0);
        assertThat(header(rejected, FenceHeaders.REJECTED_REASON)).isEqualTo("TOO_LARGE");
        assertThat(header(rejected, FenceHeaders.SOURCE_OFFSET)).isEqualTo(Long.toString(bigOffset));
        assertThat(readCommitted("sm-ok", key, 1)).extracting(r -> header(r, FenceHeaders.TOKEN)).containsExactly("11");
        assertThat(Http.get(smallDetour.address() + "/health/ready").statusCode()).as("the enforcer still runs").isEqualTo(200);
    }

    @Test
    void rejectsACrc32PartitionedWriteWrongPartitionInStrictMode() throws Exception {
        String key = keys("strict-", 1).get(0);
        long offset;
        try (KafkaProducer<byte[], byte[]> writer = producer(Crc32Partitioner.class)) {
            offset = writer.send(write("st-in", key, 10, 1)).get().offset();
        }

        ConsumerRecord<byte[], byte[]> rejected = readCommitted("st-dlq", key, 1).get(0);
        assertThat(header(rejected, FenceHeaders.REJECTED_REASON)).isEqualTo("WRONG_PARTITION");
        assertThat(header(rejected, FenceHeaders.SOURCE_OFFSET)).isEqualTo(Long.toString(offset));
        assertThat(metric(strict, "fence_enforcer_records_rerouted_total")).isZero();
    }

    /** {@code count} keys starting with {@code prefix} whose CRC32 partition is not their murmur2 partition. */
    private static List<String> keys(String prefix, int count) {
        List<String> keys = new ArrayList<>();
        for (int i = 0; keys.size() < count; i++) {
            byte[] key = utf8(prefix + i);
            if (Crc32Partitioner.partition(key, PARTITIONS) != murmur2Partition(key, PARTITIONS)) {
                keys.add(prefix + i);
            }
        }
        return keys;
    }

    /** The partition Kafka's default partitioner picks for a key: murmur2 of its bytes (BuiltInPartitioner.partitionForKey). */
    private static int murmur2Partition(byte[] key, int partitions) {
        return Utils.toPositive(Utils.murmur2(key)) % partitions;
    }

    private static List<String> sequence(int n) {
        List<String> seqs = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
            seqs.add(Integer.toString(i));
        }
        return seqs;
    }

    private static ProducerRecord<byte[], byte[]> write(String topic, String key, long token, long seq) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, utf8(Long.toString(token)));
        headers.add(FenceHeaders.SEQ, utf8(Long.toString(seq)));
        return new ProducerRecord<>(topic, null, utf8(key), utf8(key + "@" + token + "." + seq), headers);
    }

    private static KafkaProducer<byte[], byte[]> producer(Class<? extends Partitioner> partitioner) {
        Map<String, Object> config = new HashMap<>();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafkaBroker.bootstrapServers());
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        if (partitioner != null) {
            config.put(ProducerConfig.PARTITIONER_CLASS_CONFIG, partitioner.getName());
        }
        return new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
    }

    private static void awaitCount(String topic, String key, int count) {
        readCommitted(topic, key, count);
    }

    /** Waits until {@code topic} holds at least {@code count} committed records of {@code key}, and returns them all. */
    private static List<ConsumerRecord<byte[], byte[]>> readCommitted(String topic, String key, int count) {
        return readCommitted(topic, List.of(key), count);
    }

    /** Waits until {@code topic} holds at least {@code count} committed records of {@code keys}, and returns them all. */
    private static List<ConsumerRecord<byte[], byte[]>> readCommitted(String topic, List<String> keys, int count) {
        return await().atMost(DECIDED_WITHIN).pollInterval(Duration.ofMillis(500))
                .until(() -> readAll(topic).stream().filter(r -> keys.contains(text(r.key()))).toList(),
                        found -> found.size() >= count);
    }

    /** Every committed record of {@code topic} (read_committed), partition by partition, in offset order. */
    private static List<ConsumerRecord<byte[], byte[]>> readAll(String topic) {
        Map<String, Object> config = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafkaBroker.bootstrapServers(),
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
            while (partitions.stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
                consumer.poll(Duration.ofMillis(200)).forEach(records::add);
            }
            return records;
        }
    }

    private static double metric(Service enforcer, String name) throws Exception {
        for (String line : Http.get(enforcer.address() + "/metrics").body().split("\n")) {
            if (line.startsWith(name + " ") || line.startsWith(name + "{")) {
                return Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        throw new AssertionError(name + " not in the enforcer's /metrics");
    }

    private static String header(ConsumerRecord<byte[], byte[]> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? null : text(header.value());
    }

    private static String text(byte[] bytes) {
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
