package dev.fencedwrites.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.InMemorySchemaRegistryClient;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.avro.connect.AvroConverter;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceOp;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.testing.FakeSchemaRegistry;
import dev.fencedwrites.testing.PostgresExtension;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link FencedJdbcSinkTask} as Connect drives it (key {@code StringConverter}, value and header
 * {@code ByteArrayConverter}) against real PostgreSQL (embedded) and a fake schema registry that
 * knows schema id 1 only. Fences are written {@code token} or {@code token.seq}.
 */
@Tag("process")
class FencedJdbcSinkTaskTest {
    private static final String TOPIC = "fenced-writes-accepted";
    private static final int PARTITION = 3;
    private static final long TIMESTAMP = 1_790_000_000_000L;
    private static final int SCHEMA_ID = 1;
    private static final String KEY = "customer-42";
    private static final String UNREACHABLE_REGISTRY = "http://127.0.0.1:1";

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();
    private static FakeSchemaRegistry registry;

    private final AvroSerializer<BillingSummary> serializer = AvroSerializer
            .forValues(new InMemorySchemaRegistryClient(SCHEMA_ID));
    private final FencedJdbcSinkTask task = new FencedJdbcSinkTask();
    private RecordingSinkTaskContext context;
    private String table;

    @BeforeAll
    static void startServices() throws IOException {
        registry = FakeSchemaRegistry.serving(SCHEMA_ID, BillingSummary.getClassSchema().toString());
    }

    @AfterAll
    static void stopServices() throws IOException {
        registry.close();
    }

    @BeforeEach
    void nameTable(TestInfo test) {
        String name = test.getTestMethod().orElseThrow().getName().toLowerCase(Locale.ROOT);
        table = name.length() > 60 ? name.substring(0, 60) : name;
    }

    @AfterEach
    void stopTask() {
        task.stop();
    }

    @Test
    void writesAcceptedRecordAndReportsStaleOneWithReasonHeaders() throws SQLException {
        startTask(registry.url());
        SinkRecord accepted = write(KEY, 700, 7, 1, 10);
        ConnectHeaders staleHeaders = fence(5, 1);
        staleHeaders.addBytes(FenceHeaders.WRITER, FenceHeaders.encode("worker-b"));
        SinkRecord stale = record(KEY, value(KEY, 500), 11, staleHeaders);

        task.put(List.of(accepted, stale));

        assertThat(row(KEY)).contains(new Row(KEY, 700L, false, 7, 1L));
        assertThat(context.reports()).singleElement().satisfies(report -> {
            SinkRecord reported = report.record();
            assertThat(reported).isNotSameAs(stale);
            assertThat(reported.topic()).isEqualTo(TOPIC);
            assertThat(reported.kafkaPartition()).isEqualTo(PARTITION);
            assertThat(reported.kafkaOffset()).isEqualTo(11);
            assertThat(reported.key()).isEqualTo(KEY);
            assertThat((byte[]) reported.value()).isEqualTo((byte[]) stale.value());
            assertThat(headerTexts(reported)).containsExactlyInAnyOrder(
                    "fence.token=5", "fence.seq=1", "fence.writer=worker-b",
                    "fence.rejected.reason=STALE_TOKEN", "fence.rejected.stage=sink", "fence.rejected.highest=7.1",
                    "fence.source.topic=" + TOPIC, "fence.source.partition=" + PARTITION, "fence.source.offset=11");
            assertThat(report.error()).isInstanceOfSatisfying(FencedWriteException.class,
                    error -> assertThat(error.reason()).isEqualTo(RejectionReason.STALE_TOKEN));
        });
    }

    @Test
    void pluginMetricsCountRowsWrittenAndRecordsFencedByReason() throws SQLException {
        startTask(registry.url());

        task.put(List.of(write(KEY, 700, 7, 1, 10), write("customer-43", 100, 7, 1, 11), write(KEY, 500, 5, 1, 12),
                write(KEY, 700, 7, 1, 13)));
        task.put(List.of(write(KEY, 800, 7, 2, 14)));

        assertThat(context.metric("rows-written-total", Map.of())).isEqualTo(3.0);
        assertThat(context.metric("records-fenced-total", Map.of("reason", "STALE_TOKEN"))).isEqualTo(1.0);
        assertThat(context.metric("records-fenced-total", Map.of("reason", "DUPLICATE"))).isEqualTo(1.0);
        assertThat(context.metric("records-fenced-total", Map.of("reason", "MISSING_TOKEN"))).isZero();
        for (RejectionReason enforcerOnly : List.of(RejectionReason.LOCK_NOT_HELD, RejectionReason.FUTURE_TOKEN,
                RejectionReason.WRONG_PARTITION)) {
            assertThatThrownBy(() -> context.metric("records-fenced-total", Map.of("reason", enforcerOnly.name())))
                    .as("no sink series for the enforcer-only reason %s", enforcerOnly).hasMessageContaining("no plugin metric");
        }
        assertThat(task.counts()).containsEntry("written", 3L).containsEntry("STALE_TOKEN", 1L).containsEntry("DUPLICATE", 1L);
    }

    @Test
    void duplicateIsReportedAsDuplicate() throws SQLException {
        startTask(registry.url());

        task.put(List.of(write(KEY, 700, 7, 1, 10), write(KEY, 700, 7, 1, 11)));

        assertThat(row(KEY)).contains(new Row(KEY, 700L, false, 7, 1L));
        assertThat(reported()).containsExactly("DUPLICATE@11 highest=7.1");
    }

