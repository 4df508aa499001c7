package dev.fencedwrites.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.enforcer.FenceEnforcerTopology;
import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.localstack.StackUsers;
import dev.fencedwrites.producer.FencedProducer;
import dev.fencedwrites.producer.FencingLease;
import dev.fencedwrites.producer.FencingLeaseClient;
import dev.fencedwrites.services.Jvm;
import dev.fencedwrites.services.KafkaSecurity;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: SASL_SSL, SCRAM and ACLs are decided by a real broker's listener and authorizer, and each part of the
 * pipeline (enforcer, Connect worker and sink, producer-lib, the CLI) must really connect through them. The
 * enforcer, the worker, the writer and the CLI each run as their own user with exactly {@code FenceAcls}' ACLs.
 */
@Timeout(value = 8, unit = TimeUnit.MINUTES)
class SecuredStackIT {
    @TempDir
    static Path dir;
    static LocalStack stack;
    static KafkaSecurity security;
    static Path operator;

    @BeforeAll
    static void startSecuredStack() throws Exception {
        stack = LocalStack.builder(dir).secured().connectors(BillingConnectors.set(false)).start();
        security = stack.kafkaSecurity().orElseThrow();
        operator = security.writeClientProperties(StackUsers.OPERATOR, stack.kafkaBootstrap(),
                dir.resolve("operator.properties"));
    }

    @AfterAll
    static void stopStack() {
        if (stack != null) {
            stack.close();
        }
    }

    /** Acceptance 3: producer-lib, enforcer, sink and CLI on SASL_SSL with ACLs; a stale write is on the rejected topic. */
    @Test
    void writesFlowThroughTheSecuredPipelineAndAStaleWriteIsRejected() throws Exception {
        String customer = "customer-secured-" + UUID.randomUUID();
        long staleToken;
        long staleLease;
        Map<String, Object> writer = new HashMap<>(security.client(StackUsers.WRITER));
        writer.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap());
        try (FencingLeaseClient leases = new FencingLeaseClient(List.of(stack.etcdEndpoints()),
                FencingLeaseClient.DEFAULT_LOCK_PREFIX);
                FencedProducer<BillingSummary> producer = FencedProducer.create(writer, serializer(), FenceTopics.INPUT,
                        "secured-writer");
                FencingLease lease = producer.acquire(leases, customer, Duration.ofSeconds(30), Duration.ofSeconds(60))) {
            producer.sendAndWait(lease, summary(customer, 100, "secured-writer"));
            staleToken = lease.token();
            staleLease = lease.leaseId();
        }
        // The sink adds the data columns with the first record: until then the query may fail.
        await().atMost(Duration.ofSeconds(90)).ignoreExceptionsInstanceOf(SQLException.class)
                .untilAsserted(() -> assertThat(amount(customer)).isEqualTo(100));

        FenceRun produced = fence("produce", customer, "--amount", "200", "--command-config", operator.toString(),
                "--bootstrap-server", stack.kafkaBootstrap(), "--etcd", stack.etcdEndpoints(),
                "--schema-registry", stack.schemaRegistryUrl());
        assertThat(produced.exit()).as(produced.out() + produced.err()).isZero();
        assertThat(produced.out()).containsPattern("accepted " + customer + "  token=\\d+\\.1");
        await().atMost(Duration.ofSeconds(90)).untilAsserted(() -> assertThat(amount(customer)).isEqualTo(200));

