package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.services.EnforcerProcess;
import dev.fencedwrites.services.Service;
import dev.fencedwrites.testing.EtcdNodeExtension;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: whether etcd answers a range read for a lock name of megabytes, and whether
 * the enforcer's stream thread goes on after it, is decided by etcd's gRPC limits and a real
 * broker, which no test driver has (review: no single record may stop the enforcer).
 */
@Timeout(value = 6, unit = TimeUnit.MINUTES)
@ExtendWith(SharedKafkaBroker.class)
class EnforcerHostileKeyVerificationIT {
    /**
     * "é" (UTF-8 C3 A9): each byte becomes %C3 or %A9 in the lock name, so 400 KB of key is a 1.2 MB lock name, and the
     * range read (key and range end) 2.4 MB, above etcd's default gRPC limit of 2 MiB.
     */
    private static final int KEY_BYTES = 400_000;
    private static final Duration DECIDED_WITHIN = Duration.ofSeconds(120);

    @RegisterExtension
    static final EtcdNodeExtension etcdNode = new EtcdNodeExtension();
    @TempDir
    static Path dir;
    static Service etcd;
    static Service kafka;
    static Service enforcer;

    /** On the broker the other enforcer ITs use too: this class's topics (hk-) and application id are its own. */
    @BeforeAll
    static void start(SharedKafkaBroker.Broker broker) throws Exception {
        Path log4j2 = broker.log4j2();
        etcd = etcdNode.service();
        kafka = broker.service();
        enforcer = EnforcerProcess.start(dir.resolve("enforcer"), log4j2, kafka.address(), Map.of("input.topic", "hk-in",
                "accepted.topic", "hk-ok", "rejected.topic", "hk-dlq", "application.id", "hk-enforcer",
                "topics.create.enable", "true", "topics.create.partitions", "1", EtcdSettings.ENDPOINTS, etcd.address(),
                "token.verification.retry.backoff.max.ms", "2000"));
    }

    @AfterAll
    static void stop() throws Exception {
        if (enforcer != null) {
            // What the enforcer said about etcd, for a failure's report (lock names cut short).
            Files.readAllLines(enforcer.process().log()).stream()
                    .filter(line -> line.contains("etcd") || line.contains("ERROR"))
                    .limit(20).forEach(line -> System.out.println(line.length() > 400 ? line.substring(0, 400) + "..." : line));
        }
        if (enforcer != null) {
            enforcer.close();
        }
    }

    @Test
    void forgedTokenOnAKeyWhoseLockNameEtcdCannotTakeIsRejectedAndTheNextRecordIsDecided() throws Exception {
        byte[] key = "é".repeat(KEY_BYTES / 2).getBytes(StandardCharsets.UTF_8);
        long hostile;
        long canary;
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            hostile = producer.send(new ProducerRecord<>("hk-in", null, key, null,
                    headers(FenceHeaders.TOKEN, "12345", FenceHeaders.SEQ, "0", FenceHeaders.OP, "FENCE", FenceHeaders.LEASE,
                            "777")))
                    .get(30, TimeUnit.SECONDS).offset();
            canary = producer.send(new ProducerRecord<>("hk-in", null, utf8("canary"), utf8("v"), headers()))
                    .get(30, TimeUnit.SECONDS).offset();
        }

        List<String> reasons = new ArrayList<>();
        await().atMost(DECIDED_WITHIN).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
            assertThat(enforcer.process().isAlive()).as("enforcer process alive").isTrue();
            reasons.clear();
            for (ConsumerRecord<byte[], byte[]> record : readAll("hk-dlq")) {
                String offset = text(record, FenceHeaders.SOURCE_OFFSET);
                if (Long.toString(hostile).equals(offset) || Long.toString(canary).equals(offset)) {
                    reasons.add(offset + ":" + text(record, FenceHeaders.REJECTED_REASON));
                }
            }
            assertThat(reasons).as("rejections of the hostile record and the canary after it").hasSize(2);
        });
        assertThat(reasons).containsExactly(hostile + ":LOCK_NOT_HELD", canary + ":MISSING_TOKEN");
        assertThat(readAll("hk-ok")).isEmpty();
    }

    /**
     * One resource, one fence, one row: keys that differ only in bytes that are not UTF-8 ("acct" and 0xFF, "acct" and 0xFE)
     * would be two fences here but one row behind a Connect StringConverter, so each is rejected MALFORMED_KEY before any
     * fence or lock is read.
     */
    @Test
    void keysThatAreNotUtf8AreRejectedMalformedKey() throws Exception {
        List<Long> offsets = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            for (byte last : new byte[]{(byte) 0xFF, (byte) 0xFE}) {
                byte[] key = {'a', 'c', 'c', 't', last};
                offsets.add(producer.send(new ProducerRecord<>("hk-in", null, key, utf8("v"),
                        headers(FenceHeaders.TOKEN, "5", FenceHeaders.SEQ, "1", FenceHeaders.LEASE, "777")))
                        .get(30, TimeUnit.SECONDS).offset());
            }
        }

        await().atMost(DECIDED_WITHIN).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> assertThat(readAll("hk-dlq"))
                .filteredOn(r -> offsets.contains(Long.parseLong(text(r, FenceHeaders.SOURCE_OFFSET))))
                .extracting(r -> text(r, FenceHeaders.REJECTED_REASON)).containsExactly("MALFORMED_KEY", "MALFORMED_KEY"));
        assertThat(readAll("hk-ok")).isEmpty();
    }

    private static List<ConsumerRecord<byte[], byte[]>> readAll(String topic) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.address());
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 4 * 1024 * 1024);
        List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            TopicPartition partition = new TopicPartition(topic, 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            long end = consumer.endOffsets(List.of(partition)).get(partition);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (consumer.position(partition) < end && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(records::add);
            }
        }
        return records;
    }

    private static KafkaProducer<byte[], byte[]> producer() {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.address());
        props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "gzip");
        props.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 8 * 1024 * 1024);
        return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }

    private static RecordHeaders headers(String... namesAndValues) {
        RecordHeaders headers = new RecordHeaders();
        for (int i = 0; i < namesAndValues.length; i += 2) {
            headers.add(namesAndValues[i], utf8(namesAndValues[i + 1]));
        }
        return headers;
    }

    private static String text(ConsumerRecord<byte[], byte[]> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? null : FenceHeaders.decode(header.value());
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
