package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.services.EnforcerProcess;
import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.Service;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: only a real broker takes a gzip batch of a few KB whose record is 2 MB
 * uncompressed, and only the real Streams producer and broker refuse the enforcer's outputs by
 * max.request.size and max.message.bytes (no single record may stop the pipeline, and
 * a lease id sent as the token must not block its key).
 */
@Timeout(value = 8, unit = TimeUnit.MINUTES)
@ExtendWith(SharedKafkaBroker.class)
class EnforcerOversizedRecordIT {
    /** 2 MB of zeros: gzip makes a few KB of it, so the input topic takes it; uncompressed it fits no output. */
    private static final int HUGE = 2 * 1024 * 1024;
    private static final Duration DECIDED_WITHIN = Duration.ofSeconds(90);

    @TempDir
    static Path dir;
    static Path log4j2;
    static Service kafka;
    /** One enforcer under exactly_once_v2 (the default) for the oversized inputs. */
    static Service enforcer;

    /** On the broker the other enforcer ITs use too: this class's topics (big-, alos-) and application ids are its own. */
    @BeforeAll
    static void start(SharedKafkaBroker.Broker broker) throws Exception {
        log4j2 = broker.log4j2();
        kafka = broker.service();
        enforcer = EnforcerProcess.start(dir.resolve("enforcer-big"), log4j2, kafka.address(), Map.of("input.topic", "big-in",
                "accepted.topic", "big-ok", "rejected.topic", "big-dlq", "application.id", "big-enforcer",
                "topics.create.enable", "true", "topics.create.partitions", "1"));
    }

    @AfterAll
    static void stop() {
        if (enforcer != null) {
            enforcer.close();
        }
    }

    @Test
    void recordWithA2MbKeyAndNoTokenBecomesAReferenceRecordAndTheEnforcerGoesOn() throws Exception {
        long offset = sendBetweenGoodRecords("key-missing",
                new ProducerRecord<>("big-in", null, new byte[HUGE], utf8("v"), headers()));

        ConsumerRecord<byte[], byte[]> reference = awaitDecided("key-missing", offset);
        assertReference(reference, "MISSING_TOKEN", offset);
        assertThat(text(reference, FenceHeaders.SOURCE_KEY_BYTES)).isEqualTo(Integer.toString(HUGE));
    }

    @Test
    void writeWithA2MbKeyIsRejectedTooLargeAsAReferenceRecordAndTheEnforcerGoesOn() throws Exception {
        long offset = sendBetweenGoodRecords("key-write",
                new ProducerRecord<>("big-in", null, new byte[HUGE], utf8("v"), headers(FenceHeaders.TOKEN, "7")));

        ConsumerRecord<byte[], byte[]> reference = awaitDecided("key-write", offset);
        assertReference(reference, "TOO_LARGE", offset);
        assertThat(text(reference, FenceHeaders.SOURCE_KEY_BYTES)).isEqualTo(Integer.toString(HUGE));
        assertThat(text(reference, FenceHeaders.TOKEN)).as("the reference keeps the short fencing headers").isEqualTo("7");
    }

    @Test
    void recordWith2MbOfHeadersAndNoTokenKeepsItsKeyWithoutThemAndTheEnforcerGoesOn() throws Exception {
        RecordHeaders headers = headers(FenceHeaders.WRITER, "worker-a");
        headers.add("junk", new byte[HUGE]);
        long offset = sendBetweenGoodRecords("headers-missing",
                new ProducerRecord<>("big-in", null, utf8("headers-missing-bad"), utf8("v"), headers));

        ConsumerRecord<byte[], byte[]> copy = awaitDecided("headers-missing", offset);
        assertThat(text(copy, FenceHeaders.REJECTED_REASON)).isEqualTo("MISSING_TOKEN");
        assertThat(copy.key()).isEqualTo(utf8("headers-missing-bad"));
        assertThat(copy.headers().lastHeader("junk")).isNull();
        assertThat(text(copy, FenceHeaders.WRITER)).isEqualTo("worker-a");
        assertThat(text(copy, FenceHeaders.REJECTED_HEADERS_OMITTED)).isEqualTo("1");
        assertThat(text(copy, FenceHeaders.SOURCE_OFFSET)).isEqualTo(Long.toString(offset));
    }

    @Test
    void writeWith2MbOfHeadersIsRejectedTooLargeWithoutThemAndTheEnforcerGoesOn() throws Exception {
        RecordHeaders headers = headers(FenceHeaders.TOKEN, "7");
        headers.add("junk", new byte[HUGE]);
        long offset = sendBetweenGoodRecords("headers-write",
                new ProducerRecord<>("big-in", null, utf8("headers-write-bad"), utf8("v"), headers));

        ConsumerRecord<byte[], byte[]> copy = awaitDecided("headers-write", offset);
        assertThat(text(copy, FenceHeaders.REJECTED_REASON)).isEqualTo("TOO_LARGE");
        assertThat(copy.key()).isEqualTo(utf8("headers-write-bad"));
        assertThat(text(copy, FenceHeaders.TOKEN)).isEqualTo("7");
        assertThat(text(copy, FenceHeaders.REJECTED_HEADERS_OMITTED)).isEqualTo("1");
    }

