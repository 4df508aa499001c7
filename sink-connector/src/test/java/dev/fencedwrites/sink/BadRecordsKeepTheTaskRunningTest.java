package dev.fencedwrites.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencedwrites.contract.FenceHeaders;
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
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.sink.SinkRecord;
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
 * At the sink task, on real PostgreSQL (embedded): names that are SQL keywords, data the
 * database refuses row by row, tables checked at first use, keys as bytes, and rejected copies on
 * the sink's topic. Values are Structs (as {@code dev.fencedwrites.avro.connect.AvroConverter} gives them),
 * so no registry is asked; the real Connect worker's view is in local-stack's {@code SinkBadRecordsIT}.
 */
@Tag("process")
class BadRecordsKeepTheTaskRunningTest {
    private static final int PARTITION = 0;
    private static final long TIMESTAMP = 1_790_000_000_000L;
    /** A user-defined record type whose field names are SQL keywords (and one camel-case name). */
    private static final Schema KEYWORDS = SchemaBuilder.struct().name("KeywordOrder")
            .field("order", Schema.STRING_SCHEMA).field("user", Schema.STRING_SCHEMA)
            .field("group", Schema.OPTIONAL_STRING_SCHEMA)
            .field("offset", Schema.INT64_SCHEMA).field("limit", Schema.INT32_SCHEMA).field("from", Schema.OPTIONAL_STRING_SCHEMA)
            .field("select", Schema.BOOLEAN_SCHEMA).field("whereTo", Schema.OPTIONAL_STRING_SCHEMA).build();
    /** BillingSummary's shape, written to tables whose constraints the tests choose. */
    private static final Schema SUMMARY = SchemaBuilder.struct().name("Summary")
            .field("customerId", Schema.STRING_SCHEMA).field("amountMinor", Schema.INT64_SCHEMA)
            .field("lineItems", Schema.INT32_SCHEMA)
            .field("computedBy", Schema.STRING_SCHEMA).build();

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();
    private static FakeSchemaRegistry registry;

    private final FencedJdbcSinkTask task = new FencedJdbcSinkTask();
    private RecordingSinkTaskContext context;
    /** This test's own topic, so its tables are its own. */
    private String topic;

    @BeforeAll
    static void startServices() throws IOException {
        registry = FakeSchemaRegistry.serving(1, BillingSummary.getClassSchema().toString());
    }

    @AfterAll
    static void stopServices() throws IOException {
        registry.close();
    }

    @BeforeEach
    void nameTopic(TestInfo test) {
        String method = test.getTestMethod().orElseThrow().getName().toLowerCase(Locale.ROOT);
        topic = (method.length() > 40 ? method.substring(0, 40) : method) + "_"
                + Integer.toUnsignedString(test.getDisplayName().hashCode());
    }

    @AfterEach
    void stopTask() {
        task.stop();
    }

    @Test
    void fieldsNamedLikeKeywordsLandInAKeywordTopicsTable() throws SQLException {
        topic = "order";
        startTask(Map.of());

        task.put(List.of(record("o-1", keywords("first", 7), 10, fence(3, 1)),
                record("o-2", keywords("second", 8), 11, fence(3, 1))));
        task.put(List.of(record("o-1", null, 12, fence(3, 2))));

        assertThat(context.reports()).isEmpty();
        assertThat(query(
                "SELECT \"order\", \"user\", \"offset\", \"limit\", \"select\"::text, where_to, deleted::text FROM \"order\" "
                        + "ORDER BY resource_key"))
                .containsExactly("null|null|null|null|null|null|true", "second|user-8|8|8|true|there|false");
    }

    @ParameterizedTest(name = "topic {0} is table {1}")
    @CsvSource({"select,select", "Billing.Summary-2026,billing_summary_2026", "user,user", "1st-topic,1st_topic"})
    void topicNamesThatAreKeywordsOrHoldDotsAndDashesMapToTheirTable(String recordTopic, String table) throws SQLException {
        topic = recordTopic;
        startTask(Map.of());

        task.put(List.of(record("k", keywords("x", 1), 10, fence(1, 1))));

        assertThat(context.reports()).isEmpty();
        assertThat(query("SELECT resource_key, \"order\" FROM \"" + table + "\"")).containsExactly("k|x");
    }