    @Test
    void registryOutageIsRetriedNotDeadLettered() throws SQLException {
        startTask(UNREACHABLE_REGISTRY);

        assertThatThrownBy(() -> task.put(List.of(write(KEY, 700, 7, 1, 10)))).isInstanceOf(RetriableException.class);

        assertThat(context.timeouts()).containsExactly(10L);
        assertThat(context.reports()).isEmpty();
        assertThat(row(KEY)).isEmpty();
    }

    /**
     * Values already converted to Structs (value.converter=dev.fencedwrites.avro.connect.AvroConverter) are written; a Struct the
     * mapping refuses is dead-lettered.
     */
    @Test
    void structValuesFromTheAvroConverterAreWrittenAndMisfitsDeadLettered() throws SQLException {
        startTask(registry.url());
        AvroConverter converter = new AvroConverter(
                new RestSchemaRegistryClient(registry.url(), Duration.ofSeconds(5)), false);
        SchemaAndValue struct = converter.toConnectData(TOPIC, value(KEY, 900));
        // A field named like a column the sink reserves cannot be mapped.
        Schema otherShape = SchemaBuilder.struct()
                .field("fenceToken", Schema.STRING_SCHEMA).build();
        Struct misfit = new Struct(otherShape).put("fenceToken",
                "other");

        task.put(List.of(
                new SinkRecord(TOPIC, PARTITION, Schema.OPTIONAL_STRING_SCHEMA, KEY, struct.schema(), struct.value(), 10,
                        TIMESTAMP, TimestampType.CREATE_TIME, fence(9, 1)),
                new SinkRecord(TOPIC, PARTITION, Schema.OPTIONAL_STRING_SCHEMA, "customer-misfit", otherShape, misfit, 11,
                        TIMESTAMP, TimestampType.CREATE_TIME, fence(9, 1))));

        assertThat(row(KEY)).contains(new Row(KEY, 900L, false, 9, 1L));
        assertThat(reported()).containsExactly("MALFORMED_VALUE@11 highest=");
        assertThatThrownBy(() -> converter.fromConnectData(TOPIC, Schema.STRING_SCHEMA, "not a record"))
                .isInstanceOf(DataException.class).hasMessageContaining("only records");
    }

    /**
     * Without a dead-letter queue, a record that can never be written fails the task (nothing of the batch is written); a fenced
     * one is only logged.
     */
    @Test
    void withoutADeadLetterQueueAnUnwritableRecordFailsTheTask() throws SQLException {
        Map<String, String> props = Map.of(FencedJdbcSinkConfig.CONNECTION_URL, postgres.jdbcUrl(),
                FencedJdbcSinkConfig.SCHEMA_REGISTRY_URL, registry.url(), FencedJdbcSinkConfig.TABLE_NAME, table);
        context = new RecordingSinkTaskContext(props);
        context.reporterConfigured = false;
        task.initialize(context);
        task.start(props);
        task.put(List.of(write(KEY, 700, 7, 1, 10), write(KEY, 500, 5, 1, 11))); // the stale one is fenced: logged, no failure

        assertThatThrownBy(() -> task.put(List.of(write("customer-43", 100, 1, 1, 12),
                record("customer-44", "not avro".getBytes(StandardCharsets.UTF_8), 13, fence(1, 1)))))
                .isInstanceOf(ConnectException.class).hasMessageContaining(TOPIC + "-" + PARTITION + "@13")
                .hasMessageContaining("no dead-letter queue is configured");
        assertThat(row("customer-43")).as("the batch was rolled back").isEmpty();
        assertThat(row(KEY)).contains(new Row(KEY, 700L, false, 7, 1L));
    }

    /**
     * A lock the batch cannot get in time (SQLState 55P03) is transient: retried with backoff, then written once the lock is
     * free.
     */
    @Test
    void aLockTimeoutIsRetriedAndTheBatchWrittenAfterwards() throws SQLException {
        startTask(registry.url(), "?options=-c%20lock_timeout=200");
        task.put(List.of(write(KEY, 700, 7, 1, 10)));
        try (Connection locker = postgres.dataSource().getConnection(); var statement = locker.createStatement()) {
            locker.setAutoCommit(false);
            statement.execute("LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE");

            assertThatThrownBy(() -> task.put(List.of(write(KEY, 800, 8, 1, 11)))).isInstanceOf(RetriableException.class);
            assertThat(context.timeouts()).containsExactly(10L);
            locker.rollback();
        }

        task.put(List.of(write(KEY, 800, 8, 1, 11)));
        assertThat(row(KEY)).contains(new Row(KEY, 800L, false, 8, 1L));
        assertThat(context.reports()).isEmpty();
    }

    /**
     * PostgreSQL ending the task's session in the middle of a batch (SQLState 57P01: an operator, a restart, a failover) is
     * transient: the rollback on the broken connection fails too, but the batch is retried on a new connection and written.
     */
    @Test
    void aSessionEndedByTheServerInTheMiddleOfABatchIsRetried() throws Exception {
        startTask(registry.url());
        task.put(List.of(write(KEY, 700, 7, 1, 10)));
        CompletableFuture<Void> put;
        try (Connection locker = postgres.dataSource().getConnection(); var statement = locker.createStatement()) {
            locker.setAutoCommit(false);
            statement.execute("LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE");
            put = CompletableFuture.runAsync(() -> task.put(List.of(write(KEY, 800, 8, 1, 11))));
            await().atMost(Duration.ofSeconds(30)).until(() -> terminateLockWaiters(locker) > 0);
            locker.rollback();
        }

        assertThatThrownBy(put::join).hasCauseInstanceOf(RetriableException.class)
                .hasMessageContaining("terminating connection due to administrator command");
        task.put(List.of(write(KEY, 800, 8, 1, 11)));
        assertThat(row(KEY)).contains(new Row(KEY, 800L, false, 8, 1L));
        assertThat(context.reports()).isEmpty();
    }

