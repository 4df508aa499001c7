package dev.fencedwrites.interop;

import static dev.fencedwrites.interop.Pipeline.header;
import static dev.fencedwrites.interop.Writes.acquire;
import static dev.fencedwrites.interop.Writes.crc32Partition;
import static dev.fencedwrites.interop.Writes.javaPartition;
import static dev.fencedwrites.interop.Writes.keysWhereCrc32DisagreesWithMurmur2;
import static dev.fencedwrites.interop.Writes.release;
import static dev.fencedwrites.interop.Writes.shortId;
import static dev.fencedwrites.interop.Writes.summary;
import static dev.fencedwrites.interop.Writes.summaryJson;
import static dev.fencedwrites.interop.Writes.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
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
import dev.fencedwrites.producer.LeaseAcquisitionException;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.GetOption;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Python writer against the real pipeline: {@code examples/python/fenced_writer.py}
 * on Debian's packages only (python3-confluent-kafka 1.7 with librdkafka's DEFAULT partitioner,
 * python3-etcd3 for the lock, Confluent's Avro serializer on python3-avro). It shares no code with
 * this project; what it must agree on is the writer protocol (docs/user/wire-protocol.md): the lock layout and
 * token, the marker, the headers, Avro in the Confluent wire format.
 * librdkafka partitions by CRC32, not murmur2, so every key here is one that lands on another
 * partition than the Java client's: the enforcer must re-route it to the partition that owns the
 * key's fence. Real services, because what is proven is that etcd verifies the Python lock's
 * tokens, that the enforcer re-routes and decides them, and that the rows reach PostgreSQL.
 *
 * <p>One local stack (SharedBillingStack) for this class and ThirdPartyClientsIT; each test uses keys of its own.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
@ExtendWith(SharedBillingStack.class)
class PythonWriterIT {
    private static final Duration STEP = Duration.ofSeconds(90);
    private static final Duration PIPELINE = Duration.ofSeconds(90);
    private static final String SUBJECT = FenceTopics.INPUT + "-value";

    @TempDir
    static Path dir;
    static LocalStack stack;
    static Pipeline pipeline;
    static RestSchemaRegistryClient registry;
    static Path schemaFile;

    /** The stack ThirdPartyClientsIT uses too; this class's keys are its own. */
    @BeforeAll
    static void useSharedStack(LocalStack shared) throws Exception {
        PythonWriter.checkInstalled();
        schemaFile = Files.writeString(dir.resolve("BillingSummary.avsc"), BillingSummary.getClassSchema().toString());
        stack = shared;
        pipeline = new Pipeline(stack);
        registry = new RestSchemaRegistryClient(stack.schemaRegistryUrl(), Duration.ofSeconds(10));
    }