    @Test
    void aSchemaQualifiedTableNameWritesIntoThatSchema() throws SQLException {
        execute("CREATE SCHEMA IF NOT EXISTS \"Sales\"");
        startTask(Map.of(FencedJdbcSinkConfig.TABLE_NAME, "\"Sales\".\"Order Lines\""));

        task.put(List.of(record("k", keywords("x", 1), 10, fence(1, 1)), record("k", keywords("y", 2), 11, fence(1, 0))));

        assertThat(query("SELECT resource_key, \"order\", fence_seq FROM \"Sales\".\"Order Lines\"")).containsExactly("k|x|1");
        assertThat(reasons()).containsExactly("OUT_OF_ORDER@11");
    }

    @Test
    void aFieldNamedLikeASystemColumnIsDeadLetteredAndTheOthersWritten() throws SQLException {
        startTask(Map.of());
        Schema withXmin = SchemaBuilder.struct().name("Clash").field("xmin", Schema.STRING_SCHEMA).build();

        task.put(List.of(record("bad", new Struct(withXmin).put("xmin", "x"), 10, fence(1, 1)),
                record("good", keywords("x", 1), 11, fence(1, 1))));

        assertThat(reasons()).containsExactly("MALFORMED_VALUE@10");
        assertThat(context.reports().get(0).error()).hasMessageContaining("xmin").hasMessageContaining("system column");
        assertThat(query("SELECT resource_key FROM \"" + topic + "\"")).containsExactly("good");
    }

    /**
     * A NUL in the key, a NUL in a value, a key too long for the index (54000), a number out of the
     * column's range (22003), a NULL into NOT NULL (23502) and a CHECK (23514): a put() of nothing
     * else dead-letters each of them, then a put() mixing them with good rows writes the good ones.
     */
    @Test
    void rowsTheDatabaseRefusesAreDeadLetteredOneByOneAlsoWhenNoRowOfTheBatchIsGood() throws SQLException {
        execute("CREATE TABLE \"" + topic
                + "\" (resource_key TEXT PRIMARY KEY, deleted BOOLEAN NOT NULL DEFAULT FALSE, fence_token BIGINT NOT NULL,"
                + " fence_seq BIGINT NOT NULL, updated_at TIMESTAMPTZ NOT NULL DEFAULT now(), customer_id TEXT, amount_minor "
                + "NUMERIC(5),"
                + " line_items INTEGER CHECK (line_items >= 0), computed_by TEXT)");
        startTask(Map.of());

        task.put(badRows(10));

        assertThat(reasons()).containsExactly("MALFORMED_VALUE@10", "MALFORMED_VALUE@11", "MALFORMED_VALUE@12",
                "MALFORMED_VALUE@13",
                "MALFORMED_VALUE@14", "MALFORMED_VALUE@15");
        assertThat(context.reports()).extracting(report -> report.error().getMessage())
                .allMatch(m -> m.contains("the database refused the record"));
        assertThat(context.reports().get(0).error()).hasMessageContaining("0x00");
        assertThat(context.reports().get(2).error()).hasMessageContaining("index row");
        assertThat(context.reports().get(3).error()).hasMessageContaining("numeric field overflow");
        assertThat(context.reports().get(4).error()).hasMessageContaining("fence_seq");
        assertThat(context.reports().get(5).error()).hasMessageContaining("line_items_check");
        assertThat(query("SELECT count(*) FROM \"" + topic + "\"")).containsExactly("0");

        context.reports().clear();
        List<SinkRecord> mixed = new ArrayList<>(badRows(20));
        mixed.add(1, record("good-1", summary("good-1", 100, 1, "a"), 30, fence(5, 1)));
        mixed.add(record("good-2", summary("good-2", 200, 2, "b"), 31, fence(5, 1)));
        task.put(mixed);

        assertThat(reasons()).hasSize(6).allMatch(reason -> reason.startsWith("MALFORMED_VALUE@2"));
        assertThat(query("SELECT resource_key, amount_minor, line_items, computed_by, fence_token, fence_seq FROM \"" + topic
                + "\" ORDER BY 1"))
                .containsExactly("good-1|100|1|a|5|1", "good-2|200|2|b|5|1");
    }

    /**
     * A statement that holds only refused rows (a key's second record goes into the second statement) is that row's problem only.
     */
    @Test
    void aStatementOfOnlyRefusedRowsBesideGoodStatementsDeadLettersJustThoseRows() throws SQLException {
        startTask(Map.of());

        task.put(List.of(record("k", summary("k", 1, 1, "a"), 10, fence(1, 1)),
                record("k", summary("k", 2, 2, "bad\u0000"), 11, fence(1, 2)),
                record("j", summary("j", 3, 3, "c"), 12, fence(1, 1))));

        assertThat(reasons()).containsExactly("MALFORMED_VALUE@11");
        assertThat(query("SELECT resource_key, amount_minor, fence_seq FROM \"" + topic + "\" ORDER BY 1"))
                .containsExactly("j|3|1", "k|1|1");
    }