    /** Ends the sessions waiting for a lock (the task's, blocked by {@code locker}); returns how many. */
    private static int terminateLockWaiters(Connection locker) throws SQLException {
        try (var statement = locker.createStatement();
                var ended = statement.executeQuery("SELECT pg_terminate_backend(pid) FROM "
                        + "pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()")) {
            int count = 0;
            while (ended.next()) {
                count += ended.getBoolean(1) ? 1 : 0;
            }
            return count;
        }
    }

    /** An error no retry can fix (a column dropped under the running task) fails the task at once, with SQLState and message. */
    @Test
    void aPermanentDatabaseErrorFailsTheTaskWithTheWholeCause() throws SQLException {
        startTask(registry.url());
        task.put(List.of(write(KEY, 700, 7, 1, 10)));
        try (Connection connection = postgres.dataSource().getConnection(); var statement = connection.createStatement()) {
            statement.execute("ALTER TABLE " + table + " DROP COLUMN currency");
        }

        assertThatThrownBy(() -> task.put(List.of(write(KEY, 800, 8, 1, 11)))).isInstanceOf(ConnectException.class)
                .isNotInstanceOf(RetriableException.class)
                .hasMessageContaining("retrying cannot help").hasMessageContaining("currency")
                .hasMessageContaining("[SQLState 42703]");
        assertThat(context.timeouts()).isEmpty();
        assertThat(context.reports()).isEmpty();
    }

    @Test
    void anExistingTableOfTheWrongShapeStopsTheTaskNamingTheMismatch() throws SQLException {
        try (Connection connection = postgres.dataSource().getConnection(); var statement = connection.createStatement()) {
            statement.execute("CREATE TABLE " + table + " (resource_key TEXT, fence_token TEXT, legacy TEXT NOT NULL)");
        }

        assertThatThrownBy(() -> startTask(registry.url())).isInstanceOf(ConnectException.class)
                .hasMessageContaining("column " + table + ".fence_token is text, expected bigint or numeric")
                .hasMessageContaining("table " + table + " has no column deleted")
                .hasMessageContaining("no primary key or unique index on exactly (resource_key)")
                .hasMessageContaining("CREATE TABLE IF NOT EXISTS \"" + table + "\"");
    }

    @ParameterizedTest
    @CsvSource({"header.converter, , SimpleHeaderConverter parses",
            "header.converter, org.apache.kafka.connect.storage.SimpleHeaderConverter, got org.apache.kafka.connect.storage",
            "header.converter, org.apache.kafka.connect.storage.StringConverter, got org.apache.kafka.connect.storage",
            "consumer.override.isolation.level, , aborted enforcer transactions",
            "consumer.override.isolation.level, read_uncommitted, got read_uncommitted"})
    void aConnectorWithoutTheWorkerOverridesItNeedsIsRefusedByValidateAndAtStart(String key, String value, String says) {
        FencedJdbcSinkConnector connector = new FencedJdbcSinkConnector();
        Map<String, String> props = new HashMap<>(Map.of(FencedJdbcSinkConfig.CONNECTION_URL, postgres.jdbcUrl(),
                FencedJdbcSinkConfig.SCHEMA_REGISTRY_URL, registry.url(), FencedJdbcSinkConfig.TABLE_NAME, table,
                "header.converter", "org.apache.kafka.connect.converters.ByteArrayConverter",
                "consumer.override.isolation.level", "read_committed"));
        assertThatCode(() -> connector.start(props)).as("both set").doesNotThrowAnyException();
        Map<String, String> alias = new HashMap<>(props);
        alias.put("header.converter", "ByteArrayConverter");
        assertThatCode(() -> new FencedJdbcSinkConnector().start(alias)).as("Connect's alias").doesNotThrowAnyException();
        if (value == null) {
            props.remove(key);
        } else {
            props.put(key, value);
        }

        assertThat(errors(connector.validate(props))).singleElement().asString().startsWith(key + ": set " + key + "=")
                .contains(says);
        assertThatThrownBy(() -> new FencedJdbcSinkConnector().start(props)).isInstanceOf(ConfigException.class)
                .hasMessageContaining(key).hasMessageContaining(says);
    }

