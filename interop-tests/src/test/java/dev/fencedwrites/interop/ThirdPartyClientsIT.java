package dev.fencedwrites.interop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.producer.FencedProducer;
import dev.fencedwrites.producer.FencingLease;
import dev.fencedwrites.producer.FencingLeaseClient;
import dev.fencedwrites.schemas.FenceHeaders;
import dev.fencedwrites.schemas.FenceTopics;
import dev.fencedwrites.schemas.billing.BillingSummary;
import dev.fencedwrites.schemas.registry.AvroDeserializer;
import dev.fencedwrites.schemas.registry.AvroSerializer;
import dev.fencedwrites.schemas.registry.RestSchemaRegistryClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Third-party clients against the real pipeline: Confluent's Node.js schema-registry client
 * ({@code @confluentinc/schemaregistry}) with kafkajs, and Debian's kcat. They know nothing of this
 * project's code; what they must agree on is the wire contract: Avro in the Confluent wire format
 * under {@code <topic>-value}, the {@code fence.*} headers as UTF-8 decimal strings, and Kafka's
 * murmur2 partitioning of the key. The Node.js scripts (src/test/node) only print what they did
 * and read, as JSON lines; every assertion is made here.
 *
 * <p>One local stack (Kafka, etcd, schema registry, PostgreSQL, enforcer, Connect + sink) for the
 * class; each test uses keys of its own.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class ThirdPartyClientsIT {
    private static final Duration NODE_TIMEOUT = Duration.ofSeconds(120);
    private static final Duration PIPELINE = Duration.ofSeconds(90);
    private static final String SUBJECT = FenceTopics.INPUT + "-value";

    @TempDir
    static Path dir;
    static LocalStack stack;
    static RestSchemaRegistryClient registry;

    @BeforeAll
    static void startStack() throws Exception {
        ExternalCommand.checkInstalled();
        stack = LocalStack.start(dir.resolve("stack"), false, line -> System.out.println("[stack] " + line));
        registry = new RestSchemaRegistryClient(stack.schemaRegistryUrl(), Duration.ofSeconds(10));
    }

    @AfterAll
    static void stopStack() {
        if (stack != null) {
            stack.close();
        }
    }

    /**
     * (a) producer-lib publishes BillingSummary writes under real etcd leases; the enforcer accepts
     * them; kafkajs reads the accepted topic and Confluent's AvroDeserializer decodes each value,
     * which must equal what was published, field by field, with the fence headers as sent.
     * The values include a long beyond 2^53 and one beyond 2^31, a negative amount, text beyond
     * ASCII and the millisecond of the timestamp.
     */
    @Test
    void confluentsDeserializerDecodesWhatProducerLibPublishedFieldByField() throws Exception {
        String prefix = "interop-a-" + shortId() + "-";
        List<String> customers = List.of(prefix + "plain", prefix + "Zoë-€-𝄞", prefix + "extremes");
        long[][] amounts = {{12_550, 0}, {-4_200, 3_000_000_000L}, {Long.MAX_VALUE, (1L << 53) + 1}};
        int[][] lineItems = {{5, 0}, {1, 7}, {Integer.MAX_VALUE, 2}};
        Instant[][] computedAt = {{Instant.parse("2026-11-30T23:59:59.999Z"), Instant.ofEpochMilli(1)},
                {Instant.parse("2026-01-01T00:00:00.001Z"), Instant.parse("2026-06-15T12:34:56.789Z")},
                {Instant.ofEpochMilli(0), Instant.parse("2099-12-31T23:59:59.999Z")}};

        record Published(String key, long token, long leaseId, long seq, BillingSummary value) {
        }
        List<Published> published = new ArrayList<>();
        Map<String, Object> kafka = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap());
        try (FencingLeaseClient leases = new FencingLeaseClient(List.of(stack.etcdEndpoints()), FencingLeaseClient.DEFAULT_LOCK_PREFIX);
             FencedProducer<BillingSummary> producer = FencedProducer.create(kafka, new AvroSerializer<>(registry, false), FenceTopics.INPUT,
                     "producer-lib-interop")) {
            for (int c = 0; c < customers.size(); c++) {
                String customer = customers.get(c);
                try (FencingLease lease = producer.acquire(leases, customer, Duration.ofSeconds(10), Duration.ofSeconds(30))) {
                    for (int w = 0; w < 2; w++) {
                        BillingSummary summary = BillingSummary.newBuilder().setCustomerId(customer).setBillingPeriod("2026-1" + w)
                                .setAmountMinor(amounts[c][w]).setCurrency(w == 0 ? "EUR" : "JPY").setLineItems(lineItems[c][w])
                                .setComputedAt(computedAt[c][w]).setComputedBy("worker ✓ " + c + "/" + w).build();
                        producer.sendAndWait(lease, summary);
                        published.add(new Published(customer, lease.token(), lease.leaseId(), w + 1, summary));
                    }
                }
            }
        }
        int schemaId = registry.register(SUBJECT, BillingSummary.getClassSchema());

        List<JsonNode> decoded = ExternalCommand.node("consume.js", Map.of("KAFKA_BOOTSTRAP", stack.kafkaBootstrap(),
                "SCHEMA_REGISTRY_URL", stack.schemaRegistryUrl(), "TOPIC", FenceTopics.ACCEPTED, "KEY_PREFIX", prefix,
                "EXPECT", Integer.toString(published.size()), "TIMEOUT_MS", Long.toString(PIPELINE.toMillis())), "", NODE_TIMEOUT);

        assertThat(decoded).as("what kafkajs read from the accepted topic").hasSize(published.size());
        Map<String, JsonNode> byKeyAndSeq = new HashMap<>();
        for (JsonNode line : decoded) {
            assertThat(line.has("error")).as("decode error: %s", line).isFalse();
            byKeyAndSeq.put(line.get("key").asText() + "#" + line.get("headers").get(FenceHeaders.SEQ).asText(), line);
        }
        for (Published write : published) {
            JsonNode line = byKeyAndSeq.get(write.key() + "#" + write.seq());
            assertThat(line).as("accepted write %s seq %d decoded by the Confluent client", write.key(), write.seq()).isNotNull();
            JsonNode headers = line.get("headers");
            assertThat(headers.get(FenceHeaders.TOKEN).asText()).isEqualTo(Long.toString(write.token()));
            assertThat(headers.get(FenceHeaders.LEASE).asText()).isEqualTo(Long.toString(write.leaseId()));
            assertThat(headers.get(FenceHeaders.WRITER).asText()).isEqualTo("producer-lib-interop");
            assertThat(headers.get(FenceHeaders.OP).asText()).isEqualTo("WRITE");
            assertThat(line.get("schemaId").asInt()).as("schema id in the wire-format prefix").isEqualTo(schemaId);

            JsonNode value = line.get("value");
            BillingSummary expected = write.value();
            assertThat(fieldNames(value)).containsExactly("customerId", "billingPeriod", "amountMinor", "currency", "lineItems",
                    "computedAt", "computedBy");
            assertThat(value.get("customerId").asText()).isEqualTo(expected.getCustomerId());
            assertThat(value.get("billingPeriod").asText()).isEqualTo(expected.getBillingPeriod());
            assertThat(value.get("amountMinor").asText()).as("amountMinor, exact as a BigInt").isEqualTo(Long.toString(expected.getAmountMinor()));
            assertThat(value.get("currency").asText()).isEqualTo(expected.getCurrency());
            assertThat(value.get("lineItems").isInt()).isTrue();
            assertThat(value.get("lineItems").asInt()).isEqualTo(expected.getLineItems());
            assertThat(value.get("computedAt").asLong()).as("computedAt, epoch millis").isEqualTo(expected.getComputedAt().toEpochMilli());
            assertThat(value.get("computedBy").asText()).isEqualTo(expected.getComputedBy());
        }
        for (String customer : customers) {
            assertThat(decoded).filteredOn(line -> line.get("key").asText().equals(customer))
                    .extracting(line -> line.get("headers").get(FenceHeaders.SEQ).asText())
                    .as("a key's writes in the order they were sent").containsExactly("1", "2");
        }
    }

    /**
     * (b) kafkajs publishes, with Confluent's AvroSerializer, BillingSummary records with fencing
     * headers it sets itself (tokens from real etcd acquisitions): the fresh writes pass the
     * enforcer and the sink and become rows in PostgreSQL; a stale write (the older holder's token
     * after the newer holder's writes) lands on the rejected topic with STALE_TOKEN, and a
     * redelivery with DUPLICATE. A delete (null value) soft-deletes its row and keeps the fence.
     */
    @Test
    void kafkajsWritesWithConfluentsSerializerAreFencedAndReachPostgres() throws Exception {
        String prefix = "interop-b-" + shortId() + "-";
        String contested = prefix + "contested";
        String deleted = prefix + "deleted";
        long older;
        long newer;
        try (FencingLeaseClient leases = new FencingLeaseClient(List.of(stack.etcdEndpoints()), FencingLeaseClient.DEFAULT_LOCK_PREFIX)) {
            try (FencingLease first = leases.acquire(contested, Duration.ofSeconds(10), Duration.ofSeconds(30))) {
                older = first.token();
            }
            try (FencingLease second = leases.acquire(contested, Duration.ofSeconds(10), Duration.ofSeconds(30))) {
                newer = second.token();
            }
        }
        assertThat(newer).isGreaterThan(older);

        List<ObjectNode> records = new ArrayList<>();
        records.add(write(contested, newer, 1, "npm-worker-B", summaryJson(contested, 10_000, 4, "npm-worker-B")));
        records.add(write(contested, newer, 2, "npm-worker-B", summaryJson(contested, 12_550, 5, "npm-worker-B")));
        records.add(write(contested, older, 1, "npm-worker-A", summaryJson(contested, 100, 1, "npm-worker-A")));
        records.add(write(contested, newer, 2, "npm-worker-B", summaryJson(contested, 12_550, 5, "npm-worker-B")));
        // Two keys for each partition, so a partitioner that disagreed with Java's would show.
        List<String> spread = keysCoveringEveryPartition(prefix + "spread-", 2);
        for (String key : spread) {
            records.add(write(key, newer, 1, "npm-worker-B", summaryJson(key, key.hashCode() & 0xffff, 2, "npm-worker-B")));
        }
        records.add(write(deleted, newer, 1, "npm-worker-B", summaryJson(deleted, 777, 3, "npm-worker-B")));
        records.add(write(deleted, newer, 2, "npm-worker-B", null));
        Path schemaFile = dir.resolve("BillingSummary.avsc");
        Files.writeString(schemaFile, BillingSummary.getClassSchema().toString());

        ArrayNode input = ExternalCommand.JSON.createArrayNode().addAll(records);
        List<JsonNode> out = ExternalCommand.node("produce.js", Map.of("KAFKA_BOOTSTRAP", stack.kafkaBootstrap(), "SCHEMA_REGISTRY_URL",
                stack.schemaRegistryUrl(), "TOPIC", FenceTopics.INPUT, "SCHEMA_FILE", schemaFile.toString()), input.toString(), NODE_TIMEOUT);

        assertThat(out).hasSize(records.size() + 1);
        assertThat(out.get(0).get("registered").asInt()).as("the Confluent client registered the contract's schema under the id this project's client gets")
                .isEqualTo(registry.register(SUBJECT, BillingSummary.getClassSchema()));
        AvroDeserializer<BillingSummary> deserializer = new AvroDeserializer<>(registry, BillingSummary.getClassSchema());
        List<byte[]> sentValues = new ArrayList<>();
        for (int i = 0; i < records.size(); i++) {
            JsonNode sent = out.get(i + 1);
            ObjectNode record = records.get(i);
            String key = record.get("key").asText();
            assertThat(sent.get("key").asText()).isEqualTo(key);
            assertThat(sent.get("partition").asInt()).as("kafkajs' partition for %s is the Java client's (murmur2)", key)
                    .isEqualTo(javaPartition(key, LocalStack.PARTITIONS));
            byte[] bytes = sent.get("valueBytes").isNull() ? null : Base64.getDecoder().decode(sent.get("valueBytes").asText());
            sentValues.add(bytes);
            if (bytes != null) {
                BillingSummary value = deserializer.deserialize(FenceTopics.INPUT, bytes);
                JsonNode expected = record.get("value");
                assertThat(value.getCustomerId()).isEqualTo(expected.get("customerId").asText());
                assertThat(value.getAmountMinor()).isEqualTo(expected.get("amountMinor").asLong());
                assertThat(value.getLineItems()).isEqualTo(expected.get("lineItems").asInt());
                assertThat(value.getComputedAt()).isEqualTo(Instant.ofEpochMilli(expected.get("computedAt").asLong()));
                assertThat(value.getComputedBy()).isEqualTo(expected.get("computedBy").asText());
            }
        }
        assertThat(out.stream().skip(1).map(line -> line.get("partition").asInt()).distinct()).hasSize(LocalStack.PARTITIONS);

        // Waits for as many records as expected, then checks them: a surplus fails at once.
        List<ConsumerRecord<String, byte[]>> rejected = await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1))
                .until(() -> readAll(FenceTopics.REJECTED, prefix), found -> found.size() >= 2);
        assertThat(rejected).extracting(r -> header(r, FenceHeaders.REJECTED_REASON)).containsExactlyInAnyOrder("STALE_TOKEN", "DUPLICATE");
        ConsumerRecord<String, byte[]> stale = rejected.stream().filter(r -> header(r, FenceHeaders.REJECTED_REASON).equals("STALE_TOKEN"))
                .findFirst().orElseThrow();
        assertThat(stale.key()).isEqualTo(contested);
        assertThat(header(stale, FenceHeaders.TOKEN)).isEqualTo(Long.toString(older));
        assertThat(header(stale, FenceHeaders.WRITER)).isEqualTo("npm-worker-A");
        assertThat(header(stale, FenceHeaders.REJECTED_STAGE)).isEqualTo(FenceHeaders.STAGE_ENFORCER);
        assertThat(header(stale, FenceHeaders.REJECTED_HIGHEST)).isEqualTo(newer + ".2");
        assertThat(stale.value()).as("the stale record's value, byte for byte").isEqualTo(sentValues.get(2));
        ConsumerRecord<String, byte[]> duplicate = rejected.stream().filter(r -> r != stale).findFirst().orElseThrow();
        assertThat(header(duplicate, FenceHeaders.REJECTED_REASON)).isEqualTo("DUPLICATE");
        assertThat(header(duplicate, FenceHeaders.REJECTED_HIGHEST)).isEqualTo(newer + ".2");
        List<String> fresh = expectedAccepted(contested, spread, deleted);
        List<ConsumerRecord<String, byte[]>> accepted = await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1))
                .until(() -> readAll(FenceTopics.ACCEPTED, prefix), found -> found.size() >= fresh.size());
        assertThat(accepted).extracting(r -> r.key() + "@" + header(r, FenceHeaders.SEQ)).as("every fresh write, nothing else")
                .containsExactlyInAnyOrderElementsOf(fresh);

        await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
            Map<String, Map<String, Object>> rows = rows(prefix);
            assertThat(rows).containsOnlyKeys(expectedKeys(contested, spread, deleted));
            Map<String, Object> row = rows.get(contested);
            assertThat(row).containsEntry("computed_by", "npm-worker-B").containsEntry("amount_minor", 12_550L).containsEntry("line_items", 5)
                    .containsEntry("customer_id", contested).containsEntry("billing_period", "2026-11").containsEntry("currency", "EUR")
                    .containsEntry("fence_token", newer).containsEntry("fence_seq", 2L).containsEntry("deleted", false);
            assertThat(((java.sql.Timestamp) row.get("computed_at")).toInstant()).isEqualTo(Instant.ofEpochMilli(COMPUTED_AT));
            for (String key : spread) {
                assertThat(rows.get(key)).containsEntry("amount_minor", (long) (key.hashCode() & 0xffff)).containsEntry("fence_token", newer)
                        .containsEntry("fence_seq", 1L).containsEntry("deleted", false);
            }
            assertThat(rows.get(deleted)).as("a delete keeps the fence and clears the data").containsEntry("deleted", true)
                    .containsEntry("fence_token", newer).containsEntry("fence_seq", 2L).containsEntry("amount_minor", null);
        });
    }

    /**
     * kafkajs' DefaultPartitioner against Kafka's own (the Java producer's) for 2 000 keys of
     * mixed length and script, on 3 and on 10 partitions. A key on another partition than the Java
     * client's is rejected WRONG_PARTITION, so this must hold for every key.
     */
    @Test
    void kafkajsDefaultPartitionerPicksTheJavaClientsPartition() {
        Random random = new Random(20261130);
        String alphabet = "abcxyz0189-_:/. ÄöüßéñçΩж漢字🙂𝄞";
        int[] codePoints = alphabet.codePoints().toArray();
        Set<String> keys = new TreeSet<>(List.of("", "a", "customer-42", "x".repeat(1000)));
        while (keys.size() < 2_000) {
            StringBuilder key = new StringBuilder();
            int length = random.nextInt(40);
            for (int i = 0; i < length; i++) {
                key.appendCodePoint(codePoints[random.nextInt(codePoints.length)]);
            }
            keys.add(key.toString());
        }
        ArrayNode input = ExternalCommand.JSON.createArrayNode();
        keys.forEach(input::add);
        for (int partitions : new int[] {3, 10}) {
            List<JsonNode> out = ExternalCommand.node("partition.js", Map.of("PARTITIONS", Integer.toString(partitions)), input.toString(),
                    NODE_TIMEOUT);
            assertThat(out).hasSize(1);
            Map<String, Integer> mismatches = new LinkedHashMap<>();
            for (String key : keys) {
                JsonNode picked = out.get(0).get(key);
                assertThat(picked).as("kafkajs' partition for %s", key).isNotNull();
                if (picked.asInt() != javaPartition(key, partitions)) {
                    mismatches.put(key, picked.asInt());
                }
            }
            assertThat(mismatches).as("keys kafkajs puts on another partition than Java's, of %d partitions", partitions).isEmpty();
        }
    }

    /**
     * Debian's kcat sends records with fencing headers and Avro values (written by this project's
     * serializer to files, one file per record) and reads the accepted and rejected topics back:
     * keys and headers as sent, the stale write rejected STALE_TOKEN, and a key sent without
     * {@code -X partitioner=murmur2_random} (kcat's own partitioner, CRC32) onto another partition
     * than Kafka's rejected WRONG_PARTITION. The fresh writes reach PostgreSQL.
     */
    @Test
    void kcatSendsAndReadsFencedRecordsWithHeaders() throws Exception {
        String prefix = "interop-kcat-" + shortId() + "-";
        String contested = prefix + "contested";
        String other = prefix + "other";
        String misrouted = keyWhereCrc32DisagreesWithMurmur2(prefix + "misrouted-");
        AvroSerializer<BillingSummary> serializer = new AvroSerializer<>(registry, false);

        record Sent(String key, long token, long seq, String writer, boolean murmur2, byte[] value) {
        }
        List<Sent> sends = List.of(
                new Sent(contested, 20, 1, "kcat-B", true, serializer.serialize(FenceTopics.INPUT, summary(contested, 9_900, "kcat-B"))),
                new Sent(contested, 20, 2, "kcat-B", true, serializer.serialize(FenceTopics.INPUT, summary(contested, 12_550, "kcat-B"))),
                new Sent(contested, 11, 1, "kcat-A", true, serializer.serialize(FenceTopics.INPUT, summary(contested, 100, "kcat-A"))),
                new Sent(other, 20, 1, "kcat-B", true, serializer.serialize(FenceTopics.INPUT, summary(other, 5_000, "kcat-B"))),
                new Sent(misrouted, 20, 1, "kcat-C", false, serializer.serialize(FenceTopics.INPUT, summary(misrouted, 1, "kcat-C"))));
        Path files = Files.createDirectories(dir.resolve("kcat"));
        for (int i = 0; i < sends.size(); i++) {
            Sent send = sends.get(i);
            Path file = Files.write(files.resolve(i + ".avro"), send.value());
            List<String> args = new ArrayList<>(List.of("-b", stack.kafkaBootstrap(), "-P", "-t", FenceTopics.INPUT, "-k", send.key(),
                    "-H", FenceHeaders.TOKEN + "=" + send.token(), "-H", FenceHeaders.SEQ + "=" + send.seq(), "-H", FenceHeaders.WRITER + "=" + send.writer()));
            if (send.murmur2()) {
                args.addAll(List.of("-X", "partitioner=murmur2_random"));
            }
            args.add(file.toString());
            ExternalCommand.kcat(args, Duration.ofSeconds(60)); // one process per record, so each is acknowledged before the next
        }

        // Waits for as many records as expected, then checks them: a surplus fails at once.
        List<JsonNode> rejected = await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(2))
                .until(() -> kcatRead(FenceTopics.REJECTED, prefix), found -> found.size() >= 2);
        assertThat(rejected).extracting(r -> r.get("key").asText()).containsExactlyInAnyOrder(contested, misrouted);
        JsonNode stale = rejected.stream().filter(r -> r.get("key").asText().equals(contested)).findFirst().orElseThrow();
        Map<String, String> headers = kcatHeaders(stale);
        assertThat(headers).containsEntry(FenceHeaders.TOKEN, "11").containsEntry(FenceHeaders.SEQ, "1").containsEntry(FenceHeaders.WRITER, "kcat-A")
                .containsEntry(FenceHeaders.REJECTED_REASON, "STALE_TOKEN").containsEntry(FenceHeaders.REJECTED_STAGE, FenceHeaders.STAGE_ENFORCER)
                .containsEntry(FenceHeaders.REJECTED_HIGHEST, "20.2").containsEntry(FenceHeaders.SOURCE_TOPIC, FenceTopics.INPUT)
                .containsEntry(FenceHeaders.SOURCE_PARTITION, Integer.toString(javaPartition(contested, LocalStack.PARTITIONS)));
        JsonNode wrong = rejected.stream().filter(r -> r.get("key").asText().equals(misrouted)).findFirst().orElseThrow();
        assertThat(kcatHeaders(wrong)).containsEntry(FenceHeaders.REJECTED_REASON, "WRONG_PARTITION").containsEntry(FenceHeaders.WRITER, "kcat-C")
                .containsEntry(FenceHeaders.SOURCE_PARTITION, Integer.toString(crc32Partition(misrouted, LocalStack.PARTITIONS)));
        List<JsonNode> accepted = await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(2))
                .until(() -> kcatRead(FenceTopics.ACCEPTED, prefix), found -> found.size() >= 3);
        assertThat(accepted).extracting(r -> r.get("key").asText() + "@" + kcatHeaders(r).get(FenceHeaders.TOKEN) + "." + kcatHeaders(r).get(FenceHeaders.SEQ)
                        + " by " + kcatHeaders(r).get(FenceHeaders.WRITER))
                .containsExactlyInAnyOrder(contested + "@20.1 by kcat-B", contested + "@20.2 by kcat-B", other + "@20.1 by kcat-B");
        for (JsonNode record : accepted) {
            assertThat(record.get("partition").asInt()).as("kcat with murmur2_random picks Kafka's partition")
                    .isEqualTo(javaPartition(record.get("key").asText(), LocalStack.PARTITIONS));
        }
        assertThat(accepted).filteredOn(r -> r.get("key").asText().equals(contested)).extracting(r -> kcatHeaders(r).get(FenceHeaders.SEQ))
                .containsExactly("1", "2");
        assertThat(readAll(FenceTopics.ACCEPTED, prefix)).extracting(ConsumerRecord::value).as("the values kcat sent, byte for byte")
                .containsExactlyInAnyOrder(sends.get(0).value(), sends.get(1).value(), sends.get(3).value());

        await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
            Map<String, Map<String, Object>> rows = rows(prefix);
            assertThat(rows).containsOnlyKeys(contested, other);
            assertThat(rows.get(contested)).containsEntry("computed_by", "kcat-B").containsEntry("amount_minor", 12_550L)
                    .containsEntry("fence_token", 20L).containsEntry("fence_seq", 2L);
            assertThat(rows.get(other)).containsEntry("amount_minor", 5_000L).containsEntry("fence_token", 20L);
        });
    }

    // ---- helpers ----

    private static final long COMPUTED_AT = Instant.parse("2026-11-30T18:00:00.123Z").toEpochMilli();

    private static ObjectNode write(String key, long token, long seq, String writer, ObjectNode value) {
        ObjectNode record = ExternalCommand.JSON.createObjectNode().put("key", key);
        record.putObject("headers").put(FenceHeaders.TOKEN, Long.toString(token)).put(FenceHeaders.SEQ, Long.toString(seq))
                .put(FenceHeaders.WRITER, writer);
        record.set("value", value == null ? ExternalCommand.JSON.nullNode() : value);
        return record;
    }

    private static ObjectNode summaryJson(String customer, long amountMinor, int lineItems, String computedBy) {
        return ExternalCommand.JSON.createObjectNode().put("customerId", customer).put("billingPeriod", "2026-11").put("amountMinor", amountMinor)
                .put("currency", "EUR").put("lineItems", lineItems).put("computedAt", COMPUTED_AT).put("computedBy", computedBy);
    }

    private static BillingSummary summary(String customer, long amountMinor, String computedBy) {
        return BillingSummary.newBuilder().setCustomerId(customer).setBillingPeriod("2026-11").setAmountMinor(amountMinor).setCurrency("EUR")
                .setLineItems(1).setComputedAt(Instant.ofEpochMilli(COMPUTED_AT)).setComputedBy(computedBy).build();
    }

    private static List<String> expectedAccepted(String contested, List<String> spread, String deleted) {
        List<String> expected = new ArrayList<>(List.of(contested + "@1", contested + "@2", deleted + "@1", deleted + "@2"));
        spread.forEach(key -> expected.add(key + "@1"));
        return expected;
    }

    private static String[] expectedKeys(String contested, List<String> spread, String deleted) {
        List<String> keys = new ArrayList<>(List.of(contested, deleted));
        keys.addAll(spread);
        return keys.toArray(String[]::new);
    }

    /** The partition Kafka's Java producer picks for a String key: murmur2 of its UTF-8 bytes. */
    private static int javaPartition(String key, int partitions) {
        return BuiltInPartitioner.partitionForKey(key.getBytes(StandardCharsets.UTF_8), partitions);
    }

    /** The partition librdkafka's default partitioner (consistent_random) picks for a key: CRC32 of its bytes. */
    private static int crc32Partition(String key, int partitions) {
        CRC32 crc = new CRC32();
        crc.update(key.getBytes(StandardCharsets.UTF_8));
        return (int) (crc.getValue() % partitions);
    }

    private static String keyWhereCrc32DisagreesWithMurmur2(String prefix) {
        for (int i = 0; ; i++) {
            String key = prefix + i;
            if (crc32Partition(key, LocalStack.PARTITIONS) != javaPartition(key, LocalStack.PARTITIONS)) {
                return key;
            }
        }
    }

    private static List<String> keysCoveringEveryPartition(String prefix, int perPartition) {
        Map<Integer, List<String>> byPartition = new HashMap<>();
        for (int i = 0; byPartition.values().stream().mapToInt(List::size).sum() < perPartition * LocalStack.PARTITIONS; i++) {
            String key = prefix + i;
            List<String> keys = byPartition.computeIfAbsent(javaPartition(key, LocalStack.PARTITIONS), p -> new ArrayList<>());
            if (keys.size() < perPartition) {
                keys.add(key);
            }
        }
        return byPartition.values().stream().flatMap(List::stream).toList();
    }

    /** Every record of {@code topic} whose key starts with {@code prefix}, read with kcat (JSON envelope, read_committed). */
    private static List<JsonNode> kcatRead(String topic, String prefix) throws Exception {
        String out = ExternalCommand.kcat(List.of("-b", stack.kafkaBootstrap(), "-C", "-t", topic, "-o", "beginning", "-e", "-J", "-q",
                "-X", "isolation.level=read_committed"), Duration.ofSeconds(60));
        List<JsonNode> records = new ArrayList<>();
        for (String line : out.split("\n")) {
            if (!line.isBlank()) {
                JsonNode record = ExternalCommand.JSON.readTree(line);
                if (record.hasNonNull("key") && record.get("key").asText().startsWith(prefix)) {
                    records.add(record);
                }
            }
        }
        return records;
    }

    /** kcat's JSON envelope lists headers as [name, value, name, value, ...]. */
    private static Map<String, String> kcatHeaders(JsonNode record) {
        Map<String, String> headers = new LinkedHashMap<>();
        JsonNode list = record.get("headers");
        assertThat(list).as("kcat printed headers for %s", record.get("key")).isNotNull();
        for (int i = 0; i + 1 < list.size(); i += 2) {
            headers.put(list.get(i).asText(), list.get(i + 1).isNull() ? null : list.get(i + 1).asText());
        }
        return headers;
    }

    /** Every record of {@code topic} whose key starts with {@code prefix}, read committed, from the beginning to the end. */
    private static List<ConsumerRecord<String, byte[]>> readAll(String topic, String prefix) {
        Map<String, Object> config = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap(),
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed", ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        List<ConsumerRecord<String, byte[]>> records = new ArrayList<>();
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(config, new StringDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic).stream().map(p -> new TopicPartition(topic, p.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (partitions.stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
                assertThat(System.nanoTime()).as("read %s to its end within 30 s", topic).isLessThan(deadline);
                for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    if (record.key() != null && record.key().startsWith(prefix)) {
                        records.add(record);
                    }
                }
            }
        }
        return records;
    }

    private static String header(ConsumerRecord<?, ?> record, String name) {
        org.apache.kafka.common.header.Header header = record.headers().lastHeader(name);
        return header == null ? null : FenceHeaders.decode(header.value());
    }

    /** The fenced sink's rows whose key starts with {@code prefix}, column by column. */
    private static Map<String, Map<String, Object>> rows(String prefix) throws Exception {
        Map<String, Map<String, Object>> rows = new HashMap<>();
        try (Connection connection = DriverManager.getConnection(stack.postgresUrl())) {
            boolean exists;
            try (ResultSet tables = connection.getMetaData().getTables(null, null, LocalStack.TABLE, null)) {
                exists = tables.next();
            }
            if (!exists) {
                return rows;
            }
            try (PreparedStatement statement = connection.prepareStatement("SELECT * FROM " + LocalStack.TABLE + " WHERE resource_key LIKE ?")) {
                statement.setString(1, prefix.replace("_", "\\_").replace("%", "\\%") + "%");
                try (ResultSet result = statement.executeQuery()) {
                    while (result.next()) {
                        Map<String, Object> row = new HashMap<>();
                        for (int c = 1; c <= result.getMetaData().getColumnCount(); c++) {
                            row.put(result.getMetaData().getColumnName(c), result.getObject(c));
                        }
                        rows.put(result.getString("resource_key"), row);
                    }
                }
            }
        }
        return rows;
    }

    private static List<String> fieldNames(JsonNode object) {
        List<String> names = new ArrayList<>();
        for (Iterator<String> it = object.fieldNames(); it.hasNext(); ) {
            names.add(it.next());
        }
        return names;
    }

    private static String shortId() {
        return UUID.randomUUID().toString().substring(0, 8);
    }
}