    /** A record schema with more columns than a PostgreSQL table may have (54011) is refused for its records only. */
    @Test
    void aSchemaTooWideForATableIsDeadLetteredAndTheOtherSchemasRowsWritten() throws SQLException {
        SchemaBuilder wide = SchemaBuilder.struct().name("Wide");
        for (int i = 0; i < 1_700; i++) {
            wide.field("f" + i, Schema.OPTIONAL_INT32_SCHEMA);
        }
        Schema tooWide = wide.build();
        startTask(Map.of());

        task.put(List.of(record("good", keywords("x", 1), 10, fence(1, 1)), record("wide", new Struct(tooWide), 11, fence(1, 1)),
                record("good-2", keywords("y", 2), 12, fence(1, 1))));

        assertThat(reasons()).containsExactly("MALFORMED_VALUE@11");
        assertThat(context.reports().get(0).error()).hasMessageContaining("refused the columns of schema Wide")
                .hasMessageContaining("1600");
        assertThat(query("SELECT resource_key, \"order\" FROM \"" + topic + "\" ORDER BY 1")).containsExactly("good|x",
                "good-2|y");
    }

    /**
     * A pre-existing ${topic} table is checked at its first use like a fixed one, and a misfit fails the task naming it, before
     * anything is written.
     */
    @ParameterizedTest(name = "{1}")
    @CsvSource(delimiter = '|', value = {
            "fence_token TEXT NOT NULL|fence_token is text, expected bigint or numeric",
            "fence_token BIGINT|fence_token must be NOT NULL",
            "fence_token BIGINT NOT NULL|no primary key or unique index on exactly (resource_key)"})
    void anExistingPerTopicTableThatDoesNotFitFailsTheTaskAtFirstUseNamingTheMismatch(String fenceColumn, String mismatch)
            throws SQLException {
        String key = mismatch.startsWith("no primary key") ? "resource_key TEXT" : "resource_key TEXT PRIMARY KEY";
        execute("CREATE TABLE \"" + topic + "\" (" + key + ", deleted BOOLEAN NOT NULL DEFAULT FALSE, " + fenceColumn
                + ", fence_seq BIGINT,"
                + " updated_at TIMESTAMPTZ NOT NULL DEFAULT now())");
        startTask(Map.of());

        assertThatThrownBy(() -> task.put(List.of(record("k", keywords("x", 1), 10, fence(1, 1)))))
                .isInstanceOf(ConnectException.class)
                .hasMessageContaining("table " + topic + " does not fit the sink").hasMessageContaining(mismatch)
                .hasMessageContaining("CREATE TABLE IF NOT EXISTS \"" + topic + "\"");
        assertThat(context.reports()).isEmpty();
        assertThat(query("SELECT count(*) FROM \"" + topic + "\"")).containsExactly("0");
    }

    /**
     * Also a record that is rejected before any write (here a missing token) checks the table first: its fence is read from it.
     */
    @Test
    void aMisfitPerTopicTableIsFoundAlsoWhenTheFirstRecordIsRejectedBeforeAnyWrite() throws SQLException {
        execute("CREATE TABLE \"" + topic
                + "\" (resource_key TEXT PRIMARY KEY, deleted BOOLEAN NOT NULL DEFAULT FALSE, fence_token TEXT NOT NULL,"
                + " fence_seq BIGINT, updated_at TIMESTAMPTZ NOT NULL DEFAULT now())");
        startTask(Map.of());

        assertThatThrownBy(() -> task.put(List.of(record("k", keywords("x", 1), 10, new ConnectHeaders()))))
                .isInstanceOf(ConnectException.class)
                .hasMessageContaining("fence_token is text, expected bigint or numeric");
    }

    @Test
    void bytesKeysAreReadAsUtf8SoOneResourceKeepsOneRowAndItsGuard() throws SQLException {
        startTask(Map.of());

        task.put(List.of(bytesKeyed("customer-\u00e9".getBytes(StandardCharsets.UTF_8), keywords("holder", 7), 10, fence(7, 1)),
                bytesKeyed(ByteBuffer.wrap("customer-\u00e9".getBytes(StandardCharsets.UTF_8)), keywords("stale", 5), 11,
                        fence(5, 1))));

        assertThat(query("SELECT resource_key, \"order\", fence_token FROM \"" + topic + "\""))
                .containsExactly("customer-\u00e9|holder|7");
        assertThat(reasons()).containsExactly("STALE_TOKEN@11");
    }