    @Test
    void connectorValidationReportsAnUnreachableDatabaseAndAMisfitTable() throws SQLException {
        FencedJdbcSinkConnector connector = new FencedJdbcSinkConnector();
        Map<String, String> good = Map.of(FencedJdbcSinkConfig.CONNECTION_URL, postgres.jdbcUrl(),
                FencedJdbcSinkConfig.SCHEMA_REGISTRY_URL, registry.url(), FencedJdbcSinkConfig.TABLE_NAME, table,
                "header.converter", "org.apache.kafka.connect.converters.ByteArrayConverter",
                "consumer.override.isolation.level", "read_committed");
        assertThat(errors(connector.validate(good))).as("a missing table is fine with auto.create").isEmpty();

        Map<String, String> unreachable = new HashMap<>(good);
        unreachable.put(FencedJdbcSinkConfig.CONNECTION_URL, "jdbc:postgresql://127.0.0.1:1/postgres");
        assertThat(errors(connector.validate(unreachable))).singleElement().asString()
                .startsWith("connection.url: cannot connect to the database");

        Map<String, String> noRegistry = new HashMap<>(good);
        noRegistry.put(FencedJdbcSinkConfig.SCHEMA_REGISTRY_URL, UNREACHABLE_REGISTRY);
        assertThat(errors(connector.validate(noRegistry))).singleElement().asString()
                .startsWith("schema.registry.url: cannot reach the schema registry");

        Map<String, String> noAutoCreate = new HashMap<>(good);
        noAutoCreate.put(FencedJdbcSinkConfig.AUTO_CREATE, "false");
        assertThat(errors(connector.validate(noAutoCreate))).singleElement().asString()
                .contains("table.name: table " + table + " does not exist").contains("set auto.create=true");

        try (Connection connection = postgres.dataSource().getConnection(); var statement = connection.createStatement()) {
            statement.execute("CREATE TABLE " + table + " (resource_key TEXT PRIMARY KEY)");
        }
        assertThat(errors(connector.validate(good))).singleElement().asString().contains("has no column fence_token");
    }

    private static List<String> errors(Config config) {
        List<String> errors = new ArrayList<>();
        config.configValues()
                .forEach(value -> value.errorMessages().forEach(message -> errors.add(value.name() + ": " + message)));
        return errors;
    }

    /** Offsets to commit cover only records a put() finished (written or reported), never those of a put() that failed. */
    @Test
    void preCommitCommitsOnlyRecordsThatWereHandled() throws SQLException {
        startTask(registry.url());
        TopicPartition partition = new TopicPartition(TOPIC, PARTITION);
        Map<TopicPartition, OffsetAndMetadata> consumed = Map
                .of(partition, new OffsetAndMetadata(100));

        assertThat(task.preCommit(consumed)).as("nothing handled yet").isEmpty();
        task.put(List.of(write(KEY, 700, 7, 1, 10), write(KEY, 500, 5, 1, 11)));

        assertThat(task.preCommit(consumed))
                .containsExactly(Map.entry(partition, new OffsetAndMetadata(12)));
        task.stop();
        startTask(UNREACHABLE_REGISTRY);
        assertThatThrownBy(() -> task.put(List.of(write(KEY, 800, 8, 1, 12)))).isInstanceOf(RetriableException.class);
        assertThat(task.preCommit(consumed)).as("a failed put() commits nothing").isEmpty();
    }

    @Test
    void registryOutageFailsTheTaskAfterMaxRetries() throws SQLException {
        startTask(UNREACHABLE_REGISTRY);
        List<SinkRecord> batch = List.of(write(KEY, 700, 7, 1, 10));
        for (int retry = 0; retry < 2; retry++) {
            assertThatThrownBy(() -> task.put(batch)).isInstanceOf(RetriableException.class);
        }

        assertThatThrownBy(() -> task.put(batch)).isInstanceOf(ConnectException.class).isNotInstanceOf(RetriableException.class);

        assertThat(context.timeouts()).containsExactly(10L, 20L);
        assertThat(context.reports()).isEmpty();
        assertThat(row(KEY)).isEmpty();
    }

    /** The backoff doubles up to its max; 0 stays 0 (Connect then waits for its next offset commit, never spins). */
    @Test
    void theBackoffDoublesUpToItsMax() {
        assertThat(List.of(1, 2, 3, 4, 5).stream().map(a -> FencedJdbcSinkTask.backoffMillis(a, 10, 40)))
                .containsExactly(10L, 20L, 40L, 40L, 40L);
        assertThat(List.of(1, 2, 3, 17, 1_000_000).stream().map(a -> FencedJdbcSinkTask.backoffMillis(a, 0, 60_000)))
                .containsExactly(0L, 0L, 0L, 0L, 0L);
    }

    /**
     * By default (max.retries=-1) a transient outage never ends the task (Connect does not restart a failed task by
     * itself): it retries with a backoff that doubles up to retry.backoff.max.ms.
     */
    @Test
    void aTransientOutageIsRetriedUntilItEndsByDefault() {
        startTask(UNREACHABLE_REGISTRY, Map.of(FencedJdbcSinkConfig.RETRY_BACKOFF_MS, "10",
                FencedJdbcSinkConfig.RETRY_BACKOFF_MAX_MS, "40"));
        List<SinkRecord> batch = List.of(write(KEY, 700, 7, 1, 10));

        for (int retry = 0; retry < 25; retry++) {
            assertThatThrownBy(() -> task.put(batch)).isInstanceOf(RetriableException.class);
        }

        assertThat(context.timeouts()).hasSize(25).startsWith(10L, 20L, 40L, 40L).containsOnly(10L, 20L, 40L);
    }

    @Test
    void unknownSchemaIdIsDeadLetteredAsMalformedValue() throws SQLException {
        startTask(registry.url());
        byte[] withUnknownId = value(KEY, 700);
        ByteBuffer.wrap(withUnknownId).putInt(1, 99);

        task.put(List.of(record(KEY, withUnknownId, 10, fence(7, 1))));

        assertThat(reported()).containsExactly("MALFORMED_VALUE@10 highest=");
        assertThat(context.reports().get(0).error()).hasMessageContaining("schema id 99").hasMessageContaining("HTTP 404");
        assertThat(row(KEY)).isEmpty();
    }