    /**
     * Python acquires four keys (the lock layout of LockKeys), publishes each marker and two Avro
     * writes with librdkafka's default partitioner: every record lands on CRC32's partition, not
     * murmur2's; the enforcer verifies each token, re-routes and accepts every write in order; the
     * values arrive byte for byte and become rows in PostgreSQL; nothing is rejected.
     */
    @Test
    void pythonWritesOnLibrdkafkasDefaultPartitionsAreAcceptedInOrderAndBecomeRows() throws Exception {
        String prefix = "py-a-" + shortId() + "-";
        List<String> keys = keysWhereCrc32DisagreesWithMurmur2(prefix, 4, LocalStack.PARTITIONS);
        Map<String, JsonNode> acquired = new HashMap<>();
        List<JsonNode> sent = new ArrayList<>();
        try (PythonWriter python = PythonWriter.start(writerEnv("py-writer-a"))) {
            JsonNode registered = python.until(line -> line.has("registered"), STEP);
            assertThat(registered.get("registered").asInt()).as("the contract's schema text gets the Java client's id")
                    .isEqualTo(registry.register(SUBJECT, BillingSummary.getClassSchema()));
            for (String key : keys) {
                python.send(acquire("py-A", key));
                acquired.put(key, python.until(line -> line.has("acquired"), STEP));
                sent.add(python.until(isSent("FENCE", key), STEP));
                for (int seq = 1; seq <= 2; seq++) {
                    python.send(write("py-A", key, seq, summaryJson(key, 1_000L * seq + key.length(), seq, "py-A")));
                    sent.add(python.until(isSent("WRITE", key), STEP));
                }
            }
        }

        for (String key : keys) {
            JsonNode lock = acquired.get(key);
            assertThat(lock.get("lockKey").asText()).as("the Python writer's lock key is LockKeys' layout")
                    .isEqualTo(LockKeys.key(LockKeys.DEFAULT_PREFIX, key.getBytes(StandardCharsets.UTF_8),
                            lock.get("lease").asLong()));
            assertThat(lock.get("waitedOn")).as("uncontended: no wait").isEmpty();
        }
        for (JsonNode record : sent) {
            String key = record.get("key").asText();
            assertThat(record.get("partition").asInt()).as("librdkafka's default partitioner put %s on CRC32's partition", key)
                    .isEqualTo(crc32Partition(key, LocalStack.PARTITIONS))
                    .isNotEqualTo(javaPartition(key, LocalStack.PARTITIONS));
        }
        AvroDeserializer<BillingSummary> deserializer = new AvroDeserializer<>(registry, BillingSummary.getClassSchema());
        for (JsonNode record : sent.stream().filter(r -> r.get("op").asText().equals("WRITE")).toList()) {
            BillingSummary value = deserializer.deserialize(FenceTopics.INPUT, base64(record.get("valueBytes")));
            String key = record.get("key").asText();
            long seq = record.get("seq").asLong();
            assertThat(value).as("what Confluent's Python serializer wrote, decoded by this project's deserializer")
                    .isEqualTo(summary(key, 1_000L * seq + key.length(), (int) seq, "py-A"));
        }

        List<String> expected = new ArrayList<>();
        keys.forEach(key -> expected.addAll(List.of(key + "@1", key + "@2")));
        List<ConsumerRecord<String, byte[]>> accepted = await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1))
                .until(() -> pipeline.readAll(FenceTopics.ACCEPTED, prefix), found -> found.size() >= expected.size());
        assertThat(accepted).extracting(r -> r.key() + "@" + header(r, FenceHeaders.SEQ)).as("every write, once")
                .containsExactlyInAnyOrderElementsOf(expected);
        for (String key : keys) {
            JsonNode lock = acquired.get(key);
            List<ConsumerRecord<String, byte[]>> ofKey = accepted.stream().filter(r -> r.key().equals(key)).toList();
            assertThat(ofKey).extracting(r -> header(r, FenceHeaders.SEQ)).as("%s's writes in the order sent", key)
                    .containsExactly("1", "2");
            assertThat(ofKey).allSatisfy(r -> {
                assertThat(header(r, FenceHeaders.TOKEN)).isEqualTo(lock.get("token").asText());
                assertThat(header(r, FenceHeaders.LEASE)).isEqualTo(lock.get("lease").asText());
                assertThat(header(r, FenceHeaders.WRITER)).isEqualTo("py-A");
                assertThat(header(r, FenceHeaders.OP)).isEqualTo("WRITE");
            });
        }
        assertThat(accepted).extracting(ConsumerRecord::value).as("the values, byte for byte")
                .containsExactlyInAnyOrderElementsOf(sent.stream().filter(r -> r.get("op").asText().equals("WRITE"))
                        .map(r -> base64(r.get("valueBytes"))).toList());
        assertThat(pipeline.readAll(FenceTopics.REJECTED, prefix)).as("nothing of the Python writer's rejected").isEmpty();

        await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
            Map<String, Map<String, Object>> rows = pipeline.rows(prefix);
            assertThat(rows).containsOnlyKeys(keys);
            for (String key : keys) {
                assertThat(rows.get(key)).containsEntry("computed_by", "py-A")
                        .containsEntry("amount_minor", 2_000L + key.length())
                        .containsEntry("line_items", 2).containsEntry("fence_token", acquired.get(key).get("token").asLong())
                        .containsEntry("fence_seq", 2L).containsEntry("deleted", false);
            }
        });
    }

    /**
     * Python holds a key; producer-lib's acquire queues behind the Python lock key and gets the lock
     * only once Python releases it; the Python writer's late write with its old token is rejected
     * STALE_TOKEN with its headers and value as sent, and the row keeps the Java holder's data.
     */
    @Test
    void pythonsStaleWriteAfterAJavaTakeoverIsRejectedStaleTokenAndTheRowKeepsTheNewHoldersData() throws Exception {
        String prefix = "py-b-" + shortId() + "-";
        String key = keysWhereCrc32DisagreesWithMurmur2(prefix, 1, LocalStack.PARTITIONS).get(0);
        String lockName = LockKeys.name(LockKeys.DEFAULT_PREFIX, key);
        Map<String, Object> kafka = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap());
        try (PythonWriter python = PythonWriter.start(writerEnv("py-writer-b"));
                FencingLeaseClient leases = new FencingLeaseClient(List.of(stack.etcdEndpoints()), LockKeys.DEFAULT_PREFIX);
                FencedProducer<BillingSummary> producer = FencedProducer.create(kafka, AvroSerializer.forValues(registry),
                        FenceTopics.INPUT, "java-B");
                Client etcd = Client.builder().endpoints(stack.etcdEndpoints()).build()) {
            python.send(acquire("py-A", key));
            JsonNode a = python.until(line -> line.has("acquired"), STEP);
            python.send(write("py-A", key, 1, summaryJson(key, 100, 1, "py-A")));
            python.until(isSent("WRITE", key), STEP);
            // The write is decided before anyone else holds the key, so the takeover below fences only the late one.
            await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1))
                    .until(() -> pipeline.readAll(FenceTopics.ACCEPTED, prefix), found -> !found.isEmpty());

            CompletableFuture<FencingLease> javaAcquire = CompletableFuture
                    .supplyAsync(() -> acquireUnchecked(producer, leases, key));
            await().atMost(STEP).pollInterval(Duration.ofMillis(200)).until(() -> lockKeys(etcd, lockName).size() == 2);
            assertThat(lockKeys(etcd, lockName)).as("Java's key queued behind Python's, oldest first")
                    .startsWith(a.get("lockKey").asText());
            assertThat(javaAcquire).as("producer-lib waits while the Python writer holds the lock").isNotDone();

            python.send(release("py-A", key));
            python.until(line -> line.has("released"), STEP);
            try (FencingLease b = javaAcquire.get(STEP.toSeconds(), TimeUnit.SECONDS)) {
                assertThat(b.token()).as("the Java holder's token").isGreaterThan(a.get("token").asLong());
                producer.sendAndWait(b, summary(key, 12_550, 5, "java-B"));
                // The takeover is decided (Java's marker and write) before the late write is sent, which is then stale.
                await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1))
                        .until(() -> pipeline.readAll(FenceTopics.ACCEPTED, prefix), found -> found.size() >= 2);

                python.send(write("py-A", key, 2, summaryJson(key, 999, 9, "py-A")));
                JsonNode late = python.until(isSent("WRITE", key), STEP);

                List<ConsumerRecord<String, byte[]>> rejected = await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1))
                        .until(() -> pipeline.readAll(FenceTopics.REJECTED, prefix), found -> !found.isEmpty());
                assertThat(rejected).hasSize(1);
                ConsumerRecord<String, byte[]> stale = rejected.get(0);
                assertThat(stale.key()).isEqualTo(key);
                assertThat(header(stale, FenceHeaders.REJECTED_REASON)).isEqualTo("STALE_TOKEN");
                assertThat(header(stale, FenceHeaders.REJECTED_STAGE)).isEqualTo(FenceHeaders.STAGE_ENFORCER);
                assertThat(header(stale, FenceHeaders.REJECTED_HIGHEST)).isEqualTo(b.token() + ".1");
                assertThat(header(stale, FenceHeaders.TOKEN) + "." + header(stale, FenceHeaders.SEQ))
                        .isEqualTo(a.get("token").asText() + ".2");
                assertThat(header(stale, FenceHeaders.LEASE)).isEqualTo(a.get("lease").asText());
                assertThat(header(stale, FenceHeaders.WRITER)).isEqualTo("py-A");
                assertThat(stale.value()).as("the stale record's value, byte for byte").isEqualTo(base64(late.get("valueBytes")));

                List<ConsumerRecord<String, byte[]>> accepted = await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1))
                        .until(() -> pipeline.readAll(FenceTopics.ACCEPTED, prefix), found -> found.size() >= 2);
                assertThat(accepted).extracting(r -> header(r, FenceHeaders.WRITER) + "@" + header(r, FenceHeaders.TOKEN) + "."
                        + header(r, FenceHeaders.SEQ)).containsExactly("py-A@" + a.get("token").asText() + ".1",
                                "java-B@" + b.token() + ".1");
                await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1))
                        .untilAsserted(() -> assertThat(pipeline.rows(prefix).get(key))
                                .containsEntry("computed_by", "java-B").containsEntry("amount_minor", 12_550L)
                                .containsEntry("fence_token", b.token()).containsEntry("fence_seq", 1L));
            }
        }
    }

    /**
     * producer-lib holds a key; the Python writer's key queues behind it (the holder it reports is
     * producer-lib's lock key) and it holds the lock only after producer-lib releases, with a higher
     * token that the enforcer verifies: its write follows the Java writes on the accepted topic and
     * its data is the row's.
     */
    @Test
    void pythonWaitsForTheJavaHoldersKeyToGoAndThenWritesWithAHigherToken() throws Exception {
        String prefix = "py-c-" + shortId() + "-";
        String key = keysWhereCrc32DisagreesWithMurmur2(prefix, 1, LocalStack.PARTITIONS).get(0);
        Map<String, Object> kafka = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap());
        try (PythonWriter python = PythonWriter.start(writerEnv("py-writer-c"));
                FencingLeaseClient leases = new FencingLeaseClient(List.of(stack.etcdEndpoints()), LockKeys.DEFAULT_PREFIX);
                FencedProducer<BillingSummary> producer = FencedProducer.create(kafka, AvroSerializer.forValues(registry),
                        FenceTopics.INPUT, "java-A")) {
            FencingLease a = producer.acquire(leases, key, Duration.ofSeconds(30), STEP);
            String javaKey = LockKeys.key(LockKeys.DEFAULT_PREFIX, key.getBytes(StandardCharsets.UTF_8), a.leaseId());
            producer.sendAndWait(a, summary(key, 1, 1, "java-A"));

            python.send(acquire("py-C", key));
            JsonNode queued = python.until(line -> line.has("queued"), STEP);
            assertThat(queued.get("holder").asText()).as("when Python's key went in, Java's key held the lock")
                    .isEqualTo(javaKey);
            producer.sendAndWait(a, summary(key, 2, 2, "java-A"));
            // Java's writes are decided before it lets go, so Python's marker (re-routed, a longer path) cannot overtake them.
            await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1))
                    .until(() -> pipeline.readAll(FenceTopics.ACCEPTED, prefix), found -> found.size() >= 2);
            assertThat(python.lines()).as("Python holds nothing while Java does").noneMatch(line -> line.has("acquired"));
            a.close();

            JsonNode c = python.until(line -> line.has("acquired"), STEP);
            assertThat(c.get("waitedOn")).extracting(JsonNode::asText).as("Python waited for Java's key to go")
                    .containsExactly(javaKey);
            assertThat(c.get("token").asLong()).isGreaterThan(a.token());
            python.until(isSent("FENCE", key), STEP);
            python.send(write("py-C", key, 1, summaryJson(key, 3_000, 3, "py-C")));
            python.until(isSent("WRITE", key), STEP);

            List<ConsumerRecord<String, byte[]>> accepted = await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1))
                    .until(() -> pipeline.readAll(FenceTopics.ACCEPTED, prefix), found -> found.size() >= 3);
            assertThat(accepted).extracting(r -> header(r, FenceHeaders.WRITER) + "@" + header(r, FenceHeaders.TOKEN) + "."
                    + header(r, FenceHeaders.SEQ)).containsExactly("java-A@" + a.token() + ".1", "java-A@" + a.token() + ".2",
                            "py-C@" + c.get("token").asText() + ".1");
            assertThat(pipeline.readAll(FenceTopics.REJECTED, prefix)).as("the Python token verified: nothing rejected")
                    .isEmpty();
            await().atMost(PIPELINE).pollInterval(Duration.ofSeconds(1))
                    .untilAsserted(() -> assertThat(pipeline.rows(prefix).get(key))
                            .containsEntry("computed_by", "py-C").containsEntry("amount_minor", 3_000L)
                            .containsEntry("fence_token", c.get("token").asLong()));
        }
    }

    /**
     * fenced_lock.py encodes resource names byte for byte as Java's LockKeys does (URLEncoder's
     * rules), for names with a space, '/', '~', '*', '+', '%', control characters and text beyond
     * ASCII, 2 000 random names and raw bytes that are not UTF-8: a difference would put a Python
     * writer's lock on another key than the one the enforcer reads.
     */
    @Test
    void pythonEncodesResourceNamesExactlyLikeLockKeys() throws Exception {
        LockNameCorpus corpus = LockNameCorpus.generate(20261202, List.of("", "a", "a b", "a/x", "~user", "*", "a+b", "100%",
                "%2F", ".-_*", "?&=#:;@", "tab\tnew\nline\u0000", "Zoë-€-𝄞", "漢字 🙂", "\u007f\u0080\u00ff", "'\"<>\\"),
                List.of(new byte[]{(byte) 0xff, 0, (byte) 0x80}, new byte[]{(byte) 0xc3}));
        List<String> names = corpus.names();
        List<byte[]> bytes = corpus.bytes();

        JsonNode out = ExternalCommand.JSON.readTree(PythonWriter.run("encode.py", Map.of(), corpus.input().toString(), STEP));

        List<String> java = names.stream().map(n -> LockKeys.encode(n.getBytes(StandardCharsets.UTF_8))).toList();
        assertThat(out.get("strings")).extracting(JsonNode::asText).as("names encoded as LockKeys does")
                .containsExactlyElementsOf(java);
        assertThat(out.get("bytes")).extracting(JsonNode::asText).as("raw bytes encoded as LockKeys does")
                .containsExactlyElementsOf(bytes.stream().map(LockKeys::encode).toList());
        assertThat(out.get("strings").get(names.indexOf("a/x")).asText()).isEqualTo("a%2Fx");
        assertThat(out.get("strings").get(names.indexOf("~user")).asText()).isEqualTo("%7Euser");
    }

    // ---- helpers ----

    private static Map<String, String> writerEnv(String clientId) {
        return Map.of("KAFKA_BOOTSTRAP", stack.kafkaBootstrap(), "SCHEMA_REGISTRY_URL", stack.schemaRegistryUrl(), "TOPIC",
                FenceTopics.INPUT, "SCHEMA_FILE", schemaFile.toString(), "ETCD_ENDPOINTS", stack.etcdEndpoints(), "LOCK_PREFIX",
                LockKeys.DEFAULT_PREFIX, "WRITER_ID", clientId);
    }

    private static Predicate<JsonNode> isSent(String op, String key) {
        return line -> line.has("sent") && line.get("op").asText().equals(op) && line.get("key").asText().equals(key);
    }

    private static FencingLease acquireUnchecked(FencedProducer<?> producer, FencingLeaseClient leases, String key) {
        try {
            return producer.acquire(leases, key, Duration.ofSeconds(30), STEP);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CompletionException(e);
        } catch (LeaseAcquisitionException e) {
            throw new CompletionException(e);
        }
    }

    /** The waiter keys under a lock's name, oldest (the holder) first. */
    private static List<String> lockKeys(Client etcd, String lockName) throws Exception {
        GetOption option = GetOption.builder().isPrefix(true).withSortField(GetOption.SortTarget.CREATE)
                .withSortOrder(GetOption.SortOrder.ASCEND).withKeysOnly(true).build();
        return etcd.getKVClient().get(ByteSequence.from(lockName + "/", StandardCharsets.UTF_8), option)
                .get(30, TimeUnit.SECONDS).getKvs().stream().map(kv -> kv.getKey().toString(StandardCharsets.UTF_8)).toList();
    }

    private static byte[] base64(JsonNode text) {
        return Base64.getDecoder().decode(text.asText());
    }

}