    @Test
    void aBytesKeyThatIsNotUtf8IsDeadLetteredAsMalformedKey() throws SQLException {
        startTask(Map.of());
        byte[] notUtf8 = {'k', (byte) 0xC3, '(', 'x'};

        task.put(List.of(bytesKeyed(notUtf8, keywords("x", 1), 10, fence(1, 1)),
                bytesKeyed("ok".getBytes(StandardCharsets.UTF_8), keywords("y", 2), 11, fence(1, 1))));

        assertThat(reasons()).containsExactly("MALFORMED_KEY@10");
        assertThat(context.reports().get(0).error()).hasMessageContaining("not valid UTF-8");
        assertThat((byte[]) context.reports().get(0).record().key()).as("the dead-letter copy keeps the key's bytes")
                .isEqualTo(notUtf8);
        assertThat(query("SELECT resource_key FROM \"" + topic + "\"")).containsExactly("ok");
    }

    @Test
    void aKeyThatIsNeitherTextNorBytesFailsTheTaskNamingKeyConverter() {
        startTask(Map.of());
        SinkRecord numberKey = new SinkRecord(topic, PARTITION, Schema.INT64_SCHEMA, 42L, KEYWORDS, keywords("x", 1), 10,
                TIMESTAMP,
                TimestampType.CREATE_TIME, fence(1, 1));

        assertThatThrownBy(() -> task.put(List.of(numberKey))).isInstanceOf(ConnectException.class)
                .hasMessageContaining("java.lang.Long")
                .hasMessageContaining("key.converter=org.apache.kafka.connect.storage.StringConverter");
        assertThat(context.reports()).isEmpty();
    }

    @Test
    void aKeyConverterThatNeverGivesTextIsRefusedByValidateAndAtStart() {
        FencedJdbcSinkConnector connector = new FencedJdbcSinkConnector();
        Map<String, String> props = new HashMap<>(settings(Map.of()));
        props.put("key.converter", "org.apache.kafka.connect.converters.LongConverter");

        assertThat(connector.validate(props).configValues()).filteredOn(value -> value.name().equals("key.converter"))
                .singleElement().satisfies(value -> assertThat(value.errorMessages()).singleElement().asString()
                        .contains("LongConverter gives keys that are not text").contains("StringConverter"));
        assertThatThrownBy(() -> connector.start(props)).hasMessageContaining("key.converter")
                .hasMessageContaining("LongConverter");
    }

    @Test
    void aRecordCarryingRejectionHeadersIsDeadLetteredAsAlreadyRejectedNotWritten() throws SQLException {
        startTask(Map.of());
        ConnectHeaders rejectedCopy = fence(9, 1);
        rejectedCopy.addBytes(FenceHeaders.REJECTED_REASON, FenceHeaders.encode("STALE_TOKEN"));
        rejectedCopy.addBytes(FenceHeaders.REJECTED_STAGE, FenceHeaders.encode(FenceHeaders.STAGE_ENFORCER));
        ConnectHeaders onlyStage = fence(9, 1);
        onlyStage.addBytes(FenceHeaders.REJECTED_STAGE, FenceHeaders.encode(FenceHeaders.STAGE_SINK));

        task.put(List.of(record("k", keywords("stale", 1), 10, rejectedCopy), record("j", keywords("copy", 2), 11, onlyStage),
                record("ok", keywords("fresh", 3), 12, fence(1, 1))));

        assertThat(reasons()).containsExactly("ALREADY_REJECTED@10", "ALREADY_REJECTED@11");
        assertThat(context.reports().get(0).error()).hasMessageContaining("fence.rejected.reason=STALE_TOKEN")
                .hasMessageContaining("topics");
        assertThat(context.reports().get(1).error()).hasMessageContaining("fence.rejected.stage=sink");
        assertThat(query("SELECT resource_key FROM \"" + topic + "\"")).containsExactly("ok");
    }

