package dev.fencedwrites.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.testing.ShippedSchemas;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: {@code fence verify} reads a real pipeline (broker, enforcer, Connect sink, PostgreSQL, registry) that
 * real writers fed, and each kind of violation is made there the way it happens in production: a write sent around the
 * enforcer, a row edited by hand, a forged rejection, a record no enforcer read. The clean run comes first. The
 * stack is this class's own: verify reads whole topics, and the shared stack's carry HostileValuesIT's records, which it
 * writes straight to the accepted topic (verify reports each of them as written around the enforcer).
 */
@Tag("slow")
@Timeout(value = 8, unit = TimeUnit.MINUTES)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class VerifyIT {
    @TempDir
    static Path dir;
    static LocalStack stack;
    /** This run's keys: a clean history of three writers, one stale write each. */
    static final List<String> KEYS = new ArrayList<>();
    static int inputPartitions;

    @BeforeAll
    static void writeACleanHistory() throws Exception {
        stack = LocalStack.builder(dir).connectors(BillingConnectors.set(false))
                .progress(line -> System.out.println("[stack] " + line)).start();
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", stack.kafkaBootstrap()))) {
            inputPartitions = admin.describeTopics(List.of(FenceTopics.INPUT)).allTopicNames().get().get(FenceTopics.INPUT)
                    .partitions().size();
        }
        for (int i = 0; i < 5; i++) {
            String key = "verify-" + UUID.randomUUID();
            KEYS.add(key);
            FenceRun produced = fence("produce", key, "--amount", Integer.toString(100 + i), "--count", "3", "--bootstrap",
                    stack.kafkaBootstrap(), "--etcd", stack.etcdEndpoints(), "--schema-registry", stack.schemaRegistryUrl());
            assertThat(produced.exit()).as(produced.err()).isZero();
            send(FenceTopics.INPUT, key, 1, 1, "stale".getBytes(StandardCharsets.UTF_8)); // below the lock's token: STALE_TOKEN
        }
        for (String key : KEYS) {
            await().atMost(Duration.ofSeconds(60)).until(() -> rowFenceSeq(key) == 3);
        }
    }

    @AfterAll
    static void stopStack() {
        if (stack != null) {
            stack.close();
        }
    }

    @Test
    @Order(1)
    void aCleanPipelineHasNoViolation() {
        FenceRun run = verify();

        assertThat(run.exit()).as(run.out() + run.err()).isZero();
        assertThat(run.out()).contains("0 violations").containsPattern("STALE_TOKEN +[1-9]")
                .containsPattern("rows compared +[1-9]");
        assertThat(run.err()).contains("[verify] pass 1: read");
    }

    @Test
    @Order(2)
    void aStaleWriteAroundTheEnforcerAndAHandEditAreBothReported() throws Exception {
        String bypassed = KEYS.get(0);
        String edited = KEYS.get(1);
        send(FenceTopics.ACCEPTED, bypassed, 1, 1, "around the enforcer".getBytes(StandardCharsets.UTF_8));
        sql("UPDATE billing_summary SET amount_minor = amount_minor + 1 WHERE resource_key = ?", edited);

        FenceRun run = verify();

        assertThat(run.exit()).isEqualTo(VerifyCommand.VIOLATIONS);
        assertThat(run.out()).contains("FENCE_FELL " + bypassed + ": ").contains("ACCEPTED_WITHOUT_INPUT " + bypassed + ": ")
                .contains("ROW_DATA_DIFFERS " + edited + ": columns [amount_minor]");
    }

    @Test
    @Order(3)
    void rowsAheadBehindAndMissingAreReported() throws Exception {
        sql("UPDATE billing_summary SET fence_token = fence_token + 1000 WHERE resource_key = ?", KEYS.get(2));
        sql("UPDATE billing_summary SET fence_seq = 2 WHERE resource_key = ?", KEYS.get(3));
        sql("DELETE FROM billing_summary WHERE resource_key = ?", KEYS.get(4));
        String stranger = "verify-stranger-" + UUID.randomUUID();
        sql("INSERT INTO billing_summary (resource_key, fence_token, fence_seq) VALUES (?, 7, 1)", stranger);

        FenceRun run = verify();

        assertThat(run.exit()).isEqualTo(VerifyCommand.VIOLATIONS);
        assertThat(run.out()).contains("ROW_AHEAD " + KEYS.get(2) + ": ").contains("ROW_BEHIND " + KEYS.get(3) + ": ")
                .contains("ROW_MISSING " + KEYS.get(4) + ": ").contains("ROW_AHEAD " + stranger + ": ");
    }

    @Test
    @Order(4)
    void aForgedRejectionOfAnAcceptedWriteIsUnlikeTheRuleAndASecondDecision() throws Exception {
        String key = KEYS.get(1);
        FenceRun json = verify("--json", "--no-table");
        assertThat(json.out()).contains("\"DECIDED_TWICE\":0");
        ShippedSchemas.assertMatches(ShippedSchemas.VERIFY, json.out());
        RecordHeaders headers = fenceHeaders(5_000_000, 1);
        headers.add(FenceHeaders.REJECTED_REASON, FenceHeaders.encode("STALE_TOKEN"));
        headers.add(FenceHeaders.REJECTED_STAGE, FenceHeaders.encode(FenceHeaders.STAGE_ENFORCER));
        headers.add(FenceHeaders.REJECTED_HIGHEST, FenceHeaders.encode("1.1"));
        headers.add(FenceHeaders.SOURCE_TOPIC, FenceHeaders.encode(FenceTopics.INPUT));
        headers.add(FenceHeaders.SOURCE_PARTITION, FenceHeaders.encode(ownerPartition(key)));
        headers.add(FenceHeaders.SOURCE_OFFSET, FenceHeaders.encode(firstInputOffset(key)));
        send(FenceTopics.REJECTED, key, headers, null);

        FenceRun run = verify("--no-table");

        assertThat(run.exit()).isEqualTo(VerifyCommand.VIOLATIONS);
        assertThat(run.out()).contains("UNLIKE_RULE " + key + ": ").contains("the rule says ACCEPT")
                .contains("DECIDED_TWICE " + key + ": ");
        FenceRun violations = verify("--json", "--no-table");
        assertThat(violations.out()).contains("\"kind\":\"UNLIKE_RULE\"");
        ShippedSchemas.assertMatches(ShippedSchemas.VERIFY, violations.out());
    }

    /**
     * A Connect sink is at-least-once: a task that lost its partitions before committing their offsets gets the records
     * again, and the guard refuses the writes the row already holds or has passed, reporting each as a sink rejection. The
     * row holds the key's highest accepted write all the same; verify must not call it ahead of a history without it.
     */
    @Test
    @Order(5)
    void writesTheSinkRefusedOnlyOnRedeliveryMayBeInTheRow() throws Exception {
        String key = "verify-redelivered-" + UUID.randomUUID();
        FenceRun produced = fence("produce", key, "--amount", "4242", "--count", "3", "--bootstrap", stack.kafkaBootstrap(),
                "--etcd", stack.etcdEndpoints(), "--schema-registry", stack.schemaRegistryUrl());
        assertThat(produced.exit()).as(produced.err()).isZero();
        await().atMost(Duration.ofSeconds(60)).until(() -> rowFenceSeq(key) == 3);
        List<ConsumerRecord<String, byte[]>> accepted = copies(FenceTopics.ACCEPTED, key);
        assertThat(accepted).hasSize(3);
        for (ConsumerRecord<String, byte[]> copy : accepted) { // each write delivered again and refused, as the sink reports it
            RecordHeaders headers = new RecordHeaders(copy.headers().toArray());
            headers.add(FenceHeaders.REJECTED_REASON,
                    FenceHeaders.encode(copy == accepted.get(2) ? "DUPLICATE" : "OUT_OF_ORDER"));
            headers.add(FenceHeaders.REJECTED_STAGE, FenceHeaders.encode(FenceHeaders.STAGE_SINK));
            headers.add(FenceHeaders.SOURCE_TOPIC, FenceHeaders.encode(FenceTopics.ACCEPTED));
            headers.add(FenceHeaders.SOURCE_PARTITION, FenceHeaders.encode(copy.partition()));
            headers.add(FenceHeaders.SOURCE_OFFSET, FenceHeaders.encode(copy.offset()));
            send(FenceTopics.REJECTED, key, headers, copy.value());
        }

        FenceRun run = verify();

        assertThat(run.out()).as("the earlier tests' violations are there; none of this key's")
                .doesNotContain(" " + key + ": ")
                .containsPattern("rows holding a write the sink refused only on redelivery +[1-9]");
    }

    @Test
    @Order(6)
    void aRecordNoEnforcerReadIsNeverDecided() throws Exception {
        String prefix = "verify-it-" + UUID.randomUUID();
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", stack.kafkaBootstrap()))) {
            admin.createTopics(List.of(new NewTopic(prefix, 1, (short) 1), new NewTopic(prefix + "-accepted", 1, (short) 1),
                    new NewTopic(prefix + "-rejected", 1, (short) 1))).all().get();
        }
        send(prefix, "lonely", 5, 1, "nobody reads this".getBytes(StandardCharsets.UTF_8));

        FenceRun run = fence("verify", "--bootstrap", stack.kafkaBootstrap(), "--no-table", "--input-topic", prefix,
                "--accepted-topic", prefix + "-accepted", "--rejected-topic", prefix + "-rejected", "--markers-topic",
                prefix + "-markers", "--application-id", prefix);

        assertThat(run.exit()).isEqualTo(VerifyCommand.VIOLATIONS);
        assertThat(run.out()).contains("NEVER_DECIDED lonely: " + prefix + "-0@0").contains("no markers topic");
    }

    @Test
    @Order(7)
    void sinceChecksTheWindowFromTheFenceTheHistoryBeforeItSet() throws Exception {
        String since = Instant.now().toString();
        Thread.sleep(5);
        for (String key : List.of(KEYS.get(0), KEYS.get(4))) {
            // Stale only against the fence before the window: without it, the replay would say it is accepted.
            send(FenceTopics.INPUT, key, 1, 1, "stale".getBytes(StandardCharsets.UTF_8));
            FenceRun produced = fence("produce", key, "--amount", "7", "--count", "2", "--bootstrap", stack.kafkaBootstrap(),
                    "--etcd", stack.etcdEndpoints(), "--schema-registry", stack.schemaRegistryUrl());
            assertThat(produced.exit()).as(produced.err()).isZero();
        }
        await().atMost(Duration.ofSeconds(60)).until(() -> rowFenceSeq(KEYS.get(0)) == 2 && rowFenceSeq(KEYS.get(4)) == 2);
        assertThat(verify("--no-table").exit()).as("the whole history holds the earlier tests' violations").isEqualTo(3);

        FenceRun window = verify("--no-table", "--since", since);

        assertThat(window.exit()).as(window.out() + window.err()).isZero();
        // Not in the window and linked back by the second pass: before it, where it belongs.
        assertThat(window.out()).contains("0 violations").doesNotContain("accepted records in the window of input records")
                .containsPattern("STALE_TOKEN +2\\b")
                .containsPattern("input offsets before --since[^\\n]* [1-9]");

        send(FenceTopics.ACCEPTED, KEYS.get(4), 2, 1, "around the enforcer".getBytes(StandardCharsets.UTF_8));
        FenceRun bypassed = verify("--no-table", "--since", since);

        assertThat(bypassed.exit()).isEqualTo(VerifyCommand.VIOLATIONS);
        assertThat(bypassed.out()).contains("FENCE_FELL " + KEYS.get(4) + ": ")
                .contains("ACCEPTED_WITHOUT_INPUT " + KEYS.get(4) + ": ").doesNotContain(KEYS.get(1));
    }

    @Test
    @Order(8)
    void sinceStartsAtTheFirstCommittedCopyNotAnAbortedOne() throws Exception {
        // The time is a little ahead, so that a real write now is stamped before it.
        long since = System.currentTimeMillis() + 30_000;
        String late = "verify-late-" + UUID.randomUUID();
        // An enforcer killed mid-transaction leaves aborted copies stamped in the window before the committed copies it
        // makes again of earlier records; one aborted record stamped after the time stands for them.
        Map<String, Object> transactional = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap(),
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, "verify-it-" + UUID.randomUUID());
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(transactional, new StringSerializer(),
                new ByteArraySerializer())) {
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(FenceTopics.ACCEPTED, null, since + 1_000, late,
                    "aborted".getBytes(StandardCharsets.UTF_8), fenceHeaders(9_000_000, 1))).get();
            producer.abortTransaction();
        }
        // Then a real write stamped before the time: its committed copy follows the aborted record on the same partition.
        FenceRun produced = fence("produce", late, "--amount", "1", "--bootstrap", stack.kafkaBootstrap(), "--etcd",
                stack.etcdEndpoints(), "--schema-registry", stack.schemaRegistryUrl());
        assertThat(produced.exit()).as(produced.err()).isZero();
        await().atMost(Duration.ofSeconds(60)).until(() -> onTopic(FenceTopics.ACCEPTED, late));

        FenceRun window = verify("--no-table", "--since", Instant.ofEpochMilli(since).toString());

        assertThat(window.exit()).as(window.out() + window.err()).isZero();
        // Not in the window and linked back by the second pass: before it, where it belongs.
        assertThat(window.out()).contains("0 violations").doesNotContain("accepted records in the window of input records")
                .containsPattern("accepted records before --since[^\\n]* [1-9]");
    }

    private static FenceRun verify(String... more) {
        List<String> args = new ArrayList<>(List.of("verify", "--bootstrap", stack.kafkaBootstrap(), "--schema-registry",
                stack.schemaRegistryUrl(), "--postgres", stack.postgresUrl()));
        args.addAll(List.of(more));
        return fence(args.toArray(String[]::new));
    }

    private static FenceRun fence(String... args) {
        return FenceRun.of(args);
    }

    private static RecordHeaders fenceHeaders(long token, long seq) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, FenceHeaders.encode(token));
        headers.add(FenceHeaders.SEQ, FenceHeaders.encode(seq));
        return headers;
    }

    private static void send(String topic, String key, long token, long seq, byte[] value) throws Exception {
        send(topic, key, fenceHeaders(token, seq), value);
    }

    private static void send(String topic, String key, RecordHeaders headers, byte[] value) throws Exception {
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                stack.kafkaBootstrap()), new StringSerializer(), new ByteArraySerializer())) {
            producer.send(new ProducerRecord<>(topic, null, key, value, headers)).get();
        }
    }

    private static int ownerPartition(String key) {
        return Utils.toPositive(Utils.murmur2(key.getBytes(StandardCharsets.UTF_8))) % inputPartitions;
    }

    /** The offset of the key's first record on the input topic (its FENCE marker, accepted as a raise). */
    private static long firstInputOffset(String key) {
        var consumer = new KafkaConsumer<String, byte[]>(Map.of("bootstrap.servers", stack.kafkaBootstrap()),
                new StringDeserializer(), new ByteArrayDeserializer());
        try (consumer) {
            var partition = new TopicPartition(FenceTopics.INPUT, ownerPartition(key));
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            while (true) {
                for (var record : consumer.poll(Duration.ofSeconds(1))) {
                    if (key.equals(record.key())) {
                        return record.offset();
                    }
                }
            }
        }
    }

    /** The committed records of {@code key} on {@code topic}, in offset order. */
    private static List<ConsumerRecord<String, byte[]>> copies(String topic, String key) {
        Map<String, Object> settings = Map.of("bootstrap.servers", stack.kafkaBootstrap(), "isolation.level", "read_committed");
        List<ConsumerRecord<String, byte[]>> out = new ArrayList<>();
        try (var consumer = new KafkaConsumer<String, byte[]>(settings, new StringDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            while (partitions.stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
                for (var record : consumer.poll(Duration.ofMillis(500))) {
                    if (key.equals(record.key())) {
                        out.add(record);
                    }
                }
            }
        }
        out.sort(Comparator.comparingLong(ConsumerRecord::offset));
        return out;
    }

    /** Whether a committed record of {@code key} is on {@code topic} now. */
    private static boolean onTopic(String topic, String key) {
        return !copies(topic, key).isEmpty();
    }

    private static long rowFenceSeq(String key) throws SQLException {
        try (Connection connection = DriverManager.getConnection(stack.postgresUrl());
                PreparedStatement select = connection.prepareStatement(
                        "SELECT fence_seq FROM billing_summary WHERE resource_key = ?")) {
            select.setString(1, key);
            try (ResultSet rows = select.executeQuery()) {
                return rows.next() ? rows.getLong(1) : -1;
            }
        }
    }

    private static void sql(String statement, String key) throws SQLException {
        try (Connection connection = DriverManager.getConnection(stack.postgresUrl());
                PreparedStatement update = connection.prepareStatement(statement)) {
            update.setString(1, key);
            assertThat(update.executeUpdate()).isEqualTo(1);
        }
    }
}