    @Test
    void notWireFormatValueIsDeadLetteredAsMalformedValue() throws SQLException {
        startTask(registry.url());

        task.put(List.of(record(KEY, "hello".getBytes(StandardCharsets.UTF_8), 10, fence(7, 1))));

        assertThat(reported()).containsExactly("MALFORMED_VALUE@10 highest=");
        assertThat(row(KEY)).isEmpty();
    }

    @Test
    void keyTheDatabaseRefusesIsDeadLetteredAndTheRestOfTheBatchIsWritten() throws SQLException {
        startTask(registry.url());
        SinkRecord refused = record("customer\u0000nul", serializer.serialize(TOPIC, summary("customer-nul", 100)), 10,
                fence(7, 1));
        SinkRecord good = write("customer-44", 300, 7, 1, 11);

        task.put(List.of(refused, good));

        assertThat(reported()).containsExactly("MALFORMED_VALUE@10 highest=");
        assertThat(row("customer-44")).contains(new Row("customer-44", 300L, false, 7, 1L));
    }

    @Test
    void valueTheDatabaseRefusesIsDeadLetteredAndTheRestOfTheBatchIsWritten() throws SQLException {
        startTask(registry.url());
        SinkRecord refused = record("customer-nul", serializer.serialize(TOPIC, summary("customer\u0000nul", 100)), 10,
                fence(7, 1));
        SinkRecord good = write("customer-43", 300, 7, 1, 11);

        task.put(List.of(refused, good));

        assertThat(reported()).containsExactly("MALFORMED_VALUE@10 highest=");
        assertThat(context.reports().get(0).error()).hasMessageContaining("the database refused the record");
        assertThat(row("customer-nul")).isEmpty();
        assertThat(row("customer-43")).contains(new Row("customer-43", 300L, false, 7, 1L));
    }

    @Test
    void missingTokenIsReportedAsMissingToken() throws SQLException {
        startTask(registry.url());

        task.put(List.of(record(KEY, value(KEY, 700), 10, new ConnectHeaders())));

        assertThat(reported()).containsExactly("MISSING_TOKEN@10 highest=");
        assertThat(row(KEY)).isEmpty();
    }

    /** FenceStamp.parse is shared, so the lease id sent as the token is refused here as in the enforcer. */
    @Test
    void leaseIdSentAsTokenIsReportedAsLeaseAsTokenAndWritesNoRow() throws SQLException {
        startTask(registry.url());
        ConnectHeaders headers = fence(7587869054862721234L, 1);
        headers.addBytes(FenceHeaders.LEASE, FenceHeaders.encode(7587869054862721234L));

        task.put(List.of(record(KEY, value(KEY, 700), 10, headers)));

        assertThat(reported()).containsExactly("LEASE_AS_TOKEN@10 highest=");
        assertThat(row(KEY)).isEmpty();
    }

    @Test
    void nullKeyIsReportedAsMissingKey() {
        startTask(registry.url());

        task.put(List.of(record(null, value(KEY, 700), 10, fence(7, 1))));

        assertThat(reported()).containsExactly("MISSING_KEY@10 highest=");
    }

    @Test
    void markerWithValueIsReportedAsInvalidMarker() throws SQLException {
        startTask(registry.url());
        ConnectHeaders marker = fence(7, 0);
        marker.addBytes(FenceHeaders.OP, FenceHeaders.encode(FenceOp.FENCE.name()));

        task.put(List.of(record(KEY, value(KEY, 700), 10, marker)));

        assertThat(reported()).containsExactly("INVALID_MARKER@10 highest=");
        assertThat(row(KEY)).isEmpty();
    }

    @Test
    void deleteKeepsFence() throws SQLException {
        startTask(registry.url());
        task.put(List.of(write(KEY, 700, 7, 1, 10)));

        task.put(List.of(record(KEY, null, 11, fence(8, 1))));

        assertThat(row(KEY)).contains(new Row(null, null, true, 8, 1L));
        assertThat(context.reports()).isEmpty();
    }

    // --- FENCE markers: the fence at the resource on takeover ---

    /**
     * A winning marker raises the row's fence; a write that went around the enforcer with a token below it is refused at the
     * database.
     */
    @Test
    void markerFromTheMarkersTopicRaisesTheRowsFenceSoAWriteBelowItIsRefused() throws SQLException {
        startTask(registry.url());
        task.put(List.of(write(KEY, 700, 5, 1, 10)));

        task.put(List.of(marker(KEY, 7, FenceTopics.MARKERS, TOPIC, 20)));
        task.put(List.of(write(KEY, 600, 6, 1, 11)));

        assertThat(row(KEY)).contains(new Row(KEY, 700L, false, 7, 0L));
        assertThat(reported()).containsExactly("STALE_TOKEN@11 highest=7.0");
        assertThat(context.metric("fences-raised-total", Map.of())).isEqualTo(1.0);
        assertThat(task.counts()).containsEntry("fences_raised", 1L).containsEntry("written", 1L);
    }

    /**
     * The markers topic and the accepted topic are not ordered against each other: a marker behind its holder's write changes
     * nothing and is not dead-lettered.
     */
    @Test
    void markerTheRowsFenceAlreadyCoversIsNeitherAppliedNorDeadLettered() throws SQLException {
        startTask(registry.url());
        task.put(List.of(write(KEY, 700, 7, 1, 10)));

        task.put(List.of(marker(KEY, 7, FenceTopics.MARKERS, TOPIC, 20), marker(KEY, 3, FenceTopics.MARKERS, TOPIC, 21)));

        assertThat(row(KEY)).contains(new Row(KEY, 700L, false, 7, 1L));
        assertThat(context.reports()).isEmpty();
        assertThat(task.counts()).containsEntry("fences_raised", 0L);
    }