    /** Stored, its 2 MB key would go to the changelog at the next commit and stop the thread there. */
    @Test
    void fenceMarkerWithA2MbKeyIsRejectedKeyTooLargeAndTheEnforcerGoesOn() throws Exception {
        long offset = sendBetweenGoodRecords("marker", new ProducerRecord<>("big-in", null, new byte[HUGE], null,
                headers(FenceHeaders.TOKEN, "9", FenceHeaders.SEQ, "0", FenceHeaders.OP, "FENCE")));

        ConsumerRecord<byte[], byte[]> reference = awaitDecided("marker", offset);
        assertReference(reference, "KEY_TOO_LARGE", offset);
        assertThat(text(reference, FenceHeaders.SOURCE_VALUE_BYTES)).isEqualTo("0");
    }

    /** Accepted, the lease id (near 2^62) would raise the key's fence past every real revision and refuse the write after it. */
    @Test
    void leaseIdSentAsTokenIsRejectedLeaseAsTokenAndTheKeysNextWriteIsAccepted() throws Exception {
        long offset = sendBetweenGoodRecords("lease",
                new ProducerRecord<>("big-in", null, utf8("lease-ok"), utf8("lease-id-as-token"),
                        headers(FenceHeaders.TOKEN, "7587869054862721234", FenceHeaders.SEQ, "1", FenceHeaders.LEASE,
                                "7587869054862721234")));

        ConsumerRecord<byte[], byte[]> copy = awaitDecided("lease", offset);
        assertThat(text(copy, FenceHeaders.REJECTED_REASON)).isEqualTo("LEASE_AS_TOKEN");
        assertThat(copy.value()).isEqualTo(utf8("lease-id-as-token"));
    }

