package dev.fencedwrites.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.contract.Decision;
import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceRule;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.localstack.LocalStack;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Needs real services: the Connect worker is killed with SIGKILL in the middle of a 50 000-record
 * load and restarted; recovery (redelivery from the last committed offsets, transactions rolled
 * back by PostgreSQL) is the real worker's and the real database's behaviour. A trigger records
 * any update that would lower a row's fence while the load runs.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class SinkCrashIT {
    private static final Logger LOG = LoggerFactory.getLogger(SinkCrashIT.class);
    private static final int RECORDS = 50_000;
    private static final int KEYS = 300;
    private static final String GROUP = "connect-" + BillingConnectors.SINK_CONNECTOR;

    @TempDir
    Path dir;

    @Test
    void afterAKillMidLoadTheTableEqualsTheRuleAppliedToTheTopicAndNoFenceEverDecreased() throws Exception {
        try (LocalStack stack = LocalStack.builder(dir).connectors(BillingConnectors.set(false))
                .progress(line -> LOG.info("[stack] {}", line)).start()) {
            installAudit(stack);
            Map<String, Expected> model = new HashMap<>();
            Generator generator = new Generator(new Random(20261129));
            AvroSerializer<BillingSummary> serializer = AvroSerializer
                    .forValues(new RestSchemaRegistryClient(stack.schemaRegistryUrl(), Duration.ofSeconds(10)));
            Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap(),
                    ProducerConfig.LINGER_MS_CONFIG, 20);
            try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(config, new StringSerializer(),
                    new ByteArraySerializer());
                    Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap()))) {
                send(producer, serializer, generator, model, RECORDS / 2);
                // Kill as soon as the sink has committed some of the first half: it is mid-load.
                await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(100)).until(() -> committed(admin) > 0);
                stack.killConnect();
                long atKill = committed(admin);
                LOG.info("killed the Connect worker with {} of {} records committed", atKill, RECORDS / 2);
                send(producer, serializer, generator, model, RECORDS / 2);
                stack.restartConnect();

                await().atMost(Duration.ofMinutes(4)).pollInterval(Duration.ofSeconds(1))
                        .until(() -> committed(admin) >= RECORDS);
                LOG.info("all {} records committed after the restart", RECORDS);
                assertThat(atKill).as("the kill came before the sink had committed the first half").isLessThan(RECORDS / 2);
            }

            Map<String, Expected> table = readTable(stack);
            assertThat(table).hasSameSizeAs(model);
            model.forEach((key, expected) -> assertThat(table.get(key)).as("row %s", key).isEqualTo(expected));
            assertThat(auditRows(stack)).as("updates that lowered a fence").isZero();
        }
    }

    /** One row as the rule says it must end: the fence and the last accepted record's data. */
    private record Expected(Fence fence, Long amountMinor, boolean deleted) {
    }

    /** Fences per key: new tokens, next seqs, stale tokens, duplicates and deletes. */
    private static final class Generator {
        private final Random random;
        private final Map<String, long[]> current = new HashMap<>(); // key -> {token, seq}
        private long amount;

        Generator(Random random) {
            this.random = random;
        }

        /** The next record: key, fence and value (null = delete). */
        Object[] next() {
            String key = "crash-" + random.nextInt(KEYS);
            long[] at = current.computeIfAbsent(key, k -> new long[]{1 + random.nextInt(3), 0});
            int dice = random.nextInt(100);
            Fence fence;
            if (dice < 60 || at[1] == 0) {
                fence = new Fence(at[0], ++at[1]);
            } else if (dice < 75) {
                at[0] += 1 + random.nextInt(3);
                at[1] = 1;
                fence = new Fence(at[0], 1);
            } else if (dice < 88) {
                // stale (or a stale seq of the same token)
                fence = new Fence(Math.max(1, at[0] - 1 - random.nextInt(2)), 1 + random.nextInt(5));
            } else if (dice < 95) {
                fence = new Fence(at[0], at[1]); // duplicate
            } else {
                fence = new Fence(at[0], ++at[1]);
                return new Object[]{key, fence, null};
            }
            return new Object[]{key, fence, ++amount};
        }
    }

    private static void send(KafkaProducer<String, byte[]> producer, AvroSerializer<BillingSummary> serializer,
            Generator generator,
            Map<String, Expected> model, int count) {
        for (int i = 0; i < count; i++) {
            Object[] next = generator.next();
            String key = (String) next[0];
            Fence fence = (Fence) next[1];
            Long amount = (Long) next[2];
            Expected before = model.get(key);
            Decision decision = FenceRule.decide(before == null ? null : before.fence(), fence);
            if (decision.accepted()) {
                model.put(key,
                        new Expected(FenceRule.raise(before == null ? null : before.fence(), fence), amount, amount == null));
            }
            RecordHeaders headers = new RecordHeaders();
            headers.add(FenceHeaders.TOKEN, FenceHeaders.encode(fence.token()));
            headers.add(FenceHeaders.SEQ, FenceHeaders.encode(fence.seq()));
            byte[] value = amount == null
                    ? null
                    : serializer.serialize(FenceTopics.ACCEPTED, BillingSummary.newBuilder().setCustomerId(key)
                            .setBillingPeriod("2026-11").setAmountMinor(amount).setCurrency("EUR").setLineItems(1)
                            .setComputedAt(Instant.parse("2026-11-29T12:00:00Z")).setComputedBy("crash-test").build());
            producer.send(new ProducerRecord<>(FenceTopics.ACCEPTED, null, key, value, headers));
        }
        producer.flush();
    }

    /** Records of the accepted topic the sink has committed, over all partitions. */
    private static long committed(Admin admin) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(GROUP).partitionsToOffsetAndMetadata()
                .get(30, TimeUnit.SECONDS);
        return offsets.values().stream().filter(Objects::nonNull).mapToLong(OffsetAndMetadata::offset).sum();
    }

    /** A trigger that records every update lowering a row's fence (it cannot happen if the guard holds). */
    private static void installAudit(LocalStack stack) throws SQLException {
        try (Connection connection = DriverManager.getConnection(stack.postgresUrl());
                Statement statement = connection.createStatement()) {
            statement.execute(
                    "CREATE TABLE fence_audit (resource_key TEXT, old_token BIGINT, old_seq BIGINT, new_token BIGINT, new_seq "
                            + "BIGINT)");
            statement.execute("CREATE FUNCTION fence_must_not_decrease() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                    + " IF NEW.fence_token < OLD.fence_token OR (NEW.fence_token = OLD.fence_token AND NEW.fence_seq < "
                    + "OLD.fence_seq) THEN"
                    + " INSERT INTO fence_audit VALUES (OLD.resource_key, OLD.fence_token, OLD.fence_seq, NEW.fence_token, "
                    + "NEW.fence_seq);"
                    + " END IF; RETURN NEW; END $$");
            statement.execute("CREATE TRIGGER fence_audit BEFORE UPDATE ON " + BillingConnectors.TABLE
                    + " FOR EACH ROW EXECUTE FUNCTION fence_must_not_decrease()");
        }
    }

    private static long auditRows(LocalStack stack) throws SQLException {
        try (Connection connection = DriverManager.getConnection(stack.postgresUrl());
                Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery("SELECT count(*) FROM fence_audit")) {
            rows.next();
            return rows.getLong(1);
        }
    }

    private static Map<String, Expected> readTable(LocalStack stack) throws SQLException {
        Map<String, Expected> table = new HashMap<>();
        try (Connection connection = DriverManager.getConnection(stack.postgresUrl());
                Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery(
                        "SELECT resource_key, fence_token, fence_seq, amount_minor, deleted FROM " + BillingConnectors.TABLE
                                + " WHERE resource_key LIKE 'crash-%'")) {
            while (rows.next()) {
                long seq = rows.getLong(3);
                boolean noSeq = rows.wasNull();
                Fence fence = new Fence(rows.getLong(2), noSeq ? Fence.NO_SEQ : seq);
                table.put(rows.getString(1), new Expected(fence, rows.getObject(4, Long.class), rows.getBoolean(5)));
            }
        }
        return table;
    }
}
