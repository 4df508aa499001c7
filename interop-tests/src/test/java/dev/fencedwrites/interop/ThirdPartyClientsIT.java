package dev.fencedwrites.interop;

import static dev.fencedwrites.interop.Pipeline.header;
import static dev.fencedwrites.interop.Writes.COMPUTED_AT;
import static dev.fencedwrites.interop.Writes.acquire;
import static dev.fencedwrites.interop.Writes.crc32Partition;
import static dev.fencedwrites.interop.Writes.javaPartition;
import static dev.fencedwrites.interop.Writes.keysCoveringEveryPartition;
import static dev.fencedwrites.interop.Writes.keysWhereCrc32DisagreesWithMurmur2;
import static dev.fencedwrites.interop.Writes.release;
import static dev.fencedwrites.interop.Writes.shortId;
import static dev.fencedwrites.interop.Writes.summary;
import static dev.fencedwrites.interop.Writes.summaryJson;
import static dev.fencedwrites.interop.Writes.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.fencedwrites.avro.AvroDeserializer;
import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.etcd.LockKeys;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.localstack.testing.SharedBillingStack;
import dev.fencedwrites.producer.FencedProducer;
import dev.fencedwrites.producer.FencingLease;
import dev.fencedwrites.producer.FencingLeaseClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Timestamp;
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
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Third-party clients against the real pipeline: Confluent's Node.js schema-registry client
 * ({@code @confluentinc/schemaregistry}) with kafkajs, and Debian's kcat. They know nothing of this
 * project's code; what they must agree on is the wire contract: Avro in the Confluent wire format
 * under {@code <topic>-value}, the {@code fence.*} headers as UTF-8 decimal strings, and Kafka's
 * murmur2 partitioning of the key. The Node.js scripts (examples/node) only print what they did
 * and read, as JSON lines; every assertion is made here.
 *
 * <p>One local stack (Kafka, etcd, schema registry, PostgreSQL, enforcer, Connect + sink:
 * SharedBillingStack) for this class and PythonWriterIT; each test uses keys of its own.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
@ExtendWith(SharedBillingStack.class)
class ThirdPartyClientsIT {
    private static final Duration NODE_TIMEOUT = Duration.ofSeconds(120);
    private static final Duration PIPELINE = Duration.ofSeconds(90);
    private static final String SUBJECT = FenceTopics.INPUT + "-value";

    @TempDir
    static Path dir;
    static LocalStack stack;
    static Pipeline pipeline;
    static RestSchemaRegistryClient registry;