        publishAsWriter(customer, staleToken, staleLease, 2);
        await().atMost(Duration.ofSeconds(90)).untilAsserted(() -> {
            FenceRun rejected = fence("rejected", "--command-config", operator.toString(), "--since", "10m");
            assertThat(rejected.exit()).as(rejected.err()).isZero();
            assertThat(rejected.out()).containsPattern(customer + ".*STALE_TOKEN");
        });
        // A value the sink cannot decode: the enforcer accepts it, the sink's dead-letter producer (Connect's producer.*
        // settings) puts it on the rejected topic.
        String undecodable = customer + "-not-avro";
        try (FencingLeaseClient leases = new FencingLeaseClient(List.of(stack.etcdEndpoints()),
                FencingLeaseClient.DEFAULT_LOCK_PREFIX);
                FencedProducer<byte[]> producer = FencedProducer.create(writer, new ByteArraySerializer(), FenceTopics.INPUT,
                        "secured-writer");
                FencingLease lease = producer.acquire(leases, undecodable, Duration.ofSeconds(30), Duration.ofSeconds(60))) {
            producer.sendAndWait(lease, "plain text, not Avro".getBytes(StandardCharsets.UTF_8));
        }
        await().atMost(Duration.ofSeconds(90)).untilAsserted(() -> {
            FenceRun rejected = fence("rejected", "--command-config", operator.toString(), "--since", "10m");
            assertThat(rejected.out()).containsPattern(undecodable + ".*MALFORMED_VALUE.*stage=sink");
        });
        FenceRun consumed = fence("consume", "-X", "bootstrap.servers=" + stack.kafkaBootstrap(), "--command-config",
                operator.toString(), "--schema-registry", stack.schemaRegistryUrl());
        assertThat(consumed.exit()).as(consumed.err()).isZero();
        assertThat(consumed.out()).contains("\"key\":\"" + customer + "\"");
        assertThat(amount(customer)).as("the stale write never reached the table").isEqualTo(200);
    }

    /** Acceptance 3: a refused client makes the CLI print one line naming the cause and the setting, with no stack trace. */
    @Test
    void aWrongPasswordMakesTheCliPrintOneLineNamingTheUserAndTheSetting() throws Exception {
        Path wrong = dir.resolve("wrong-password.properties");
        Files.writeString(wrong, "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                + "sasl.jaas.config=" + security.client(StackUsers.OPERATOR, "not-the-password").get("sasl.jaas.config") + "\n"
                + "ssl.truststore.location=" + security.certificates().truststore() + "\nssl.truststore.password="
                + security.certificates().password() + "\n");

        FenceRun run = fenceProcess("rejected", "--command-config", wrong.toString(), "--bootstrap-server",
                stack.kafkaBootstrap());

        assertThat(run.exit()).as(run.out()).isEqualTo(1);
        assertThat(run.out().strip()).isEqualTo("fence rejected: authentication failed for user operator: check "
                + "sasl.jaas.config (username, password) and sasl.mechanism in --command-config (or -X)");
    }

    @Test
    void aClientWithoutCredentialsIsRefusedWithOneLineNamingCommandConfig() {
        FenceRun run = fence("rejected", "--bootstrap-server", stack.kafkaBootstrap());

        assertThat(run.exit()).isEqualTo(1);
        assertThat(run.err().strip()).startsWith("fence rejected: cannot reach Kafka at " + stack.kafkaBootstrap())
                .contains("--command-config").doesNotContain("\n");
    }

    @Test
    void aDashXSettingWinsOverTheCommandConfig() {
        String wrongJaas = security.client(StackUsers.OPERATOR, "wrong").get("sasl.jaas.config");

        FenceRun run = fence("rejected", "--command-config", operator.toString(), "-X", "sasl.jaas.config=" + wrongJaas);

        assertThat(run.exit()).isEqualTo(1);
        assertThat(run.err().strip()).startsWith("fence rejected: authentication failed for user operator");
    }

    @Test
    void aUserWithoutAclsOnTheTopicIsToldWhichAclIsMissing() {
        FenceRun run = fence("rejected", "--command-config", operator.toString(), "-X",
                "sasl.jaas.config=" + security.client(StackUsers.WRITER).get("sasl.jaas.config"));

        assertThat(run.exit()).as(run.out()).isEqualTo(1);
        assertThat(run.err().strip()).startsWith("fence rejected: user writer is not authorized to access topic(s) "
                + FenceTopics.REJECTED + ": it needs READ").doesNotContain("\n");
    }

    /**
     * Writers may write the input topic only (they do above): not the enforcer's changelog (a forged fence), its repartition
     * topic (a record with a forged {@code fence.reroute.origin} header, which re-routed records carry), nor its outputs.
     */
    @Test
    void aWriterMayNotWriteTheEnforcersInternalOrOutputTopics() throws Exception {
        Map<String, Object> config = new HashMap<>(security.client(StackUsers.WRITER));
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap());
        config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        String app = "fence-enforcer";
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(config, new StringSerializer(),
                new ByteArraySerializer())) {
            for (String topic : List.of(FenceEnforcerTopology.changelogTopic(app), FenceEnforcerTopology.rerouteTopic(app),
                    FenceTopics.ACCEPTED, FenceTopics.MARKERS, FenceTopics.REJECTED)) {
                ProducerRecord<String, byte[]> forged = new ProducerRecord<>(topic, 0, "acct", new byte[]{1});
                forged.headers().add("fence.reroute.origin", new byte[8]);
                assertThatThrownBy(() -> producer.send(forged).get(60, TimeUnit.SECONDS)).as(topic)
                        .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(TopicAuthorizationException.class);
            }
        }
    }

    private static long amount(String customer) throws Exception {
        try (Connection connection = DriverManager.getConnection(stack.postgresUrl());
                PreparedStatement select = connection.prepareStatement(
                        "SELECT amount_minor FROM " + BillingConnectors.TABLE + " WHERE resource_key = ?")) {
            select.setString(1, customer);
            try (ResultSet rows = select.executeQuery()) {
                return rows.next() ? rows.getLong(1) : -1;
            }
        }
    }

    /** A write by the writer's user with an old lease's token: the enforcer must reject it, stale. */
    private static void publishAsWriter(String key, long token, long lease, long seq) throws Exception {
        Map<String, Object> config = new HashMap<>(security.client(StackUsers.WRITER));
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap());
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(config, new StringSerializer(),
                new ByteArraySerializer())) {
            RecordHeaders headers = new RecordHeaders();
            headers.add(FenceHeaders.TOKEN, FenceHeaders.encode(token));
            headers.add(FenceHeaders.SEQ, FenceHeaders.encode(seq));
            headers.add(FenceHeaders.LEASE, FenceHeaders.encode(lease));
            byte[] value = serializer().serialize(FenceTopics.INPUT, summary(key, 50, "stale-writer"));
            producer.send(new ProducerRecord<>(FenceTopics.INPUT, null, key, value, headers)).get(60, TimeUnit.SECONDS);
        }
    }

    private static BillingSummary summary(String customer, long amountMinor, String computedBy) {
        return BillingSummary.newBuilder().setCustomerId(customer).setBillingPeriod("2026-11").setAmountMinor(amountMinor)
                .setCurrency("EUR").setLineItems(1).setComputedAt(Instant.parse("2026-11-29T10:00:00Z")).setComputedBy(computedBy)
                .build();
    }

    private static AvroSerializer<BillingSummary> serializer() {
        return AvroSerializer.forValues(new RestSchemaRegistryClient(stack.schemaRegistryUrl(), Duration.ofSeconds(10)));
    }

    private static FenceRun fence(String... args) {
        return FenceRun.of(args);
    }

    /** {@code fence <args>} as {@code ./fence} runs it: its own JVM with the project's log4j2 configuration; all output. */
    private static FenceRun fenceProcess(String... args) throws Exception {
        List<String> command = new ArrayList<>(Jvm.command(List.of(), Path.of("../config/log4j2.properties").toAbsolutePath(),
                FenceMain.class.getName(), List.of(args)));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        return new FenceRun(process.waitFor(), output, "");
    }
}
