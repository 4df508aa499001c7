package dev.fencedwrites.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.avro.AvroDeserializer;
import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.avro.SchemaRegistryException;
import dev.fencedwrites.avro.connect.AvroConverter;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.producer.FencingLease;
import dev.fencedwrites.producer.FencingLeaseClient;
import dev.fencedwrites.testing.CommittedRecords;
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
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.avro.Schema;
import org.apache.avro.SchemaBuilder;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.generic.GenericRecordBuilder;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Timestamp;
import org.apache.kafka.connect.errors.DataException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: the fence is only proven when real worker JVMs are frozen with SIGSTOP
 * against real etcd leases, and the write travels through a real broker, the enforcer, a Connect
 * worker and PostgreSQL.
 */
@Timeout(value = 8, unit = TimeUnit.MINUTES)
class BillingScenarioIT {
    @TempDir
    static Path dir;
    static LocalStack stack;

    @BeforeAll
    static void startStack() throws Exception {
        stack = LocalStack.builder(dir).connectors(BillingConnectors.set(true))
                .progress(line -> System.out.println("[stack] " + line)).start();
    }

    @AfterAll
    static void stopStack() {
        if (stack != null) {
            stack.close();
        }
    }

    @Test
    void pausedWorkersStaleWriteIsRejectedAndNeverReachesTheTable() throws Exception {
        ScenarioResult result = new BillingScenario(stack, new Timeline(System.out), 5).run();

        assertThat(result.tokenB()).isGreaterThan(result.tokenA());
        assertThat(result.rejectedReason()).isEqualTo("STALE_TOKEN");
        assertThat(result.rejectedStage()).isEqualTo(FenceHeaders.STAGE_ENFORCER);
        assertThat(result.rejectedHighest()).startsWith(Long.toString(result.tokenB()));
        assertThat(result.fencedRow().computedBy()).isEqualTo(BillingScenario.WORKER_B);
        assertThat(result.fencedRow().fenceToken()).isEqualTo(result.tokenB());
        assertThat(result.fencedRow().amountMinor()).isEqualTo(12_550);
        assertThat(result.staleCounter()).isGreaterThanOrEqualTo(1.0);
        assertThat(result.fenced()).isTrue();
        assertThat(acceptedTokensFor(BillingScenario.CUSTOMER)).as("this run's accepted writes; markers are not forwarded")
                .filteredOn(token -> Long.parseLong(token) >= result.tokenA()).containsExactly(Long.toString(result.tokenB()));
    }

    /**
     * Fence at takeover with real JVMs: A's queued write leaves A (resumed from SIGSTOP) after B
     * acquired but before B wrote anything; B's FENCE marker alone gets it rejected.
     */
    @Test
    void staleWriteIsRejectedByTheNewHoldersMarkerBeforeTheNewHolderWrites() throws Exception {
        ScenarioResult result = new BillingScenario(stack, new Timeline(System.out), 5).run(true);

        assertThat(result.tokenB()).isGreaterThan(result.tokenA());
        assertThat(result.rejectedReason()).isEqualTo("STALE_TOKEN");
        assertThat(result.rejectedStage()).isEqualTo(FenceHeaders.STAGE_ENFORCER);
        assertThat(result.rejectedHighest()).as("the fence was B's marker (seq 0): B had not written")
                .isEqualTo(result.tokenB() + ".0");
        assertThat(result.fencedRow().computedBy()).isEqualTo(BillingScenario.WORKER_B);
    }