    /**
     * A topic's limit lowered while the enforcer runs slips past the limits it read at start: the
     * broker refuses the accepted copy, and under at_least_once the production exception handler
     * puts a reference record on the rejected topic instead of stopping the thread.
     */
    @Test
    void acceptedCopyTheBrokerRefusesBecomesAProduceFailedReferenceRecordUnderAtLeastOnce() throws Exception {
        try (Service alos = EnforcerProcess.start(dir.resolve("enforcer-alos"), log4j2, kafka.address(),
                Map.of("input.topic", "alos-in",
                        "accepted.topic", "alos-ok", "rejected.topic", "alos-dlq", "application.id", "alos-enforcer",
                        "processing.guarantee", "at_least_once",
                        "topics.create.enable", "true", "topics.create.partitions", "1"))) {
            try (Admin admin = admin()) {
                admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.TOPIC, "alos-ok"),
                        List.of(new AlterConfigOp(new ConfigEntry("max.message.bytes", "10000"), AlterConfigOp.OpType.SET))))
                        .all().get(30, TimeUnit.SECONDS);
                ConfigResource accepted = new ConfigResource(ConfigResource.Type.TOPIC, "alos-ok");
                await().atMost(Duration.ofSeconds(60)).until(() -> "10000".equals(admin.describeConfigs(List.of(accepted)).all()
                        .get(30, TimeUnit.SECONDS).get(accepted).get("max.message.bytes").value()));
            }
            try (KafkaProducer<byte[], byte[]> producer = producer()) {
                producer.send(new ProducerRecord<>("alos-in", null, utf8("alos-ok-key"), utf8("before"),
                        headers(FenceHeaders.TOKEN, "5"))).get(30, TimeUnit.SECONDS);
                producer.send(new ProducerRecord<>("alos-in", null, utf8("alos-big"), new byte[50_000],
                        headers(FenceHeaders.TOKEN, "5")))
                        .get(30, TimeUnit.SECONDS);
                producer.send(new ProducerRecord<>("alos-in", null, utf8("alos-ok-key"), utf8("after"),
                        headers(FenceHeaders.TOKEN, "6"))).get(30, TimeUnit.SECONDS);
            }

            await().atMost(DECIDED_WITHIN).pollInterval(Duration.ofMillis(500)).untilAsserted(() -> {
                // at_least_once may emit an outcome twice: after the refused batch the idempotent
                // producer bumps its epoch and Streams may reprocess from the last commit.
                assertThat(values(readAll("alos-ok"), "alos-ok-key")).contains("before", "after").containsOnly("before", "after");
                assertThat(readAll("alos-dlq")).anySatisfy(reference -> {
                    assertThat(text(reference, FenceHeaders.REJECTED_REASON)).isEqualTo("PRODUCE_FAILED");
                    // The broker's refusal reaches the handler after the stream thread moved on: the
                    // reference names the record by its key and token, not by an offset it no longer knows.
                    assertThat(reference.key()).isEqualTo(utf8("alos-big"));
                    assertThat(text(reference, FenceHeaders.TOKEN)).isEqualTo("5");
                    assertThat(text(reference, FenceHeaders.SOURCE_VALUE_BYTES)).isEqualTo("50000");
                    assertThat(text(reference, FenceHeaders.REJECTED_ERROR)).contains("RecordTooLargeException");
                });
            });
            assertRunning(alos);
            assertThat(Http.get(alos.address() + "/metrics").body())
                    .contains(
                            "fence_enforcer_production_errors_total{exception=\"RecordTooLargeException\",outcome=\"resumed\","
                                    + "topic=\"alos-ok\"}")
                    // The reference record is sent from the producer's network thread; without the rejected
                    // topic's metadata there it waited 60 s (max.block.ms) and failed, and the task was processed again.
                    .doesNotContain("exception=\"TimeoutException\"");
        }
    }

    /** Sends a good write, {@code bad}, and a good write for key {@code <name>-ok}; returns {@code bad}'s offset. */
    private static long sendBetweenGoodRecords(String name, ProducerRecord<byte[], byte[]> bad) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            producer.send(
                    new ProducerRecord<>("big-in", null, utf8(name + "-ok"), utf8("before"), headers(FenceHeaders.TOKEN, "5")))
                    .get(30, TimeUnit.SECONDS);
            long offset = producer.send(bad).get(30, TimeUnit.SECONDS).offset();
            producer.send(
                    new ProducerRecord<>("big-in", null, utf8(name + "-ok"), utf8("after"), headers(FenceHeaders.TOKEN, "6")))
                    .get(30, TimeUnit.SECONDS);
            return offset;
        }
    }

    /**
     * Waits until the good writes around {@code offset} are accepted and the rejected topic holds the record from {@code offset}.
     */
    private static ConsumerRecord<byte[], byte[]> awaitDecided(String name, long offset) throws Exception {
        List<ConsumerRecord<byte[], byte[]>> found = new ArrayList<>();
        await().atMost(DECIDED_WITHIN).pollInterval(Duration.ofMillis(500)).untilAsserted(() -> {
            assertThat(enforcer.process().isAlive()).as("enforcer process alive").isTrue();
            assertThat(values(readAll("big-ok"), name + "-ok")).containsExactly("before", "after");
            found.clear();
            for (ConsumerRecord<byte[], byte[]> record : readAll("big-dlq")) {
                if (Long.toString(offset).equals(text(record, FenceHeaders.SOURCE_OFFSET))) {
                    found.add(record);
                }
            }
            assertThat(found).as("rejected records from big-in offset %d", offset).hasSize(1);
        });
        assertRunning(enforcer);
        return found.get(0);
    }

    private static void assertReference(ConsumerRecord<byte[], byte[]> reference, String reason, long offset) {
        assertThat(text(reference, FenceHeaders.REJECTED_REASON)).isEqualTo(reason);
        assertThat(text(reference, FenceHeaders.REJECTED_STAGE)).isEqualTo("enforcer");
        assertThat(text(reference, FenceHeaders.SOURCE_TOPIC)).isEqualTo("big-in");
        assertThat(text(reference, FenceHeaders.SOURCE_PARTITION)).isEqualTo("0");
        assertThat(text(reference, FenceHeaders.SOURCE_OFFSET)).isEqualTo(Long.toString(offset));
        assertThat(text(reference, FenceHeaders.REJECTED_KEY_OMITTED)).isEqualTo("true");
        assertThat(reference.key()).isNull();
        assertThat(reference.value()).isNull();
    }

    private static void assertRunning(Service service) throws Exception {
        assertThat(service.process().isAlive()).isTrue();
        assertThat(Http.get(service.address() + "/health").body()).contains("RUNNING");
    }

    private static List<String> values(List<ConsumerRecord<byte[], byte[]>> records, String key) {
        List<String> values = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> record : records) {
            if (record.key() != null && key.equals(new String(record.key(), StandardCharsets.UTF_8))) {
                values.add(new String(record.value(), StandardCharsets.UTF_8));
            }
        }
        return values;
    }

    /** Every committed record of the topic's partition 0, from the beginning to the last stable offset. */
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
        // The producer checks a record's uncompressed size against this; the broker sees the gzip batch.
        props.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 8 * 1024 * 1024);
        return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }

    private static Admin admin() {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.address());
        return Admin.create(props);
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
