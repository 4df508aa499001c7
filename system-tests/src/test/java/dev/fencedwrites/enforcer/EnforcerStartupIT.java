package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.NewTopics;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.services.EnforcerProcess;
import dev.fencedwrites.services.FreePorts;
import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.Service;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: the startup checks read real topic metadata and configs from a real broker
 * (and, with token verification on, try a real etcd endpoint).
 */
@Timeout(value = 6, unit = TimeUnit.MINUTES)
@ExtendWith(SharedKafkaBroker.class)
class EnforcerStartupIT {
    @TempDir
    static Path dir;
    static Path log4j2;
    static Service kafka;

    /** The broker the other enforcer ITs use too; this class's topics and application ids are its own. */
    @BeforeAll
    static void connectKafka(SharedKafkaBroker.Broker broker) {
        log4j2 = broker.log4j2();
        kafka = broker.service();
    }

    @Test
    void missingInputTopicStopsTheEnforcerNamingIt() {
        assertThatThrownBy(() -> start("missing", Map.of()))
                .hasMessageContaining("topic 'missing-in' does not exist")
                .hasMessageContaining("topics.create.enable=true");
    }

    @Test
    void outputTopicWithFewerPartitionsThanTheInputStopsTheEnforcer() throws Exception {
        createTopics(new NewTopic("narrow-in", 3, (short) 1), new NewTopic("narrow-ok", 1, (short) 1),
                new NewTopic("narrow-dlq", 3, (short) 1));

        assertThatThrownBy(() -> start("narrow", Map.of()))
                .hasMessageContaining("topic 'narrow-ok' has 1 partitions, fewer than the input topic 'narrow-in' (3)");
    }

    @Test
    void compactedRejectedTopicStopsTheEnforcer() throws Exception {
        createTopics(new NewTopic("cmp-in", 1, (short) 1), new NewTopic("cmp-ok", 1, (short) 1),
                new NewTopic("cmp-dlq", 1, (short) 1).configs(Map.of("cleanup.policy", "compact")));

        assertThatThrownBy(() -> start("cmp", Map.of())).hasMessageContaining("rejected topic 'cmp-dlq' is compacted");
    }

    @Test
    void missingMarkersTopicStopsTheEnforcerNamingIt() throws Exception {
        createTopics(new NewTopic("nomark-in", 1, (short) 1), new NewTopic("nomark-ok", 1, (short) 1),
                new NewTopic("nomark-dlq", 1, (short) 1));

        assertThatThrownBy(() -> start("nomark", Map.of()))
                .hasMessageContaining("topic 'nomark-markers' does not exist")
                .hasMessageContaining("topics.create.enable=true");
    }

    /** A marker's null value is a tombstone to compaction: a compacted markers topic would lose fences. */
    @Test
    void compactedMarkersTopicStopsTheEnforcer() throws Exception {
        createTopics(new NewTopic("cmark-in", 1, (short) 1), new NewTopic("cmark-ok", 1, (short) 1),
                new NewTopic("cmark-dlq", 1, (short) 1),
                new NewTopic("cmark-markers", 1, (short) 1).configs(Map.of("cleanup.policy", "compact")));

        assertThatThrownBy(() -> start("cmark", Map.of())).hasMessageContaining("markers topic 'cmark-markers' is compacted")
                .hasMessageContaining("markers.topic");
    }

    /** Strict mode does not read the repartition topic: records an earlier re-routing run left there would stay undecided. */
    @Test
    void strictModeRefusesToStartWhileTheRepartitionTopicHoldsUndecidedRecords() throws Exception {
        createTopics(new NewTopic("drain-in", 1, (short) 1), new NewTopic("drain-ok", 1, (short) 1),
                new NewTopic("drain-dlq", 1, (short) 1), new NewTopic("drain-markers", 1, (short) 1),
                new NewTopic("drain-enforcer-fence-reroute-repartition", 1, (short) 1));
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            producer.send(record("drain-enforcer-fence-reroute-repartition", "k", new byte[10], "7")).get();
        }