    /**
     * With table.name=${topic}, a marker goes to the table of the topic it names in fence.marker.target.topic, not the markers
     * topic's.
     */
    @Test
    void markerGoesToTheTableOfItsTargetTopicWhenTablesAreNamedByTopic() throws SQLException {
        String prefix = table.length() > 30 ? table.substring(0, 30) : table;
        startTask(registry.url(), Map.of(FencedJdbcSinkConfig.TABLE_NAME, prefix + "_${topic}"));
        task.put(List.of(write(KEY, 700, 5, 1, 10)));

        task.put(List.of(marker(KEY, 9, FenceTopics.MARKERS, TOPIC, 20),
                marker("customer-43", 4, FenceTopics.MARKERS, TOPIC, 21)));

        table = prefix + "_fenced_writes_accepted";
        assertThat(row(KEY)).contains(new Row(KEY, 700L, false, 9, 0L));
        assertThat(row("customer-43")).contains(new Row(null, null, true, 4, 0L));
        assertThat(context.reports()).isEmpty();
    }

    /**
     * The takeover marker can reach the sink before the previous holder's last accepted write (the
     * markers topic is not ordered with the accepted topic): it overtakes nothing, so that write
     * still lands; it waits, holding back its partition's committed offset, and is applied once the
     * row reaches the fence it superseded, so a write below it is then refused at the database.
     */
    @Test
    void markerAheadOfThePreviousHoldersLastAcceptedWriteWaitsForItThenRaisesTheRow() throws SQLException {
        startTask(registry.url());
        TopicPartition markers = new TopicPartition(FenceTopics.MARKERS, 0);
        Map<TopicPartition, OffsetAndMetadata> consumed = Map.of(markers, new OffsetAndMetadata(21));
        task.put(List.of(write(KEY, 700, 8, 3, 10)));

        task.put(List.of(takeover(KEY, 9, "8.4", 20)));
        task.put(List.of());

        assertThat(row(KEY)).contains(new Row(KEY, 700L, false, 8, 3L));
        assertThat(task.preCommit(consumed)).as("the waiting marker's offset is not committed")
                .containsExactly(Map.entry(markers, new OffsetAndMetadata(20)));
        assertThat(context.metric("markers-waiting", Map.of())).isEqualTo(1.0);

        task.put(List.of(write(KEY, 800, 8, 4, 11)));
        task.put(List.of(write(KEY, 900, 8, 5, 12)));

        assertThat(row(KEY)).contains(new Row(KEY, 800L, false, 9, 0L));
        assertThat(reported()).containsExactly("STALE_TOKEN@12 highest=9.0");
        assertThat(task.preCommit(consumed)).containsExactly(Map.entry(markers, new OffsetAndMetadata(21)));
        assertThat(context.metric("markers-waiting", Map.of())).isZero();
        assertThat(task.counts()).containsEntry("fences_raised", 1L);
    }

    /** A row at (T, no seq) is below (T, s): the marker that superseded (T, s) waits for that write. */
    @Test
    void aRowWithoutASeqIsBelowThePreviousFenceOfTheSameToken() throws SQLException {
        startTask(registry.url());
        ConnectHeaders noSeq = new ConnectHeaders();
        noSeq.addBytes(FenceHeaders.TOKEN, FenceHeaders.encode(8));
        task.put(List.of(record(KEY, value(KEY, 700), 10, noSeq)));

        task.put(List.of(takeover(KEY, 9, "8.4", 20)));
        task.put(List.of(write(KEY, 800, 8, 4, 11)));

        assertThat(row(KEY)).contains(new Row(KEY, 800L, false, 9, 0L));
        assertThat(context.reports()).as("the previous holder's (8, 4) is written, not refused at the sink").isEmpty();
    }

    /**
     * A marker still waiting when the task stops is delivered again (its offset was held back) and
     * applied when its row catches up, also when the catching-up write comes in the same batch.
     */
    @Test
    void aWaitingMarkerDeliveredAgainAfterARestartIsAppliedWhenItsRowCatchesUp() throws SQLException {
        startTask(registry.url());
        task.put(List.of(write(KEY, 700, 8, 3, 10)));
        task.put(List.of(takeover(KEY, 9, "8.4", 20)));
        task.stop();

        startTask(registry.url());
        task.put(List.of(takeover(KEY, 9, "8.4", 20), write(KEY, 800, 8, 4, 11)));

        assertThat(row(KEY)).contains(new Row(KEY, 800L, false, 9, 0L));
        assertThat(context.reports()).isEmpty();
    }