    /** The control run: the same stale write, with the enforcer bypassed and the database guard off, overwrites B's row. */
    @Test
    void withoutFencingTheSameStaleWriteOverwritesTheRow() throws Exception {
        String customer = "customer-control-" + UUID.randomUUID();
        List<Lock> held = locks(customer, 2);
        publish(FenceTopics.INPUT, customer, summary(customer, 12_550, "worker-B"), held.get(1), 1);
        publish(FenceTopics.INPUT, customer, summary(customer, 10_000, "worker-A"), held.get(0), 1);

        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
            assertThat(computedBy(BillingConnectors.UNFENCED_TABLE, customer)).isEqualTo("worker-A");
            assertThat(computedBy(BillingConnectors.TABLE, customer)).isEqualTo("worker-B");
        });
    }

    @Test
    void sinkRejectsStaleWriteThatBypassedTheEnforcerToTheDeadLetterTopic() throws Exception {
        String customer = "customer-bypass-" + UUID.randomUUID();
        byte[] stale = serializer().serialize(FenceTopics.ACCEPTED, summary(customer, 100, "intruder"));
        publish(FenceTopics.ACCEPTED, customer, summary(customer, 700, "holder"), 7, 1);
        publishRaw(FenceTopics.ACCEPTED, customer, stale, 5, 1);

        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
            List<ConsumerRecord<String, byte[]>> rejected = CommittedRecords.read(stack.kafkaBootstrap(), FenceTopics.REJECTED,
                    customer::equals);
            assertThat(rejected).hasSize(1);
            ConsumerRecord<String, byte[]> record = rejected.get(0);
            assertThat(header(record, FenceHeaders.REJECTED_REASON)).isEqualTo("STALE_TOKEN");
            assertThat(header(record, FenceHeaders.REJECTED_STAGE)).isEqualTo(FenceHeaders.STAGE_SINK);
            assertThat(header(record, FenceHeaders.REJECTED_HIGHEST)).isEqualTo("7.1");
            assertThat(header(record, FenceHeaders.TOKEN)).isEqualTo("5");
            assertThat(header(record, FenceHeaders.SOURCE_TOPIC)).isEqualTo(FenceTopics.ACCEPTED);
            assertThat(record.value()).isEqualTo(stale);
        });
        assertThat(computedBy(BillingConnectors.TABLE, customer)).isEqualTo("holder");
    }

    /**
     * The fence at the resource on takeover: a new holder's FENCE marker, decided by the
     * enforcer and published to the markers topic, raises the row's fence in PostgreSQL before the
     * holder writes anything, so a stale write that goes around the enforcer (straight to the
     * accepted topic) with a token below the marker, though above the row's last data write, is
     * refused at the database.
     */
    @Test
    void writeAroundTheEnforcerBelowAWinningMarkerIsRefusedAtTheDatabase() throws Exception {
        String customer = "customer-marker-" + UUID.randomUUID();
        List<Lock> held = locks(customer, 2);
        Lock old = held.get(0);
        Lock next = held.get(1);
        // old's release (a revoke) is a revision of its own, so next's token is at least old's + 2
        long between = old.token() + 1;
        assertThat(between).isLessThan(next.token());
        publish(FenceTopics.INPUT, customer, summary(customer, 500, "old-holder"), old, 1);
        await().atMost(Duration.ofSeconds(60))
                .untilAsserted(() -> assertThat(computedBy(BillingConnectors.TABLE, customer)).isEqualTo("old-holder"));

        publishMarker(FenceTopics.INPUT, customer, next);
        await("the marker raised the row's fence, its data unchanged").atMost(Duration.ofSeconds(60))
                .untilAsserted(
                        () -> assertThat(fenceOf(BillingConnectors.TABLE, customer)).isEqualTo(next.token() + ".0 old-holder"));
        byte[] stale = serializer().serialize(FenceTopics.ACCEPTED, summary(customer, 600, "stale-writer"));
        publishRaw(FenceTopics.ACCEPTED, customer, stale, between, 1);

        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
            List<ConsumerRecord<String, byte[]>> rejected = CommittedRecords.read(stack.kafkaBootstrap(), FenceTopics.REJECTED,
                    customer::equals);
            assertThat(rejected).hasSize(1);
            assertThat(header(rejected.get(0), FenceHeaders.REJECTED_REASON)).isEqualTo("STALE_TOKEN");
            assertThat(header(rejected.get(0), FenceHeaders.REJECTED_STAGE)).isEqualTo(FenceHeaders.STAGE_SINK);
            assertThat(header(rejected.get(0), FenceHeaders.REJECTED_HIGHEST)).isEqualTo(next.token() + ".0");
            assertThat(rejected.get(0).value()).isEqualTo(stale);
        });
        assertThat(fenceOf(BillingConnectors.TABLE, customer)).isEqualTo(next.token() + ".0 old-holder");
        assertThat(CommittedRecords.read(stack.kafkaBootstrap(), FenceTopics.MARKERS, customer::equals)).singleElement()
                .satisfies(
                        marker -> assertThat(header(marker, FenceHeaders.MARKER_TARGET_TOPIC)).isEqualTo(FenceTopics.ACCEPTED));
    }

    /**
     * 500 records over 50 keys straight onto the accepted topic (past the enforcer), 100 of them
     * stale: the real Connect worker's sink applies 400 and dead-letters exactly the 100 stale ones
     * with STALE_TOKEN, and every row ends at its key's highest fence.
     */
    @Test
    void sinkAppliesFourHundredAndDeadLettersTheHundredStaleOfFiveHundred() throws Exception {
        String prefix = "batch-" + UUID.randomUUID().toString().substring(0, 8) + "-";
        long[] tokens = {1, 2, 1, 3, 4, 2, 5, 6, 7, 8}; // per key; the 3rd and 6th are stale
        Random random = new Random(20261129);
        int[] next = new int[50];
        AvroSerializer<BillingSummary> serializer = serializer();
        Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap(),
                ProducerConfig.LINGER_MS_CONFIG, 50);
        int sent = 0;
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(config, new StringSerializer(),
                new ByteArraySerializer())) {
            while (sent < 500) {
                int key = random.nextInt(50);
                if (next[key] < tokens.length) {
                    long token = tokens[next[key]++];
                    String customer = prefix + key;
                    RecordHeaders headers = new RecordHeaders();
                    headers.add(FenceHeaders.TOKEN, FenceHeaders.encode(token));
                    headers.add(FenceHeaders.SEQ, FenceHeaders.encode(1));
                    producer.send(new ProducerRecord<>(FenceTopics.ACCEPTED, null, customer,
                            serializer.serialize(FenceTopics.ACCEPTED, summary(customer, token * 100, "batch")), headers));
                    sent++;
                }
            }
            producer.flush();
        }

        await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
            List<ConsumerRecord<String, byte[]>> rejected = CommittedRecords.withPrefix(stack.kafkaBootstrap(),
                    FenceTopics.REJECTED, prefix);
            assertThat(rejected).hasSize(100).allSatisfy(r -> {
                assertThat(header(r, FenceHeaders.REJECTED_REASON)).isEqualTo("STALE_TOKEN");
                assertThat(header(r, FenceHeaders.REJECTED_STAGE)).isEqualTo(FenceHeaders.STAGE_SINK);
            });
        });
        try (Connection connection = DriverManager.getConnection(stack.postgresUrl());
                PreparedStatement statement = connection
                        .prepareStatement("SELECT count(*), min(fence_token), max(fence_token), min(amount_minor) FROM "
                                + BillingConnectors.TABLE + " WHERE resource_key LIKE ?")) {
            statement.setString(1, prefix + "%");
            try (ResultSet rows = statement.executeQuery()) {
                assertThat(rows.next()).isTrue();
                assertThat(rows.getLong(1)).isEqualTo(50);
                assertThat(rows.getLong(2)).isEqualTo(8);
                assertThat(rows.getLong(3)).isEqualTo(8);
                assertThat(rows.getLong(4)).isEqualTo(800);
            }
        }
    }

    /**
     * The sink plugin's Connect converter against the real registry: it decodes what producer-lib's
     * serializer wrote into a Struct field by field, writes a Struct back to bytes that decode to the
     * same record, follows a schema evolved with a new optional field, and refuses bytes that are not
     * the wire format with a DataException.
     */
    @Test
    void connectConverterMapsTheWireFormatToStructsAndBack() {
        String topic = "converter-" + UUID.randomUUID();
        RestSchemaRegistryClient registry = new RestSchemaRegistryClient(stack.schemaRegistryUrl(), Duration.ofSeconds(10));
        BillingSummary summary = summary("customer-converter", 4_321, "converter-test");
        byte[] bytes = AvroSerializer.<BillingSummary>forValues(registry).serialize(topic, summary);
        AvroConverter converter = new AvroConverter();
        converter.configure(Map.of("schema.registry.url", stack.schemaRegistryUrl()), false);

        SchemaAndValue decoded = converter.toConnectData(topic, bytes);
        Struct struct = (Struct) decoded.value();
        assertThat(struct.getString("customerId")).isEqualTo("customer-converter");
        assertThat(struct.getInt64("amountMinor")).isEqualTo(4_321L);
        assertThat(struct.getInt32("lineItems")).isEqualTo(1);
        assertThat(decoded.schema().field("computedAt").schema().name())
                .isEqualTo(Timestamp.LOGICAL_NAME);
        assertThat(((Date) struct.get("computedAt")).toInstant()).isEqualTo(summary.getComputedAt());

        byte[] back = converter.fromConnectData(topic, decoded.schema(), struct);
        assertThat(new AvroDeserializer<BillingSummary>(registry, BillingSummary.getClassSchema()).deserialize(topic, back))
                .isEqualTo(summary);
        assertThat(converter.toConnectData(topic, null)).isEqualTo(SchemaAndValue.NULL);

        Schema evolved = SchemaBuilder.record("BillingSummary")
                .namespace("dev.fencedwrites.contract.billing").fields()
                .requiredString("customerId").optionalString("note").endRecord();
        GenericRecord v2 = new GenericRecordBuilder(evolved)
                .set("customerId", "customer-v2").set("note", "late fee waived").build();
        Struct v2Struct = (Struct) converter
                .toConnectData(topic + "-v2",
                        AvroSerializer.<GenericRecord>forValues(registry).serialize(topic + "-v2", v2))
                .value();
        assertThat(v2Struct.getString("note")).isEqualTo("late fee waived");
        assertThat(v2Struct.schema().field("note").schema().isOptional()).isTrue();

        assertThatThrownBy(() -> converter.toConnectData(topic, "plain text".getBytes(StandardCharsets.UTF_8)))
                .isInstanceOf(DataException.class);
    }

    /**
     * The schema evolves mid-stream (a new optional field): the real Connect worker's sink adds the
     * column (auto.evolve) and rows written before and after are both right.
     */
    @Test
    void aNewOptionalFieldMidStreamAddsItsColumn() throws Exception {
        String before = "customer-evolve-" + UUID.randomUUID();
        String after = "customer-evolve-" + UUID.randomUUID();
        publish(FenceTopics.ACCEPTED, before, summary(before, 1_111, "v1"), 3, 1);
        await().atMost(Duration.ofSeconds(60))
                .untilAsserted(() -> assertThat(computedBy(BillingConnectors.TABLE, before)).isEqualTo("v1"));

        Schema v1 = BillingSummary.getClassSchema();
        SchemaBuilder.FieldAssembler<Schema> fields = SchemaBuilder
                .record(v1.getName())
                .namespace(v1.getNamespace()).fields();
        for (Schema.Field field : v1.getFields()) {
            fields = fields.name(field.name()).type(field.schema()).noDefault();
        }
        Schema v2 = fields.optionalString("invoiceNote").endRecord();
        GenericRecordBuilder record = new GenericRecordBuilder(v2);
        BillingSummary values = summary(after, 2_222, "v2");
        for (Schema.Field field : v1.getFields()) {
            record.set(field.name(),
                    field.name().equals("computedAt") ? values.getComputedAt().toEpochMilli() : values.get(field.name()));
        }
        byte[] bytes = AvroSerializer.<GenericRecord>forValues(new RestSchemaRegistryClient(stack.schemaRegistryUrl(),
                Duration.ofSeconds(10))).serialize(FenceTopics.ACCEPTED, record.set("invoiceNote", "late fee waived").build());
        publishRaw(FenceTopics.ACCEPTED, after, bytes, 3, 1);

        await().atMost(Duration.ofSeconds(60)).ignoreExceptions().untilAsserted(() -> {
            try (Connection connection = DriverManager.getConnection(stack.postgresUrl());
                    PreparedStatement statement = connection
                            .prepareStatement("SELECT resource_key, invoice_note, amount_minor FROM " + BillingConnectors.TABLE
                                    + " WHERE resource_key IN (?, ?) ORDER BY amount_minor")) {
                statement.setString(1, before);
                statement.setString(2, after);
                try (ResultSet rows = statement.executeQuery()) {
                    assertThat(rows.next()).isTrue();
                    assertThat(rows.getString(1)).isEqualTo(before);
                    assertThat(rows.getString(2)).isNull();
                    assertThat(rows.next()).isTrue();
                    assertThat(rows.getString(1)).isEqualTo(after);
                    assertThat(rows.getString(2)).isEqualTo("late fee waived");
                    assertThat(rows.getLong(3)).isEqualTo(2_222);
                }
            }
        });
    }

    @Test
    void avroSerdeRoundTripsThroughTheRealSchemaRegistry() {
        RestSchemaRegistryClient registry = new RestSchemaRegistryClient(stack.schemaRegistryUrl(), Duration.ofSeconds(10));
        BillingSummary summary = summary("customer-serde", 4_200, "serde-test");

        byte[] bytes = AvroSerializer.<BillingSummary>forValues(registry).serialize("serde-topic", summary);
        RestSchemaRegistryClient fresh = new RestSchemaRegistryClient(stack.schemaRegistryUrl(), Duration.ofSeconds(10));
        BillingSummary decoded = new AvroDeserializer<BillingSummary>(fresh, BillingSummary.getClassSchema())
                .deserialize("serde-topic", bytes);

        assertThat(bytes[0]).isZero();
        assertThat(decoded).isEqualTo(summary);
        assertThatThrownBy(() -> fresh.getById(987_654))
                .isInstanceOfSatisfying(SchemaRegistryException.class, e -> assertThat(e.httpStatus()).isEqualTo(404));
    }

    private static BillingSummary summary(String customer, long amountMinor, String computedBy) {
        return BillingSummary.newBuilder().setCustomerId(customer).setBillingPeriod("2026-11").setAmountMinor(amountMinor)
                .setCurrency("EUR").setLineItems(1).setComputedAt(Instant.parse("2026-11-29T10:00:00Z")).setComputedBy(computedBy)
                .build();
    }

    private static AvroSerializer<BillingSummary> serializer() {
        return AvroSerializer.forValues(new RestSchemaRegistryClient(stack.schemaRegistryUrl(), Duration.ofSeconds(10)));
    }

    /** One real acquisition of a key's etcd lock: its fencing token and lease (the enforcer verifies tokens). */
    record Lock(long token, long lease) {
    }

    /** {@code count} acquisitions of {@code key}'s lock, one after the other (each released before the next), in token order. */
    private static List<Lock> locks(String key, int count) throws Exception {
        List<Lock> held = new ArrayList<>();
        try (FencingLeaseClient leases = new FencingLeaseClient(List.of(stack.etcdEndpoints()),
                FencingLeaseClient.DEFAULT_LOCK_PREFIX)) {
            for (int i = 0; i < count; i++) {
                try (FencingLease lease = leases.acquire(key, Duration.ofSeconds(30), Duration.ofSeconds(30))) {
                    held.add(new Lock(lease.token(), lease.leaseId()));
                }
            }
        }
        return held;
    }

    private static void publish(String topic, String key, BillingSummary value, Lock lock, long seq) throws Exception {
        publishRaw(topic, key, serializer().serialize(topic, value), lock, seq);
    }

    private static void publish(String topic, String key, BillingSummary value, long token, long seq) throws Exception {
        publishRaw(topic, key, serializer().serialize(topic, value), token, seq);
    }

    private static void publishRaw(String topic, String key, byte[] value, Lock lock, long seq) throws Exception {
        publishRaw(topic, key, value, lock.token(), seq, lock.lease());
    }

    private static void publishRaw(String topic, String key, byte[] value, long token, long seq) throws Exception {
        publishRaw(topic, key, value, token, seq, 0);
    }

    /** Publishes with {@code fence.token}, {@code fence.seq} and, when {@code lease} is positive, {@code fence.lease}. */
    private static void publishRaw(String topic, String key, byte[] value, long token, long seq, long lease) throws Exception {
        Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap());
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(config, new StringSerializer(),
                new ByteArraySerializer())) {
            RecordHeaders headers = new RecordHeaders();
            headers.add(FenceHeaders.TOKEN, FenceHeaders.encode(token));
            headers.add(FenceHeaders.SEQ, FenceHeaders.encode(seq));
            if (lease > 0) {
                headers.add(FenceHeaders.LEASE, FenceHeaders.encode(lease));
            }
            producer.send(new ProducerRecord<>(topic, null, key, value, headers)).get(30, TimeUnit.SECONDS);
        }
    }

    /** A FENCE marker (seq 0, null value), as producer-lib publishes at acquisition. */
    private static void publishMarker(String topic, String key, Lock lock) throws Exception {
        Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap());
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(config, new StringSerializer(),
                new ByteArraySerializer())) {
            RecordHeaders headers = new RecordHeaders();
            headers.add(FenceHeaders.TOKEN, FenceHeaders.encode(lock.token()));
            headers.add(FenceHeaders.LEASE, FenceHeaders.encode(lock.lease()));
            headers.add(FenceHeaders.SEQ, FenceHeaders.encode(0));
            headers.add(FenceHeaders.OP, FenceHeaders.encode("FENCE"));
            producer.send(new ProducerRecord<>(topic, null, key, null, headers)).get(30, TimeUnit.SECONDS);
        }
    }

    /** The row's fence and writer as {@code token.seq computed_by}, or {@code null} without a row. */
    private static String fenceOf(String table, String key) throws Exception {
        try (Connection connection = DriverManager.getConnection(stack.postgresUrl());
                PreparedStatement statement = connection.prepareStatement(
                        "SELECT fence_token, fence_seq, computed_by FROM " + table + " WHERE resource_key = ?")) {
            statement.setString(1, key);
            try (ResultSet rows = statement.executeQuery()) {
                return rows.next() ? rows.getLong(1) + "." + rows.getLong(2) + " " + rows.getString(3) : null;
            }
        }
    }

    private static List<String> acceptedTokensFor(String key) {
        List<String> tokens = new ArrayList<>();
        for (ConsumerRecord<String, byte[]> record : CommittedRecords.read(stack.kafkaBootstrap(), FenceTopics.ACCEPTED,
                key::equals)) {
            tokens.add(header(record, FenceHeaders.TOKEN));
        }
        return tokens;
    }

    private static String header(ConsumerRecord<?, ?> record, String name) {
        var header = record.headers().lastHeader(name);
        return header == null ? null : FenceHeaders.decode(header.value());
    }

    private static String computedBy(String table, String key) throws Exception {
        try (Connection connection = DriverManager.getConnection(stack.postgresUrl());
                PreparedStatement statement = connection
                        .prepareStatement("SELECT computed_by FROM " + table + " WHERE resource_key = ?")) {
            statement.setString(1, key);
            try (ResultSet rows = statement.executeQuery()) {
                return rows.next() ? rows.getString(1) : null;
            }
        } catch (SQLException e) {
            if ("42703".equals(e.getSQLState())) {
                return null; // the sink adds the data columns with the first record it writes
            }
            throw e;
        }
    }
}