        assertThatThrownBy(() -> start("drain", Map.of(FenceEnforcerConfig.PARTITION_MISMATCH_POLICY, "reject")))
                .hasMessageContaining("exited (exit code 2)")
                .hasMessageContaining("repartition topic 'drain-enforcer-fence-reroute-repartition' holds 1 re-routed record(s)")
                .hasMessageContaining("partition.mismatch.policy=reroute");
    }

    /** A compressed value fits the input topic but not, uncompressed, the output topics: routed, not fatal. */
    @Test
    void compressedValueTooLargeForTheOutputsIsRejectedTooLargeWithoutStoppingTheEnforcer() throws Exception {
        try (Service enforcer = start("gz", Map.of("topics.create.enable", "true", "topics.create.partitions", "1"))) {
            Properties props = new Properties();
            props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.address());
            props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "gzip");
            props.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 8 * 1024 * 1024);
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props, new ByteArraySerializer(),
                    new ByteArraySerializer())) {
                producer.send(record("gz-in", "k", new byte[5_000_000], "5")).get(30, TimeUnit.SECONDS);
                producer.send(record("gz-in", "k", "small".getBytes(StandardCharsets.UTF_8), "4")).get(30, TimeUnit.SECONDS);
            }
            ConsumerRecord<byte[], byte[]> rejected = readOne("gz-dlq");
            assertThat(new String(rejected.headers().lastHeader(FenceHeaders.REJECTED_REASON).value(), StandardCharsets.UTF_8))
                    .isEqualTo("TOO_LARGE");
            assertThat(new String(rejected.headers().lastHeader(FenceHeaders.REJECTED_VALUE_OMITTED).value(),
                    StandardCharsets.UTF_8)).isEqualTo("true");
            assertThat(new String(readOne("gz-ok").value(), StandardCharsets.UTF_8)).isEqualTo("small");
            assertThat(enforcer.process().isAlive()).isTrue();
        }
    }

    @Test
    void createsMissingTopicsWhenAllowedWithTheInputsPartitionsAndRoomForRejectionHeaders() throws Exception {
        try (Service enforcer = start("created", Map.of("topics.create.enable", "true", "topics.create.partitions", "4"))) {
            try (Admin admin = admin()) {
                var topics = admin.describeTopics(List.of("created-in", "created-ok", "created-dlq")).allTopicNames().get(30,
                        TimeUnit.SECONDS);
                assertThat(topics.values()).allSatisfy(t -> assertThat(t.partitions()).hasSize(4));
                var configs = admin.describeConfigs(List.of(new ConfigResource(ConfigResource.Type.TOPIC, "created-in"),
                        new ConfigResource(ConfigResource.Type.TOPIC, "created-dlq"))).all().get(30, TimeUnit.SECONDS);
                int inputMax = Integer.parseInt(configs.get(new ConfigResource(ConfigResource.Type.TOPIC, "created-in"))
                        .get("max.message.bytes").value());
                int rejectedMax = Integer.parseInt(configs.get(new ConfigResource(ConfigResource.Type.TOPIC, "created-dlq"))
                        .get("max.message.bytes").value());
                assertThat(rejectedMax).isGreaterThanOrEqualTo(inputMax + TopicCheck.REJECTION_HEADROOM_BYTES);
            }
        }
    }

    /** Values are opaque: any bytes up to the input topic's limit pass unchanged, accepted or rejected. */
    @Test
    void largeValuesPassUnchangedToBothOutputs() throws Exception {
        try (Service enforcer = start("large", Map.of("topics.create.enable", "true", "topics.create.partitions", "1"))) {
            byte[] big = new byte[1_000_000];
            for (int i = 0; i < big.length; i++) {
                big[i] = (byte) (i * 31);
            }
            byte[] bigBad = Arrays.copyOf(big, big.length);
            bigBad[0] = 1;
            try (KafkaProducer<byte[], byte[]> producer = producer()) {
                producer.send(record("large-in", "k", big, "5")).get(30, TimeUnit.SECONDS);
                producer.send(record("large-in", "k", bigBad, "not-a-token")).get(30, TimeUnit.SECONDS);
            }
            assertThat(readOne("large-ok").value()).isEqualTo(big);
            ConsumerRecord<byte[], byte[]> rejected = readOne("large-dlq");
            assertThat(rejected.value()).isEqualTo(bigBad);
            assertThat(new String(rejected.headers().lastHeader(FenceHeaders.REJECTED_REASON).value(), StandardCharsets.UTF_8))
                    .isEqualTo("MALFORMED_TOKEN");
        }
    }

    /** Verification that cannot reach any etcd would decide nothing, so the setting is refused at startup. */
    @Test
    void tokenVerificationWithoutEtcdEndpointsStopsTheEnforcerWithExitCode2NamingBothSettings() {
        assertThatThrownBy(() -> start("noetcd",
                Map.of("topics.create.enable", "true", FenceEnforcerConfig.TOKEN_VERIFICATION_ENABLE, "true")))
                .hasMessageContaining("exited (exit code 2)")
                .hasMessageContaining(FenceEnforcerConfig.TOKEN_VERIFICATION_ENABLE)
                .hasMessageContaining(EtcdSettings.ENDPOINTS);
    }

    /** Etcd being down is an outage to wait out (records that raise a fence wait for it), not a configuration error. */
    @Test
    void tokenVerificationWithEtcdUnreachableAtStartStillStartsAndLogsThatEtcdDidNotAnswer() throws Exception {
        String nobody = "http://127.0.0.1:" + FreePorts.pick();
        try (Service enforcer = start("etcddown", Map.of("topics.create.enable", "true", "topics.create.partitions", "1",
                FenceEnforcerConfig.TOKEN_VERIFICATION_ENABLE, "true", EtcdSettings.ENDPOINTS, nobody,
                EtcdSettings.REQUEST_TIMEOUT_MS, "2000"))) {
            assertThat(Http.ok(enforcer.address() + "/health")).isTrue();
            assertThat(Files.readString(enforcer.process().log())).contains("etcd did not answer yet").contains(nobody);
        }
    }

    private static Service start(String prefix, Map<String, String> extra) throws Exception {
        Map<String, String> config = new HashMap<>(Map.of("input.topic", prefix + "-in", "accepted.topic",
                prefix + "-ok",
                "rejected.topic", prefix + "-dlq", "markers.topic", prefix + "-markers", "application.id", prefix + "-enforcer"));
        config.putAll(extra);
        return EnforcerProcess.start(dir.resolve("enforcer-" + prefix), log4j2, kafka.address(), config);
    }

    private static ProducerRecord<byte[], byte[]> record(String topic, String key, byte[] value, String token) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, token.getBytes(StandardCharsets.UTF_8));
        return new ProducerRecord<>(topic, null, key.getBytes(StandardCharsets.UTF_8), value, headers);
    }

    private static ConsumerRecord<byte[], byte[]> readOne(String topic) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.address());
        props.put(ConsumerConfig.GROUP_ID_CONFIG, "reader-" + topic);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 4 * 1024 * 1024);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
            while (records.isEmpty() && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(500)).forEach(records::add);
            }
            assertThat(records).as("records on %s", topic).hasSize(1);
            return records.get(0);
        }
    }

    private static KafkaProducer<byte[], byte[]> producer() {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.address());
        props.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 1_048_576);
        return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }

    private static void createTopics(NewTopic... topics) throws Exception {
        try (Admin admin = admin()) {
            admin.createTopics(List.of(topics)).all().get(30, TimeUnit.SECONDS);
            NewTopics.awaitWritable(admin, Arrays.stream(topics).map(NewTopic::name).toList(), Duration.ofSeconds(30));
        }
    }

    private static Admin admin() {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.address());
        return Admin.create(props);
    }
}