    private List<SinkRecord> badRows(long firstOffset) {
        String tooLong = new Random(firstOffset).ints(9_000, 33, 127)
                .collect(StringBuilder::new, StringBuilder::appendCodePoint, StringBuilder::append).toString();
        ConnectHeaders noSeq = new ConnectHeaders();
        noSeq.addBytes(FenceHeaders.TOKEN, FenceHeaders.encode(5));
        return List.of(
                record("nul\u0000key", summary("a", 1, 1, "a"), firstOffset, fence(5, 1)),
                record("nul-value", summary("b", 1, 1, "nul\u0000value"), firstOffset + 1, fence(5, 1)),
                record(tooLong, summary("c", 1, 1, "c"), firstOffset + 2, fence(5, 1)),
                record("out-of-range", summary("d", 10_000_000, 1, "d"), firstOffset + 3, fence(5, 1)),
                record("no-seq", summary("e", 1, 1, "e"), firstOffset + 4, noSeq),
                record("negative-items", summary("f", 1, -1, "f"), firstOffset + 5, fence(5, 1)));
    }

    private void startTask(Map<String, String> overrides) {
        Map<String, String> props = settings(overrides);
        context = new RecordingSinkTaskContext(props);
        task.initialize(context);
        task.start(props);
    }

    private static Map<String, String> settings(Map<String, String> overrides) {
        Map<String, String> props = new HashMap<>();
        props.put(FencedJdbcSinkConfig.CONNECTION_URL, postgres.jdbcUrl());
        props.put(FencedJdbcSinkConfig.SCHEMA_REGISTRY_URL, registry.url());
        props.put(FencedJdbcSinkConfig.TABLE_NAME, FencedJdbcSinkConfig.TOPIC_PLACEHOLDER);
        props.put(FencedJdbcSinkConfig.MAX_RETRIES, "0");
        props.putAll(overrides);
        return props;
    }

    private static Struct keywords(String order, int n) {
        return new Struct(KEYWORDS).put("order", order).put("user", "user-" + n).put("group", "g").put("offset", (long) n)
                .put("limit", n)
                .put("from", "here").put("select", n % 2 == 0).put("whereTo", "there");
    }

    private static Struct summary(String customer, long amountMinor, int lineItems, String computedBy) {
        return new Struct(SUMMARY).put("customerId", customer).put("amountMinor", amountMinor).put("lineItems", lineItems)
                .put("computedBy", computedBy);
    }

    private SinkRecord record(String key, Struct value, long offset, ConnectHeaders headers) {
        return new SinkRecord(topic, PARTITION, Schema.OPTIONAL_STRING_SCHEMA, key, value == null ? null : value.schema(), value,
                offset, TIMESTAMP,
                TimestampType.CREATE_TIME, headers);
    }

    /** What Connect hands the task with key.converter=ByteArrayConverter. */
    private SinkRecord bytesKeyed(Object key, Struct value, long offset, ConnectHeaders headers) {
        return new SinkRecord(topic, PARTITION, Schema.OPTIONAL_BYTES_SCHEMA, key, value.schema(), value, offset, TIMESTAMP,
                TimestampType.CREATE_TIME, headers);
    }

    private static ConnectHeaders fence(long token, long seq) {
        ConnectHeaders headers = new ConnectHeaders();
        headers.addBytes(FenceHeaders.TOKEN, FenceHeaders.encode(token));
        headers.addBytes(FenceHeaders.SEQ, FenceHeaders.encode(seq));
        return headers;
    }

    /** Each report as {@code REASON@offset}, from the reported record's last {@code fence.rejected.reason} header. */
    private List<String> reasons() {
        return context.reports().stream().map(report -> {
            Header reason = report.record().headers().lastWithName(FenceHeaders.REJECTED_REASON);
            return new String((byte[]) reason.value(), StandardCharsets.UTF_8) + "@" + report.record().kafkaOffset();
        }).toList();
    }

    private static void execute(String sql) throws SQLException {
        try (Connection connection = postgres.dataSource().getConnection(); Statement statement = connection.createStatement()) {
            statement.execute(sql);
        }
    }

    /** Each row as its columns' text joined with |. */
    private static List<String> query(String sql) throws SQLException {
        List<String> rows = new ArrayList<>();
        try (Connection connection = postgres.dataSource().getConnection();
                PreparedStatement statement = connection.prepareStatement(sql);
                ResultSet result = statement.executeQuery()) {
            int columns = result.getMetaData().getColumnCount();
            while (result.next()) {
                List<String> cells = new ArrayList<>();
                for (int i = 1; i <= columns; i++) {
                    cells.add(result.getString(i));
                }
                rows.add(String.join("|", cells));
            }
        }
        return rows;
    }
}
