package dev.fencedwrites.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.localstack.testing.SharedBillingStack;
import dev.fencedwrites.producer.FencingLease;
import dev.fencedwrites.producer.FencingLeaseClient;
import dev.fencedwrites.services.EtcdNode;
import dev.fencedwrites.services.Service;
import dev.fencedwrites.testing.ShippedSchemas;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: {@code fence rejected}, {@code consume}, {@code produce} and {@code inspect} are only proven against
 * a real broker, etcd lease, enforcer, schema registry and PostgreSQL row (moved here from the demo's BillingScenarioIT, issue
 * 15).
 */
@Timeout(value = 8, unit = TimeUnit.MINUTES)
@ExtendWith(SharedBillingStack.class)
class OperatorCommandsIT {
    /** For the other etcd of the stale writer. */
    @TempDir
    static Path dir;
    static LocalStack stack;

    /** The stack HostileValuesIT uses too; this class's keys are its own (a UUID each) and it filters what it reads by them. */
    @BeforeAll
    static void useSharedStack(LocalStack shared) {
        stack = shared;
    }

    /**
     * {@code ./fence rejected}: a stale write the enforcer refused shows as one line (and one JSON object) with its reason and
     * fence.
     */
    @Test
    void fenceRejectedPrintsWhatWasFenced() throws Exception {
        String customer = "customer-rejected-cmd-" + UUID.randomUUID();
        List<Lock> held = locks(customer, 2);
        Lock paused = held.get(0);
        Lock holder = held.get(1);
        publish(FenceTopics.INPUT, customer, summary(customer, 700, "holder"), holder, 1);
        publish(FenceTopics.INPUT, customer, summary(customer, 500, "paused"), paused, 1);

        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
            FenceRun text = rejected("--bootstrap", stack.kafkaBootstrap(), "--since", "10m");
            assertThat(text.exit()).as(text.err()).isZero();
            assertThat(text.out().lines().filter(line -> line.contains(customer)))
                    .singleElement().asString().contains("token=" + paused.token() + ".1", "highest=" + holder.token() + ".1",
                            "STALE_TOKEN",
                            "stage=enforcer", "source=fenced-writes-");
        });
        FenceRun json = rejected("--bootstrap", stack.kafkaBootstrap(), "--json");
        assertThat(json.out().lines()).isNotEmpty()
                .allSatisfy(line -> ShippedSchemas.assertMatches(ShippedSchemas.REJECTED, line));
        assertThat(json.out().lines().filter(line -> line.contains(customer))).singleElement().satisfies(line -> {
            var object = new ObjectMapper().readTree(line);
            assertThat(object.path("reason").asText()).isEqualTo("STALE_TOKEN");
            assertThat(object.path("highest").asText()).isEqualTo(holder.token() + ".1");
            assertThat(object.path("key").asText()).isEqualTo(customer);
        });

        FenceRun unreachable = rejected("--bootstrap", "127.0.0.1:1");
        assertThat(unreachable.exit()).isEqualTo(1);
        assertThat(unreachable.err().strip()).startsWith("fence rejected: cannot reach Kafka at 127.0.0.1:1")
                .doesNotContain("\n");
        FenceRun badSince = rejected("--bootstrap", stack.kafkaBootstrap(), "--since", "yesterday");
        assertThat(badSince.exit()).as("a usage error").isEqualTo(FenceMain.USAGE_ERROR);
        assertThat(badSince.err()).contains("Invalid value for option '--since': 'yesterday' is not a duration");
    }

    /**
     * {@code ./fence consume}: the accepted write decoded field by field, with its fence; a value that does not decode is
     * reported, not fatal.
     */
    @Test
    void fenceConsumePrintsAcceptedRecordsDecoded() throws Exception {
        String customer = "customer-consume-cmd-" + UUID.randomUUID();
        Lock lock = locks(customer, 1).get(0);
        publish(FenceTopics.INPUT, customer, summary(customer, 4_242, "consumer-test"), lock, 2);
        publishRaw(FenceTopics.INPUT, customer + "-raw", "not avro".getBytes(StandardCharsets.UTF_8),
                locks(customer + "-raw", 1).get(0), 1);

        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
            FenceRun run = command("consume", "--bootstrap", stack.kafkaBootstrap(), "--schema-registry",
                    stack.schemaRegistryUrl(),
                    "--since", "10m");
            assertThat(run.exit()).as(run.err()).isZero();
            var mapper = new ObjectMapper();
            assertThat(run.out().lines().filter(line -> line.contains("\"" + customer + "\""))).singleElement()
                    .satisfies(line -> {
                        var object = mapper.readTree(line);
                        assertThat(object.path("token").asText()).isEqualTo(Long.toString(lock.token()));
                        assertThat(object.path("seq").asText()).isEqualTo("2");
                        assertThat(object.path("value").path("amountMinor").asLong()).isEqualTo(4_242);
                        assertThat(object.path("value").path("computedBy").asText()).isEqualTo("consumer-test");
                    });
            assertThat(run.out().lines().filter(line -> line.contains(customer + "-raw"))).singleElement()
                    .satisfies(line -> assertThat(mapper.readTree(line).path("value_error").asText()).isNotEmpty());
        });
        FenceRun unreachable = command("consume", "--bootstrap", "127.0.0.1:1", "--schema-registry", stack.schemaRegistryUrl());
        assertThat(unreachable.exit()).isEqualTo(1);
        assertThat(unreachable.err().strip()).startsWith("fence consume: cannot reach Kafka at 127.0.0.1:1");
    }

    /**
     * {@code ./fence produce} under a real etcd lease, then {@code ./fence inspect}: the enforcer's
     * fence and the row agree; a write whose lease token is below the key's fence is reported
     * rejected (exit 3), and inspect then shows the row unchanged.
     */
    @Test
    void fenceProduceWritesUnderALeaseAndInspectShowsBothSidesInStep() throws Exception {
        String customer = "customer-produce-cmd-" + UUID.randomUUID();
        locks(customer + "-warm-up", 3); // etcd's revision well above where a fresh etcd starts (the stale writer below)
        FenceRun produced = produce(customer, "--value", "{\"amountMinor\": 1234, \"lineItems\": 3}", "--count", "2");
        assertThat(produced.exit()).as(produced.out() + produced.err()).isZero();
        String token = produced.out().lines().filter(line -> line.startsWith("lease")).findFirst().orElseThrow()
                .replaceAll(".*token=(\\d+).*", "$1");
        assertThat(produced.out()).contains("sent     " + customer + "  token=" + token + ".1",
                "sent     " + customer + "  token=" + token + ".2",
                "accepted " + customer + "  token=" + token + ".1  -> fenced-writes-accepted-",
                "accepted " + customer + "  token=" + token + ".2");

        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
            FenceRun inspected = inspect(customer, "--json");
            assertThat(inspected.exit()).as(inspected.err()).isZero();
            ShippedSchemas.assertMatches(ShippedSchemas.INSPECT, inspected.out());
            var object = new ObjectMapper().readTree(inspected.out());
            assertThat(object.path("enforcer").path("fence").asText()).isEqualTo(token + ".2");
            assertThat(object.path("database").path("fence").asText()).isEqualTo(token + ".2");
            assertThat(object.path("database").path("row").path("amount_minor").asText()).isEqualTo("1234");
            assertThat(object.path("database").path("row").path("line_items").asText()).isEqualTo("3");
            assertThat(object.path("verdict").asText()).startsWith("in step");
        });
        FenceRun text = inspect(customer);
        assertThat(text.out()).contains("enforcer fence   " + token + ".2", "database fence   " + token + ".2",
                "verdict          in step");

        // A forged token far ahead cannot raise the fence (verified against etcd), so the next lease's write is
        // accepted.
        long ahead = Long.parseLong(token) + 1_000_000;
        publishRaw(FenceTopics.INPUT, customer, serializer().serialize(FenceTopics.INPUT, summary(customer, 9_999, "far-ahead")),
                ahead, 1, 7_777);
        FenceRun next = produce(customer, "--amount", "2");
        assertThat(next.exit()).as(next.out() + next.err()).isZero();
        assertThat(next.out()).containsPattern("accepted " + customer + "  token=\\d+\\.1");
        // A writer whose tokens come from another etcd, whose revisions are far behind (as if etcd had been reset under it), is
        // stale.
        try (Service otherEtcd = EtcdNode.start(dir.resolve("other-etcd"))) {
            FenceRun stale = produceWith(otherEtcd.address(), customer, "--amount", "1");
            assertThat(stale.exit()).as(stale.out() + stale.err()).isEqualTo(3);
            assertThat(stale.out())
                    .containsPattern("rejected " + customer + "  token=\\d+\\.1  STALE_TOKEN  highest=\\d+\\.1  stage=enforcer");
        }

        String never = "customer-never-written-" + UUID.randomUUID();
        FenceRun unknown = inspect(never);
        assertThat(unknown.exit()).as(unknown.err()).isZero();
        assertThat(unknown.out()).contains("enforcer fence   none", "database fence   none", "verdict          unknown key");
        FenceRun unknownJson = inspect(never, "--json");
        assertThat(unknownJson.out()).contains("\"fence\":null");
        ShippedSchemas.assertMatches(ShippedSchemas.INSPECT, unknownJson.out());

        FenceRun noEnforcer = command("inspect", customer, "--enforcer", "http://127.0.0.1:1", "--postgres", stack.postgresUrl());
        assertThat(noEnforcer.exit()).isEqualTo(1);
        assertThat(noEnforcer.err().strip()).startsWith("fence inspect: cannot reach the enforcer at http://127.0.0.1:1")
                .doesNotContain("\n");
        FenceRun notAnEnforcer = command("inspect", customer, "--enforcer", stack.connectUrl(), "--postgres",
                stack.postgresUrl());
        assertThat(notAnEnforcer.exit()).as("Connect's REST API answers 404 too, which is not \"no fence\"").isEqualTo(1);
        assertThat(notAnEnforcer.err()).contains("without the enforcer's answer");
        FenceRun badValue = produce(customer, "--value", "{\"amount\": 5}");
        assertThat(badValue.exit()).isEqualTo(1);
        assertThat(badValue.err().strip()).startsWith("fence produce: --value has unknown field 'amount'").doesNotContain("\n");
    }

    private static FenceRun produce(String key, String... more) {
        return produceWith(stack.etcdEndpoints(), key, more);
    }

    /** {@code ./fence produce} taking its lease from the etcd at {@code etcd}. */
    private static FenceRun produceWith(String etcd, String key, String... more) {
        List<String> args = new ArrayList<>(List.of(key, "--bootstrap", stack.kafkaBootstrap(), "--etcd", etcd,
                "--schema-registry", stack.schemaRegistryUrl()));
        args.addAll(List.of(more));
        return command("produce", args.toArray(String[]::new));
    }

    private static FenceRun inspect(String key, String... more) {
        List<String> args = new ArrayList<>(List.of(key, "--enforcer", stack.enforcerUrl(), "--postgres", stack.postgresUrl()));
        args.addAll(List.of(more));
        return command("inspect", args.toArray(String[]::new));
    }

    private static FenceRun fence(String... args) {
        return FenceRun.of(args);
    }

    private static FenceRun rejected(String... args) {
        return command("rejected", args);
    }

    private static FenceRun command(String subcommand, String... args) {
        List<String> line = new ArrayList<>(List.of(subcommand));
        line.addAll(List.of(args));
        return fence(line.toArray(String[]::new));
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

    private static void publishRaw(String topic, String key, byte[] value, Lock lock, long seq) throws Exception {
        publishRaw(topic, key, value, lock.token(), seq, lock.lease());
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
}