    /** The stack PythonWriterIT uses too; this class's keys are its own. */
    @BeforeAll
    static void useSharedStack(LocalStack shared) {
        ExternalCommand.checkInstalled();
        stack = shared;
        pipeline = new Pipeline(stack);
        registry = new RestSchemaRegistryClient(stack.schemaRegistryUrl(), Duration.ofSeconds(10));
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
        try (FencingLeaseClient leases = new FencingLeaseClient(List.of(stack.etcdEndpoints()),
                FencingLeaseClient.DEFAULT_LOCK_PREFIX);
                FencedProducer<BillingSummary> producer = FencedProducer.create(kafka, AvroSerializer.forValues(registry),
                        FenceTopics.INPUT,
                        "producer-lib-interop")) {
            for (int c = 0; c < customers.size(); c++) {
                String customer = customers.get(c);
                try (FencingLease lease = producer.acquire(leases, customer, Duration.ofSeconds(10), Duration.ofSeconds(30))) {
                    for (int w = 0; w < 2; w++) {
                        BillingSummary summary = BillingSummary.newBuilder().setCustomerId(customer)
                                .setBillingPeriod("2026-1" + w)
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
                "EXPECT", Integer.toString(published.size()), "TIMEOUT_MS", Long.toString(PIPELINE.toMillis())), "",
                NODE_TIMEOUT);

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
            assertThat(value.get("amountMinor").asText()).as("amountMinor, exact as a BigInt")
                    .isEqualTo(Long.toString(expected.getAmountMinor()));
            assertThat(value.get("currency").asText()).isEqualTo(expected.getCurrency());
            assertThat(value.get("lineItems").isInt()).isTrue();
            assertThat(value.get("lineItems").asInt()).isEqualTo(expected.getLineItems());
            assertThat(value.get("computedAt").asLong()).as("computedAt, epoch millis")
                    .isEqualTo(expected.getComputedAt().toEpochMilli());
            assertThat(value.get("computedBy").asText()).isEqualTo(expected.getComputedBy());
        }
        for (String customer : customers) {
            assertThat(decoded).filteredOn(line -> line.get("key").asText().equals(customer))
                    .extracting(line -> line.get("headers").get(FenceHeaders.SEQ).asText())
                    .as("a key's writes in the order they were sent").containsExactly("1", "2");
        }
    }

    /**
     * (b) A Node.js writer takes real etcd locks itself (lock.js: etcd's Mutex algorithm on the
     * layout of LockKeys, with the npm etcd3 client) and publishes with kafkajs and Confluent's
     * AvroSerializer each acquisition's FENCE marker and BillingSummary records with the fencing
     * headers it sets itself: the enforcer verifies every token against etcd, the fresh writes pass
     * the enforcer and the sink and become rows in PostgreSQL; a stale write (the older holder's
     * token after the newer holder's writes) lands on the rejected topic with STALE_TOKEN, and a
     * redelivery with DUPLICATE. A delete (null value) soft-deletes its row and keeps the fence.
     */
    @Test
    void kafkajsWritesWithConfluentsSerializerAreFencedAndReachPostgres() throws Exception {
        String prefix = "interop-b-" + shortId() + "-";
        String contested = prefix + "contested";
        String deleted = prefix + "deleted";

        List<ObjectNode> steps = new ArrayList<>();
        List<ObjectNode> records = new ArrayList<>();
        steps.add(acquire("npm-worker-A", contested));
        steps.add(release("npm-worker-A", contested));
        steps.add(acquire("npm-worker-B", contested));
        records.add(write("npm-worker-B", contested, 1, summaryJson(contested, 10_000, 4, "npm-worker-B")));
        records.add(write("npm-worker-B", contested, 2, summaryJson(contested, 12_550, 5, "npm-worker-B")));
        records.add(write("npm-worker-A", contested, 1, summaryJson(contested, 100, 1, "npm-worker-A")));
        records.add(write("npm-worker-B", contested, 2, summaryJson(contested, 12_550, 5, "npm-worker-B")));
        steps.addAll(records);
        // Two keys for each partition, so a partitioner that disagreed with Java's would show.
        List<String> spread = keysCoveringEveryPartition(prefix + "spread-", 2, LocalStack.PARTITIONS);
        for (String key : spread) {
            steps.add(acquire("npm-worker-B", key));
            records.add(write("npm-worker-B", key, 1, summaryJson(key, key.hashCode() & 0xffff, 2, "npm-worker-B")));
            steps.add(records.get(records.size() - 1));
        }
        steps.add(acquire("npm-worker-B", deleted));
        records.add(write("npm-worker-B", deleted, 1, summaryJson(deleted, 777, 3, "npm-worker-B")));
        records.add(write("npm-worker-B", deleted, 2, null));
        steps.addAll(records.subList(records.size() - 2, records.size()));

        List<JsonNode> out = produce(steps);

        assertThat(out.get(0).get("registered").asInt())
                .as("the Confluent client registered the contract's schema under the id this project's client gets")
                .isEqualTo(registry.register(SUBJECT, BillingSummary.getClassSchema()));
        Map<String, JsonNode> acquired = acquisitions(out);
        assertThat(acquired).hasSize(2 + spread.size() + 1);
        long older = acquired.get("npm-worker-A@" + contested).get("token").asLong();
        long newer = acquired.get("npm-worker-B@" + contested).get("token").asLong();
        assertThat(newer).isGreaterThan(older);
        for (JsonNode lock : acquired.values()) {
            String key = lock.get("key").asText();
            assertThat(lock.get("lockKey").asText()).as("the Node.js writer's lock key is LockKeys' layout")
                    .isEqualTo(LockKeys.key(LockKeys.DEFAULT_PREFIX, key.getBytes(StandardCharsets.UTF_8),
                            lock.get("lease").asLong()));
        }
        List<JsonNode> markers = out.stream().filter(line -> line.has("sent") && line.get("op").asText().equals("FENCE"))
                .toList();
        assertThat(markers).as("one FENCE marker per acquisition").hasSize(acquired.size());
        List<JsonNode> writes = out.stream().filter(line -> line.has("sent") && line.get("op").asText().equals("WRITE")).toList();
        assertThat(writes).hasSize(records.size());
        AvroDeserializer<BillingSummary> deserializer = new AvroDeserializer<>(registry, BillingSummary.getClassSchema());
        List<byte[]> sentValues = new ArrayList<>();
        for (JsonNode sent : out.stream().filter(line -> line.has("sent")).toList()) {
            assertThat(sent.get("partition").asInt())
                    .as("kafkajs' partition for %s is the Java client's (murmur2)", sent.get("key").asText())
                    .isEqualTo(javaPartition(sent.get("key").asText(), LocalStack.PARTITIONS));
        }
        for (int i = 0; i < records.size(); i++) {
            JsonNode sent = writes.get(i);
            ObjectNode record = records.get(i);
            String key = record.get("key").asText();
            assertThat(sent.get("key").asText()).isEqualTo(key);
            assertThat(sent.get("token").asLong())
                    .isEqualTo(acquired.get(record.get("write").asText() + "@" + key).get("token").asLong());
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
        assertThat(writes.stream().map(line -> line.get("partition").asInt()).distinct()).hasSize(LocalStack.PARTITIONS);

        // Waits for as many records as expected, then checks them: a surplus fails at once.
        List<ConsumerRecord<String, byte[]>> rejected = await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1))
                .until(() -> pipeline.readAll(FenceTopics.REJECTED, prefix), found -> found.size() >= 2);
        assertThat(rejected).extracting(r -> header(r, FenceHeaders.REJECTED_REASON)).containsExactlyInAnyOrder("STALE_TOKEN",
                "DUPLICATE");
        ConsumerRecord<String, byte[]> stale = rejected.stream()
                .filter(r -> header(r, FenceHeaders.REJECTED_REASON).equals("STALE_TOKEN"))
                .findFirst().orElseThrow();
        assertThat(stale.key()).isEqualTo(contested);
        assertThat(header(stale, FenceHeaders.TOKEN)).isEqualTo(Long.toString(older));
        assertThat(header(stale, FenceHeaders.WRITER)).isEqualTo("npm-worker-A");
        assertThat(header(stale, FenceHeaders.LEASE)).isEqualTo(acquired.get("npm-worker-A@" + contested).get("lease").asText());
        assertThat(header(stale, FenceHeaders.REJECTED_STAGE)).isEqualTo(FenceHeaders.STAGE_ENFORCER);
        assertThat(header(stale, FenceHeaders.REJECTED_HIGHEST)).isEqualTo(newer + ".2");
        assertThat(stale.value()).as("the stale record's value, byte for byte").isEqualTo(sentValues.get(2));
        ConsumerRecord<String, byte[]> duplicate = rejected.stream().filter(r -> r != stale).findFirst().orElseThrow();
        assertThat(header(duplicate, FenceHeaders.REJECTED_REASON)).isEqualTo("DUPLICATE");
        assertThat(header(duplicate, FenceHeaders.REJECTED_HIGHEST)).isEqualTo(newer + ".2");
        List<String> fresh = expectedAccepted(contested, spread, deleted);
        List<ConsumerRecord<String, byte[]>> accepted = await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1))
                .until(() -> pipeline.readAll(FenceTopics.ACCEPTED, prefix), found -> found.size() >= fresh.size());
        assertThat(accepted).extracting(r -> r.key() + "@" + header(r, FenceHeaders.SEQ)).as("every fresh write, nothing else")
                .containsExactlyInAnyOrderElementsOf(fresh);
        for (ConsumerRecord<String, byte[]> record : accepted) {
            JsonNode lock = acquired.get("npm-worker-B@" + record.key());
            assertThat(header(record, FenceHeaders.TOKEN)).isEqualTo(lock.get("token").asText());
            assertThat(header(record, FenceHeaders.LEASE)).as("fence.lease, decimal").isEqualTo(lock.get("lease").asText());
            assertThat(header(record, FenceHeaders.OP)).isEqualTo("WRITE");
        }

        await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
            Map<String, Map<String, Object>> rows = pipeline.rows(prefix);
            assertThat(rows).containsOnlyKeys(expectedKeys(contested, spread, deleted));
            Map<String, Object> row = rows.get(contested);
            assertThat(row).containsEntry("computed_by", "npm-worker-B").containsEntry("amount_minor", 12_550L)
                    .containsEntry("line_items", 5)
                    .containsEntry("customer_id", contested).containsEntry("billing_period", "2026-11")
                    .containsEntry("currency", "EUR")
                    .containsEntry("fence_token", newer).containsEntry("fence_seq", 2L).containsEntry("deleted", false);
            assertThat(((Timestamp) row.get("computed_at")).toInstant()).isEqualTo(Instant.ofEpochMilli(COMPUTED_AT));
            for (String key : spread) {
                assertThat(rows.get(key)).containsEntry("amount_minor", (long) (key.hashCode() & 0xffff))
                        .containsEntry("fence_token", acquired.get("npm-worker-B@" + key).get("token").asLong())
                        .containsEntry("fence_seq", 1L).containsEntry("deleted", false);
            }
            assertThat(rows.get(deleted)).as("a delete keeps the fence and clears the data").containsEntry("deleted", true)
                    .containsEntry("fence_token", acquired.get("npm-worker-B@" + deleted).get("token").asLong())
                    .containsEntry("fence_seq", 2L)
                    .containsEntry("amount_minor", null);
        });
    }

    /**
     * A takeover between two Node.js writers on a resource whose name needs encoding: B asks for
     * the lock while A holds it, so B's key queues behind A's and B waits for A's key to go; A
     * releases, B holds with a higher token that the enforcer verifies, and A's late write is
     * rejected STALE_TOKEN. Both lock keys are the ones Java's LockKeys names.
     */
    @Test
    void nodeWriterTakesOverAfterWaitingForThePreviousHoldersKeyToGo() throws Exception {
        String prefix = "interop-takeover-" + shortId() + "-";
        String key = prefix + "a b/ü~*";
        List<ObjectNode> steps = List.of(acquire("npm-A", key), write("npm-A", key, 1, summaryJson(key, 1_000, 1, "npm-A")),
                ExternalCommand.JSON.createObjectNode().put("acquire", "npm-B").put("key", key).put("background", true),
                write("npm-A", key, 2, summaryJson(key, 2_000, 1, "npm-A")), release("npm-A", key),
                write("npm-B", key, 1, summaryJson(key, 3_000, 1, "npm-B")),
                write("npm-A", key, 3, summaryJson(key, 9_999, 1, "npm-A")));

        List<JsonNode> out = produce(steps);

        Map<String, JsonNode> acquired = acquisitions(out);
        JsonNode a = acquired.get("npm-A@" + key);
        JsonNode b = acquired.get("npm-B@" + key);
        String aKey = LockKeys.key(LockKeys.DEFAULT_PREFIX, key.getBytes(StandardCharsets.UTF_8), a.get("lease").asLong());
        String bKey = LockKeys.key(LockKeys.DEFAULT_PREFIX, key.getBytes(StandardCharsets.UTF_8), b.get("lease").asLong());
        assertThat(a.get("lockKey").asText()).isEqualTo(aKey);
        assertThat(b.get("lockKey").asText()).isEqualTo(bKey);
        JsonNode queued = out.stream().filter(line -> line.has("queued") && line.get("queued").asText().equals("npm-B"))
                .findFirst().orElseThrow();
        assertThat(queued.get("holder").asText()).as("when B's key went in, A's key held the lock").isEqualTo(aKey);
        assertThat(b.get("waitedOn")).extracting(JsonNode::asText).as("B waited for A's key to go").containsExactly(aKey);
        assertThat(out.indexOf(b)).as("B held the lock only after A released it")
                .isGreaterThan(out.indexOf(out.stream().filter(line -> line.has("released")).findFirst().orElseThrow()));
        long aToken = a.get("token").asLong();
        long bToken = b.get("token").asLong();
        assertThat(bToken).isGreaterThan(aToken);

        List<ConsumerRecord<String, byte[]>> rejected = await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1))
                .until(() -> pipeline.readAll(FenceTopics.REJECTED, prefix), found -> !found.isEmpty());
        assertThat(rejected).hasSize(1);
        assertThat(header(rejected.get(0), FenceHeaders.REJECTED_REASON)).isEqualTo("STALE_TOKEN");
        assertThat(header(rejected.get(0), FenceHeaders.TOKEN) + "." + header(rejected.get(0), FenceHeaders.SEQ))
                .isEqualTo(aToken + ".3");
        assertThat(header(rejected.get(0), FenceHeaders.REJECTED_HIGHEST)).isEqualTo(bToken + ".1");
        List<ConsumerRecord<String, byte[]>> accepted = await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1))
                .until(() -> pipeline.readAll(FenceTopics.ACCEPTED, prefix), found -> found.size() >= 3);
        assertThat(accepted).extracting(
                r -> header(r, FenceHeaders.WRITER) + "@" + header(r, FenceHeaders.TOKEN) + "." + header(r, FenceHeaders.SEQ))
                .as("A's writes while it held the lock, then B's, in order").containsExactly("npm-A@" + aToken + ".1",
                        "npm-A@" + aToken + ".2",
                        "npm-B@" + bToken + ".1");
        await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1))
                .untilAsserted(() -> assertThat(pipeline.rows(prefix).get(key))
                        .containsEntry("computed_by", "npm-B").containsEntry("amount_minor", 3_000L)
                        .containsEntry("fence_token", bToken));
    }

    /**
     * lock.js encodes resource names byte for byte as Java's LockKeys does (URLEncoder's rules):
     * names with a space, '/', '~', '*', '+', '%', control characters and text beyond ASCII, 2 000
     * random names, and raw bytes that are not UTF-8. A difference would put a Node.js writer's
     * lock on another key than the one the enforcer reads, and every token of it would be refused.
     */
    @Test
    void nodeEncodesResourceNamesExactlyLikeLockKeys() {
        LockNameCorpus corpus = LockNameCorpus.generate(20261214,
                List.of("", "a", "a b", "a/x", "a/x/", "~user", "*", "a+b", "100%", "%2F", ".-_*", "?&=#:;@",
                        "tab\tnew\nline\u0000", "Zoë-€-𝄞", "漢字 🙂", "\u007f\u0080\u00ff", "'\"<>\\"),
                List.of(new byte[]{(byte) 0xff, 0, (byte) 0x80}, new byte[]{(byte) 0xc3}, new byte[]{' ', '/', 'a'}));
        List<String> names = corpus.names();
        List<byte[]> bytes = corpus.bytes();
        ArrayNode base64 = (ArrayNode) corpus.input().get("bytes");

        List<JsonNode> out = ExternalCommand.node("encode.js", Map.of(), corpus.input().toString(), NODE_TIMEOUT);

        assertThat(out).hasSize(1);
        assertThat(out.get(0).get("strings")).hasSize(names.size());
        assertThat(out.get(0).get("bytes")).hasSize(bytes.size());
        Map<String, String> mismatches = new LinkedHashMap<>();
        for (int i = 0; i < names.size(); i++) {
            String java = LockKeys.encode(names.get(i).getBytes(StandardCharsets.UTF_8));
            if (!out.get(0).get("strings").get(i).asText().equals(java)) {
                mismatches.put(names.get(i), out.get(0).get("strings").get(i).asText() + " (Java: " + java + ")");
            }
        }
        for (int i = 0; i < bytes.size(); i++) {
            String java = LockKeys.encode(bytes.get(i));
            if (!out.get(0).get("bytes").get(i).asText().equals(java)) {
                mismatches.put(base64.get(i).asText(), out.get(0).get("bytes").get(i).asText() + " (Java: " + java + ")");
            }
        }
        assertThat(mismatches).as("names lock.js encodes otherwise than LockKeys").isEmpty();
        assertThat(out.get(0).get("strings").get(names.indexOf("a b")).asText()).isEqualTo("a+b");
        assertThat(out.get(0).get("strings").get(names.indexOf("a/x")).asText()).isEqualTo("a%2Fx");
        assertThat(out.get(0).get("strings").get(names.indexOf("~user")).asText()).isEqualTo("%7Euser");
        assertThat(out.get(0).get("strings").get(names.indexOf("Zoë-€-𝄞")).asText())
                .isEqualTo("Zo%C3%AB-%E2%82%AC-%F0%9D%84%9E");
        assertThat(out.get(0).get("bytes").get(0).asText()).isEqualTo("%FF%00%80");
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
        for (int partitions : new int[]{3, 10}) {
            List<JsonNode> out = ExternalCommand.node("partition.js", Map.of("PARTITIONS", Integer.toString(partitions)),
                    input.toString(),
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
            assertThat(mismatches).as("keys kafkajs puts on another partition than Java's, of %d partitions", partitions)
                    .isEmpty();
        }
    }

    /**
     * Kcat with its default partitioner (no {@code -p}, no partitioner setting: librdkafka's
     * {@code consistent_random}, CRC32) on a key CRC32 puts on another partition than murmur2. Under real
     * etcd locks taken with etcdctl, A holds the key's lock and lets it go, B takes it and writes five
     * times with increasing {@code fence.seq}, then A writes late with its old token. The enforcer
     * re-routes every record to the key's murmur2 partition: B's five are accepted in the order sent,
     * A's is rejected STALE_TOKEN naming the input partition and offset kcat wrote it to, and the row
     * in PostgreSQL holds B's last write.
     */
    @Test
    void kcatWithItsDefaultPartitionerIsAcceptedInOrderAndItsStaleWriteIsRejected() throws Exception {
        String prefix = "interop-kcat-default-" + shortId() + "-";
        String key = keysWhereCrc32DisagreesWithMurmur2(prefix, 1, LocalStack.PARTITIONS).get(0);
        AvroSerializer<BillingSummary> serializer = AvroSerializer.forValues(registry);
        Path files = Files.createDirectories(dir.resolve("kcat-default"));
        List<String> writesOfB = new ArrayList<>();
        for (int seq = 1; seq <= 5; seq++) {
            writesOfB.add(kcatWithDefaultPartitioner(files, key, seq, "kcat-B",
                    serializer.serialize(FenceTopics.INPUT, summary(key, 1_000L * seq, 1, "kcat-B"))));
        }
        String lateWriteOfA = kcatWithDefaultPartitioner(files, key, 1, "kcat-A",
                serializer.serialize(FenceTopics.INPUT, summary(key, 1, 1, "kcat-A")));

        EtcdctlLock a = etcdctlLock(key, List.of());
        EtcdctlLock b = etcdctlLock(key, writesOfB);
        ExternalCommand.run(List.of("bash", "-c", "token=" + a.token() + " lease=" + a.lease() + "; " + lateWriteOfA),
                Path.of("."), Map.of(), new byte[0], Duration.ofSeconds(60));

        assertThat(b.token()).isGreaterThan(a.token());
        List<JsonNode> sent = await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(2))
                .until(() -> kcatRead(FenceTopics.INPUT, prefix), found -> found.size() >= 6);
        assertThat(sent).extracting(r -> r.get("partition").asInt()).as("kcat's default partitioner is CRC32, not murmur2")
                .containsOnly(crc32Partition(key, LocalStack.PARTITIONS));
        JsonNode late = sent.stream().filter(r -> "kcat-A".equals(kcatHeaders(r).get(FenceHeaders.WRITER))).findFirst()
                .orElseThrow();
        List<JsonNode> accepted = await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(2))
                .until(() -> kcatRead(FenceTopics.ACCEPTED, prefix), found -> found.size() >= 5);
        assertThat(accepted).extracting(r -> kcatHeaders(r).get(FenceHeaders.TOKEN) + "." + kcatHeaders(r).get(FenceHeaders.SEQ)
                + " by " + kcatHeaders(r).get(FenceHeaders.WRITER)).as("B's writes, re-routed, in the order kcat sent them")
                .containsExactly(b.token() + ".1 by kcat-B", b.token() + ".2 by kcat-B", b.token() + ".3 by kcat-B",
                        b.token() + ".4 by kcat-B", b.token() + ".5 by kcat-B");
        List<JsonNode> rejected = await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(2))
                .until(() -> kcatRead(FenceTopics.REJECTED, prefix), found -> found.size() >= 1);
        assertThat(rejected).hasSize(1);
        assertThat(kcatHeaders(rejected.get(0))).containsEntry(FenceHeaders.REJECTED_REASON, "STALE_TOKEN")
                .containsEntry(FenceHeaders.TOKEN, Long.toString(a.token())).containsEntry(FenceHeaders.WRITER, "kcat-A")
                .containsEntry(FenceHeaders.REJECTED_HIGHEST, b.token() + ".5")
                .containsEntry(FenceHeaders.SOURCE_TOPIC, FenceTopics.INPUT)
                .containsEntry(FenceHeaders.SOURCE_PARTITION, late.get("partition").asText())
                .containsEntry(FenceHeaders.SOURCE_OFFSET, late.get("offset").asText())
                .doesNotContainKey("fence.reroute.origin");
        await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1))
                .untilAsserted(() -> assertThat(pipeline.rows(prefix).get(key))
                        .containsEntry("computed_by", "kcat-B").containsEntry("amount_minor", 5_000L)
                        .containsEntry("fence_token", b.token()).containsEntry("fence_seq", 5L));
    }

    /**
     * A shell command that sends one record to the input with kcat's default partitioner, the token and lease taken from
     * {@code $token} and {@code $lease}.
     */
    private static String kcatWithDefaultPartitioner(Path files, String key, long seq, String writer, byte[] value)
            throws Exception {
        Path file = Files.write(files.resolve(writer + "-" + seq + ".avro"), value);
        return List.of("kcat", "-b", stack.kafkaBootstrap(), "-P", "-t", FenceTopics.INPUT, "-k", key, "-H",
                FenceHeaders.SEQ + "=" + seq, "-H", FenceHeaders.WRITER + "=" + writer, file.toString()).stream()
                .map(ThirdPartyClientsIT::shellQuoted).collect(Collectors.joining(" "))
                + " -H \"" + FenceHeaders.TOKEN + "=$token\" -H \"" + FenceHeaders.LEASE + "=$lease\"";
    }

    /**
     * Debian's kcat sends records with fencing headers and Avro values (written by this project's
     * serializer to files, one file per record) and reads the accepted and rejected topics back:
     * keys and headers as sent, the stale write rejected STALE_TOKEN, and a key sent without
     * {@code -X partitioner=murmur2_random} (kcat's own partitioner, CRC32) onto another partition
     * than Kafka's re-routed by the enforcer to its key's partition and accepted (it was
     * rejected WRONG_PARTITION before, now only under partition.mismatch.policy=reject). The fresh
     * writes reach PostgreSQL. The tokens are real:
     * each writer runs its kcat commands under {@code etcdctl lock <prefix><encoded key>}, which
     * takes the lock with the Go client's Mutex and hands the command its key and token
     * ({@code ETCD_LOCK_KEY}, {@code ETCD_LOCK_REV}); the enforcer verifies them.
     */
    @Test
    void kcatSendsAndReadsFencedRecordsWithHeaders() throws Exception {
        String prefix = "interop-kcat-" + shortId() + "-";
        String contested = prefix + "contested";
        String other = prefix + "other";
        String misrouted = keysWhereCrc32DisagreesWithMurmur2(prefix + "misrouted-", 1, LocalStack.PARTITIONS).get(0);
        AvroSerializer<BillingSummary> serializer = AvroSerializer.forValues(registry);

        record Sent(String key, long seq, String writer, boolean murmur2, byte[] value) {
        }
        List<Sent> sends = List.of(
                new Sent(contested, 1, "kcat-B", true,
                        serializer.serialize(FenceTopics.INPUT, summary(contested, 9_900, 1, "kcat-B"))),
                new Sent(contested, 2, "kcat-B", true,
                        serializer.serialize(FenceTopics.INPUT, summary(contested, 12_550, 1, "kcat-B"))),
                new Sent(contested, 1, "kcat-A", true,
                        serializer.serialize(FenceTopics.INPUT, summary(contested, 100, 1, "kcat-A"))),
                new Sent(other, 1, "kcat-B", true, serializer.serialize(FenceTopics.INPUT, summary(other, 5_000, 1, "kcat-B"))),
                new Sent(misrouted, 1, "kcat-C", false,
                        serializer.serialize(FenceTopics.INPUT, summary(misrouted, 1, 1, "kcat-C"))));
        Path files = Files.createDirectories(dir.resolve("kcat"));
        List<String> commands = new ArrayList<>();
        for (int i = 0; i < sends.size(); i++) {
            Sent send = sends.get(i);
            Path file = Files.write(files.resolve(i + ".avro"), send.value());
            List<String> args = new ArrayList<>(
                    List.of("kcat", "-b", stack.kafkaBootstrap(), "-P", "-t", FenceTopics.INPUT, "-k", send.key(),
                            "-H", FenceHeaders.SEQ + "=" + send.seq(), "-H", FenceHeaders.WRITER + "=" + send.writer()));
            if (send.murmur2()) {
                args.addAll(List.of("-X", "partitioner=murmur2_random"));
            }
            args.add(file.toString());
            // one process per record, so each is acknowledged before the next; token and lease come from the lock
            commands.add(args.stream().map(ThirdPartyClientsIT::shellQuoted).collect(Collectors.joining(" "))
                    + " -H \"" + FenceHeaders.TOKEN + "=$token\" -H \"" + FenceHeaders.LEASE + "=$lease\"");
        }
        // A holds contested's lock and lets it go without writing; B takes it and writes twice; A's
        // late write with its old token is stale. "other" and the misrouted key are locked by their writers.
        EtcdctlLock a = etcdctlLock(contested, List.of());
        EtcdctlLock b = etcdctlLock(contested, commands.subList(0, 2));
        ExternalCommand.run(List.of("bash", "-c", "token=" + a.token() + " lease=" + a.lease() + "; " + commands.get(2)),
                Path.of("."), Map.of(),
                new byte[0], Duration.ofSeconds(60));
        EtcdctlLock otherLock = etcdctlLock(other, commands.subList(3, 4));
        EtcdctlLock misroutedLock = etcdctlLock(misrouted, commands.subList(4, 5));
        assertThat(b.token()).isGreaterThan(a.token());
        assertThat(b.key()).as("etcdctl's lock key is LockKeys' layout")
                .isEqualTo(LockKeys.key(LockKeys.DEFAULT_PREFIX, contested.getBytes(StandardCharsets.UTF_8), b.lease()));

        // Waits for as many records as expected, then checks them: a surplus fails at once.
        List<JsonNode> rejected = await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(2))
                .until(() -> kcatRead(FenceTopics.REJECTED, prefix), found -> found.size() >= 1);
        assertThat(rejected).extracting(r -> r.get("key").asText()).containsExactlyInAnyOrder(contested);
        JsonNode stale = rejected.stream().filter(r -> r.get("key").asText().equals(contested)).findFirst().orElseThrow();
        Map<String, String> headers = kcatHeaders(stale);
        assertThat(headers).containsEntry(FenceHeaders.TOKEN, Long.toString(a.token())).containsEntry(FenceHeaders.SEQ, "1")
                .containsEntry(FenceHeaders.WRITER, "kcat-A")
                .containsEntry(FenceHeaders.LEASE, Long.toString(a.lease()))
                .containsEntry(FenceHeaders.REJECTED_REASON, "STALE_TOKEN")
                .containsEntry(FenceHeaders.REJECTED_STAGE, FenceHeaders.STAGE_ENFORCER)
                .containsEntry(FenceHeaders.REJECTED_HIGHEST, b.token() + ".2")
                .containsEntry(FenceHeaders.SOURCE_TOPIC, FenceTopics.INPUT)
                .containsEntry(FenceHeaders.SOURCE_PARTITION, Integer.toString(javaPartition(contested, LocalStack.PARTITIONS)));
        List<JsonNode> accepted = await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(2))
                .until(() -> kcatRead(FenceTopics.ACCEPTED, prefix), found -> found.size() >= 4);
        assertThat(accepted)
                .extracting(r -> r.get("key").asText() + "@" + kcatHeaders(r).get(FenceHeaders.TOKEN) + "."
                        + kcatHeaders(r).get(FenceHeaders.SEQ)
                        + " by " + kcatHeaders(r).get(FenceHeaders.WRITER))
                .containsExactlyInAnyOrder(contested + "@" + b.token() + ".1 by kcat-B",
                        contested + "@" + b.token() + ".2 by kcat-B",
                        other + "@" + otherLock.token() + ".1 by kcat-B",
                        misrouted + "@" + misroutedLock.token() + ".1 by kcat-C");
        assertThat(accepted).extracting(r -> kcatHeaders(r).get(FenceHeaders.LEASE))
                .as("fence.lease, decimal, from etcdctl's lock key")
                .containsExactlyInAnyOrder(Long.toString(b.lease()), Long.toString(b.lease()), Long.toString(otherLock.lease()),
                        Long.toString(misroutedLock.lease()));
        for (JsonNode record : accepted) {
            assertThat(record.get("partition").asInt()).as("kcat with murmur2_random picks Kafka's partition")
                    .isEqualTo(javaPartition(record.get("key").asText(), LocalStack.PARTITIONS));
        }
        assertThat(accepted).filteredOn(r -> r.get("key").asText().equals(contested))
                .extracting(r -> kcatHeaders(r).get(FenceHeaders.SEQ))
                .containsExactly("1", "2");
        assertThat(pipeline.readAll(FenceTopics.ACCEPTED, prefix)).extracting(ConsumerRecord::value)
                .as("the values kcat sent, byte for byte")
                .containsExactlyInAnyOrder(sends.get(0).value(), sends.get(1).value(), sends.get(3).value(),
                        sends.get(4).value());

        await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
            Map<String, Map<String, Object>> rows = pipeline.rows(prefix);
            assertThat(rows).containsOnlyKeys(contested, other, misrouted);
            assertThat(rows.get(contested)).containsEntry("computed_by", "kcat-B").containsEntry("amount_minor", 12_550L)
                    .containsEntry("fence_token", b.token()).containsEntry("fence_seq", 2L);
            assertThat(rows.get(other)).containsEntry("amount_minor", 5_000L).containsEntry("fence_token", otherLock.token());
        });
    }

    // ---- helpers ----

    /** Runs produce.js (a Node.js writer that takes its own etcd locks) on {@code steps}; returns what it printed. */
    private static List<JsonNode> produce(List<ObjectNode> steps) throws Exception {
        Path schemaFile = dir.resolve("BillingSummary.avsc");
        Files.writeString(schemaFile, BillingSummary.getClassSchema().toString());
        ArrayNode input = ExternalCommand.JSON.createArrayNode().addAll(steps);
        return ExternalCommand.node("produce.js", Map.of("KAFKA_BOOTSTRAP", stack.kafkaBootstrap(), "SCHEMA_REGISTRY_URL",
                stack.schemaRegistryUrl(), "TOPIC", FenceTopics.INPUT, "SCHEMA_FILE", schemaFile.toString(), "ETCD_ENDPOINTS",
                stack.etcdEndpoints(), "LOCK_PREFIX", LockKeys.DEFAULT_PREFIX), input.toString(), NODE_TIMEOUT);
    }

    /** produce.js' "acquired" lines by {@code holder@key}. */
    private static Map<String, JsonNode> acquisitions(List<JsonNode> out) {
        Map<String, JsonNode> acquired = new LinkedHashMap<>();
        for (JsonNode line : out) {
            if (line.has("acquired")) {
                assertThat(acquired.put(line.get("acquired").asText() + "@" + line.get("key").asText(), line))
                        .as("one acquisition per holder and key")
                        .isNull();
            }
        }
        return acquired;
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

    /** A lock etcdctl took: its key, the lease in it (decimal) and the token (the header revision etcdctl found it held at). */
    private record EtcdctlLock(String key, long lease, long token) {
    }

    /**
     * Runs {@code commands} (shell, with {@code $token} and {@code $lease} set) one after the other
     * under {@code etcdctl lock} on {@code key}'s lock, which is released when they are done.
     */
    private static EtcdctlLock etcdctlLock(String key, List<String> commands) {
        String script = "set -e; echo \"lock $ETCD_LOCK_KEY $ETCD_LOCK_REV\"; token=$ETCD_LOCK_REV; "
                + "lease=$((16#${ETCD_LOCK_KEY##*/}))"
                + commands.stream().map(command -> "; " + command).collect(Collectors.joining());
        String out = ExternalCommand.etcdctlLock(stack.etcdEndpoints(), LockKeys.name(LockKeys.DEFAULT_PREFIX, key), script,
                Duration.ofSeconds(120));
        String line = out.lines().filter(l -> l.startsWith("lock ")).findFirst()
                .orElseThrow(() -> new AssertionError("etcdctl lock printed " + out));
        String[] parts = line.split(" ");
        String lockKey = parts[1];
        return new EtcdctlLock(lockKey, Long.parseUnsignedLong(lockKey.substring(lockKey.lastIndexOf('/') + 1), 16),
                Long.parseLong(parts[2]));
    }

    /** {@code word} in single quotes for bash. */
    private static String shellQuoted(String word) {
        return "'" + word.replace("'", "'\\''") + "'";
    }

    /** Every record of {@code topic} whose key starts with {@code prefix}, read with kcat (JSON envelope, read_committed). */
    private static List<JsonNode> kcatRead(String topic, String prefix) throws Exception {
        String out = ExternalCommand
                .kcat(List.of("-b", stack.kafkaBootstrap(), "-C", "-t", topic, "-o", "beginning", "-e", "-J", "-q",
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

    private static List<String> fieldNames(JsonNode object) {
        List<String> names = new ArrayList<>();
        for (Iterator<String> it = object.fieldNames(); it.hasNext();) {
            names.add(it.next());
        }
        return names;
    }

}