    /** Past fence.marker.pending.max, the oldest waiting markers are given up, counted, and hold back nothing. */
    @Test
    void markersPastThePendingMaxAreGivenUpOldestFirst() throws SQLException {
        startTask(registry.url(), Map.of(FencedJdbcSinkConfig.MARKER_PENDING_MAX, "1"));
        TopicPartition markers = new TopicPartition(FenceTopics.MARKERS, 0);
        task.put(List.of(write(KEY, 700, 8, 3, 10), write("customer-43", 700, 8, 3, 11), write("customer-44", 700, 8, 3, 12)));

        task.put(List.of(takeover(KEY, 9, "8.4", 20)));
        task.put(List.of(takeover("customer-43", 9, "8.4", 21), takeover("customer-44", 9, "8.4", 22)));

        assertThat(context.metric("markers-given-up-total", Map.of())).isEqualTo(2.0);
        assertThat(context.metric("markers-waiting", Map.of())).isEqualTo(1.0);
        assertThat(task.preCommit(Map.of(markers, new OffsetAndMetadata(23))))
                .containsExactly(Map.entry(markers, new OffsetAndMetadata(22)));
        task.put(List.of(write(KEY, 800, 8, 4, 13), write("customer-43", 800, 8, 4, 14), write("customer-44", 800, 8, 4, 15)));
        assertThat(row(KEY)).as("given up").contains(new Row(KEY, 800L, false, 8, 4L));
        assertThat(row("customer-43")).as("given up").contains(new Row("customer-43", 800L, false, 8, 4L));
        assertThat(row("customer-44")).as("still waiting, then applied").contains(new Row("customer-44", 800L, false, 9, 0L));
    }

    /** A takeover marker from the enforcer: fence {@code token.0}, superseding {@code previous}. */
    private static SinkRecord takeover(String key, long token, String previous, long offset) {
        SinkRecord marker = marker(key, token, FenceTopics.MARKERS, TOPIC, offset);
        marker.headers().addBytes(FenceHeaders.MARKER_PREVIOUS, FenceHeaders.encode(previous));
        return marker;
    }

    /**
     * A shared markers topic carries other pipelines' markers: one for a topic this connector does not read raises no fence here.
     */
    @Test
    void markerForATopicTheConnectorDoesNotReadIsIgnored() throws SQLException {
        startTask(registry.url(), Map.of(SinkTask.TOPICS_CONFIG, TOPIC + "," + FenceTopics.MARKERS));
        task.put(List.of(write(KEY, 700, 5, 1, 10)));

        task.put(List.of(marker(KEY, 9, FenceTopics.MARKERS, "orders-accepted", 20),
                marker("customer-43", 4, FenceTopics.MARKERS, "orders-accepted", 21)));

        assertThat(row(KEY)).contains(new Row(KEY, 700L, false, 5, 1L));
        assertThat(row("customer-43")).isEmpty();
        assertThat(context.reports()).isEmpty();
        assertThat(task.counts()).containsEntry("fences_raised", 0L);
    }

    /** With topics.regex, a marker applies when its target topic matches. */
    @Test
    void markerForATopicMatchingTopicsRegexIsApplied() throws SQLException {
        startTask(registry.url(),
                Map.of(SinkTask.TOPICS_CONFIG, "", SinkTask.TOPICS_REGEX_CONFIG, "fenced-writes-(accepted|markers)"));
        task.put(List.of(write(KEY, 700, 5, 1, 10)));

        task.put(List.of(marker(KEY, 9, FenceTopics.MARKERS, TOPIC, 20)));

        assertThat(row(KEY)).contains(new Row(KEY, 700L, false, 9, 0L));
    }

    /**
     * A write keeps the input's headers byte for byte through the enforcer, so a producer can put
     * fence.marker.target.topic on a write; only a FENCE marker is routed by it, a write goes to its own topic's table.
     */
    @Test
    void writeCarryingAMarkerTargetHeaderGoesToItsOwnTopicsTable() throws SQLException {
        String prefix = table.length() > 30 ? table.substring(0, 30) : table;
        startTask(registry.url(), Map.of(FencedJdbcSinkConfig.TABLE_NAME, prefix + "_${topic}"));
        ConnectHeaders headers = fence(5, 1);
        headers.addBytes(FenceHeaders.MARKER_TARGET_TOPIC, FenceHeaders.encode("victim"));

        task.put(List.of(record(KEY, value(KEY, 700), 10, headers)));

        table = prefix + "_fenced_writes_accepted";
        assertThat(row(KEY)).contains(new Row(KEY, 700L, false, 5, 1L));
        try (Connection connection = postgres.dataSource().getConnection();
                Statement statement = connection.createStatement();
                ResultSet rs = statement.executeQuery("SELECT to_regclass('" + prefix + "_victim') IS NULL")) {
            rs.next();
            assertThat(rs.getBoolean(1)).as("table %s_victim created by a write's header", prefix).isTrue();
        }
    }

    /** The unguarded control sink (fence.guard.enabled=false) ignores markers, as it ignores the fence. */
    @Test
    void unguardedSinkIgnoresMarkers() throws SQLException {
        startTask(registry.url(), Map.of(FencedJdbcSinkConfig.FENCE_GUARD_ENABLED, "false"));
        task.put(List.of(write(KEY, 700, 5, 1, 10)));

        task.put(List.of(marker(KEY, 9, FenceTopics.MARKERS, TOPIC, 20)));

        assertThat(row(KEY)).contains(new Row(KEY, 700L, false, 5, 1L));
        assertThat(context.reports()).isEmpty();
    }

    /** A marker as the enforcer publishes it: null value, the input's headers plus the target topic. */
    private static SinkRecord marker(String key, long token, String topic, String target, long offset) {
        ConnectHeaders headers = fence(token, 0);
        headers.addBytes(FenceHeaders.OP, FenceHeaders.encode("FENCE"));
        headers.addBytes(FenceHeaders.MARKER_TARGET_TOPIC, FenceHeaders.encode(target));
        return new SinkRecord(topic, 0, Schema.OPTIONAL_STRING_SCHEMA, key, Schema.OPTIONAL_BYTES_SCHEMA, null,
                offset, TIMESTAMP, TimestampType.CREATE_TIME, headers);
    }

    private void startTask(String registryUrl) {
        startTask(registryUrl, "");
    }

    private void startTask(String registryUrl, Map<String, String> overrides) {
        Map<String, String> props = new HashMap<>(Map.of(
                FencedJdbcSinkConfig.CONNECTION_URL, postgres.jdbcUrl(),
                FencedJdbcSinkConfig.SCHEMA_REGISTRY_URL, registryUrl,
                FencedJdbcSinkConfig.TABLE_NAME, table,
                SinkTask.TOPICS_CONFIG, TOPIC + "," + FenceTopics.MARKERS));
        props.putAll(overrides);
        context = new RecordingSinkTaskContext(props);
        task.initialize(context);
        task.start(props);
    }

    /** @param urlOptions appended to the JDBC URL, e.g. session settings */
    private void startTask(String registryUrl, String urlOptions) {
        String url = postgres.jdbcUrl();
        Map<String, String> props = Map.of(
                FencedJdbcSinkConfig.CONNECTION_URL, urlOptions.isEmpty() ? url : url + "&" + urlOptions.substring(1),
                FencedJdbcSinkConfig.SCHEMA_REGISTRY_URL, registryUrl,
                FencedJdbcSinkConfig.TABLE_NAME, table,
                SinkTask.TOPICS_CONFIG, TOPIC + "," + FenceTopics.MARKERS,
                FencedJdbcSinkConfig.MAX_RETRIES, "2",
                FencedJdbcSinkConfig.RETRY_BACKOFF_MS, "10");
        context = new RecordingSinkTaskContext(props);
        task.initialize(context);
        task.start(props);
    }

    /** A record of {@code key} with a summary of {@code amountMinor}, stamped {@code token.seq}. */
    private SinkRecord write(String key, long amountMinor, long token, long seq, long offset) {
        return record(key, value(key, amountMinor), offset, fence(token, seq));
    }

    /** What Connect hands the task: key and value from String and ByteArray converters, headers as bytes. */
    private static SinkRecord record(String key, byte[] value, long offset, ConnectHeaders headers) {
        return new SinkRecord(TOPIC, PARTITION, Schema.OPTIONAL_STRING_SCHEMA, key, Schema.OPTIONAL_BYTES_SCHEMA, value,
                offset, TIMESTAMP, TimestampType.CREATE_TIME, headers);
    }

    private static ConnectHeaders fence(long token, long seq) {
        ConnectHeaders headers = new ConnectHeaders();
        headers.addBytes(FenceHeaders.TOKEN, FenceHeaders.encode(token));
        headers.addBytes(FenceHeaders.SEQ, FenceHeaders.encode(seq));
        return headers;
    }

    /** Confluent wire-format bytes of a summary for {@code customerId}. */
    private byte[] value(String customerId, long amountMinor) {
        return serializer.serialize(TOPIC, summary(customerId, amountMinor));
    }

    private static BillingSummary summary(String customerId, long amountMinor) {
        return BillingSummary.newBuilder()
                .setCustomerId(customerId)
                .setBillingPeriod("2026-11")
                .setAmountMinor(amountMinor)
                .setCurrency("EUR")
                .setLineItems(3)
                .setComputedAt(Instant.parse("2026-11-30T10:00:00Z"))
                .setComputedBy("worker-a")
                .build();
    }

    /** Each report as {@code REASON@offset highest=fence}, read from the reported record's headers. */
    private List<String> reported() {
        return context.reports().stream()
                .map(report -> lastText(report.record(), FenceHeaders.REJECTED_REASON) + "@" + report.record().kafkaOffset()
                        + " highest=" + lastText(report.record(), FenceHeaders.REJECTED_HIGHEST))
                .toList();
    }

    private static String lastText(SinkRecord record, String name) {
        Header header = record.headers().lastWithName(name);
        return header == null ? null : new String((byte[]) header.value(), StandardCharsets.UTF_8);
    }

    /** Every header as {@code name=UTF-8 text}. */
    private static List<String> headerTexts(SinkRecord record) {
        List<String> texts = new ArrayList<>();
        for (Header header : record.headers()) {
            texts.add(header.key() + "=" + new String((byte[]) header.value(), StandardCharsets.UTF_8));
        }
        return texts;
    }

    /** The row's customer id, amount, {@code deleted} and fence; {@code fenceSeq} null when absent. */
    record Row(String customerId, Long amountMinor, boolean deleted, long fenceToken, Long fenceSeq) {
    }

    private Optional<Row> row(String key) throws SQLException {
        // The data columns appear with the first record written (auto.evolve), so read them only from a row.
        try (Connection connection = postgres.dataSource().getConnection();
                PreparedStatement statement = connection
                        .prepareStatement("SELECT to_jsonb(t) FROM " + table + " t WHERE resource_key = ?")) {
            statement.setString(1, key);
            try (ResultSet rs = statement.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                var json = new ObjectMapper().readTree(rs.getString(1));
                return Optional.of(new Row(json.path("customer_id").isNull() ? null : json.path("customer_id").asText(null),
                        json.path("amount_minor").isNull() || json.path("amount_minor").isMissingNode()
                                ? null
                                : json.path("amount_minor").asLong(),
                        json.path("deleted").asBoolean(), json.path("fence_token").asLong(),
                        json.path("fence_seq").isNull() ? null : json.path("fence_seq").asLong()));
            } catch (JsonProcessingException e) {
                throw new IllegalStateException(e);
            }
        }
    }
}
