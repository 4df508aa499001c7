package dev.fencedwrites.sink.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.testing.PostgresExtension;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.data.Date;
import org.apache.kafka.connect.data.Decimal;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Timestamp;
import org.apache.kafka.connect.errors.DataException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link ColumnMapping} and {@link TableStructure}'s create, evolve and check (through {@link RecordTable}) on real PostgreSQL,
 * for record schemas of every kind.
 */
@Tag("process")
class GenericMappingTest {
    private static final Schema ADDRESS = SchemaBuilder.struct().name("Address").optional()
            .field("street", Schema.STRING_SCHEMA).field("zipCode", Schema.OPTIONAL_STRING_SCHEMA).build();
    private static final Schema ORDER = SchemaBuilder.struct().name("Order")
            .field("orderId", Schema.STRING_SCHEMA)
            .field("quantity", Schema.INT16_SCHEMA)
            .field("totalAmount", Decimal.builder(2).build())
            .field("paid", Schema.BOOLEAN_SCHEMA)
            .field("weightKg", Schema.OPTIONAL_FLOAT64_SCHEMA)
            .field("placedAt", Timestamp.SCHEMA)
            .field("deliveryDate", Date.builder().optional().build())
            .field("signature", Schema.OPTIONAL_BYTES_SCHEMA)
            .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build())
            .field("attributes", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).optional().build())
            .field("shipTo", ADDRESS)
            .build();

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    @Test
    void columnsFollowTheDocumentedRule() {
        assertThat(ColumnMapping.columns(ORDER)).extracting(c -> c.name() + " " + c.sqlType()).containsExactly(
                "order_id TEXT", "quantity SMALLINT", "total_amount NUMERIC", "paid BOOLEAN", "weight_kg DOUBLE PRECISION",
                "placed_at TIMESTAMPTZ", "delivery_date DATE", "signature BYTEA", "tags JSONB", "attributes JSONB",
                "ship_to_street TEXT", "ship_to_zip_code TEXT");
        assertThat(ColumnMapping.snakeCase("HTTPCode")).isEqualTo("http_code");
        assertThat(ColumnMapping.snakeCase("customer-id")).isEqualTo("customer_id");
        assertThatThrownBy(() -> ColumnMapping.columns(SchemaBuilder.struct().field("fenceSeq", Schema.INT64_SCHEMA).build()))
                .isInstanceOf(DataException.class).hasMessageContaining("column fence_seq, which the sink reserves");
        assertThatThrownBy(() -> ColumnMapping.columns(
                SchemaBuilder.struct().field("zipCode", Schema.STRING_SCHEMA).field("zip_code", Schema.STRING_SCHEMA).build()))
                .isInstanceOf(DataException.class).hasMessageContaining("both map to column zip_code");
        assertThatThrownBy(() -> ColumnMapping.columns(Schema.STRING_SCHEMA)).isInstanceOf(DataException.class)
                .hasMessageContaining("must be a record");
    }

    @Test
    void everyKindOfFieldIsWrittenAndReadBack() throws SQLException {
        RecordTable table = new RecordTable("orders", true, true, true);
        Struct order = new Struct(ORDER).put("orderId", "o-1").put("quantity", (short) 3)
                .put("totalAmount", new BigDecimal("12.34"))
                .put("paid", true).put("weightKg", 1.5)
                // CHECKSTYLE:OFF: FullyQualifiedName java.sql and java.util both have Date
                .put("placedAt", java.util.Date.from(Instant.parse("2026-11-29T12:00:00Z")))
                .put("deliveryDate", java.util.Date.from(Instant.parse("2026-12-01T00:00:00Z")))
                // CHECKSTYLE:ON: FullyQualifiedName
                .put("signature", new byte[]{1, 2, 3})
                .put("tags", List.of("gift", "fragile")).put("attributes", Map.of("floor", 3))
                .put("shipTo", new Struct(ADDRESS).put("street", "Main St 1").put("zipCode", "10115"));
        try (Connection connection = connect()) {
            assertThat(table.write(connection, "order-1", order, new Fence(4, 1)).accepted()).isTrue();
            connection.commit();
        }

        Map<String, String> row = row("orders", "order-1");
        assertThat(row).containsEntry("order_id", "o-1").containsEntry("quantity", "3").containsEntry("total_amount", "12.34")
                .containsEntry("paid", "t").containsEntry("weight_kg", "1.5").containsEntry("placed_at", "2026-11-29 12:00:00+00")
                .containsEntry("delivery_date", "2026-12-01").containsEntry("signature", "\\x010203")
                .containsEntry("tags", "[\"gift\", \"fragile\"]").containsEntry("attributes", "{\"floor\": 3}")
                .containsEntry("ship_to_street", "Main St 1").containsEntry("ship_to_zip_code", "10115")
                .containsEntry("fence_token", "4").containsEntry("fence_seq", "1").containsEntry("deleted", "f");
    }

    /** A new optional field mid-stream: the column is added (auto.evolve) and rows written before and after are both right. */
    @Test
    void aNewOptionalFieldAddsItsColumnAndOldAndNewRowsStayRight() throws SQLException {
        Schema v1 = SchemaBuilder.struct().name("Invoice").field("amountMinor", Schema.INT64_SCHEMA).build();
        Schema v2 = SchemaBuilder.struct().name("Invoice").field("amountMinor", Schema.INT64_SCHEMA)
                .field("note", Schema.OPTIONAL_STRING_SCHEMA).build();
        RecordTable table = new RecordTable("invoices", true, true, true);
        try (Connection connection = connect()) {
            table.writeAll(connection, List.of(Row.of("inv-1", new Struct(v1).put("amountMinor", 100L), new Fence(1, 1)),
                    Row.of("inv-2", new Struct(v2).put("amountMinor", 200L).put("note", "waived"), new Fence(1, 1)),
                    Row.of("inv-1", new Struct(v2).put("amountMinor", 150L), new Fence(1, 2))));
            connection.commit();
        }

        assertThat(row("invoices", "inv-1")).containsEntry("amount_minor", "150").containsEntry("note", null)
                .containsEntry("fence_seq", "2");
        assertThat(row("invoices", "inv-2")).containsEntry("amount_minor", "200").containsEntry("note", "waived");
    }

    @Test
    void withoutAutoEvolveAMisfitSchemaIsRefusedNamingEveryColumn() throws SQLException {
        Schema v1 = SchemaBuilder.struct().name("Payment").field("amountMinor", Schema.INT64_SCHEMA).build();
        Schema conflicting = SchemaBuilder.struct().name("Payment").field("amountMinor", Schema.STRING_SCHEMA)
                .field("payer", Schema.STRING_SCHEMA).build();
        try (Connection connection = connect()) {
            new RecordTable("payments", true, true, true).write(connection, "p-1", new Struct(v1).put("amountMinor", 5L),
                    new Fence(1, 1));
            connection.commit();
            RecordTable strict = new RecordTable("payments", true, true, false);

            assertThatThrownBy(() -> strict.write(connection, "p-2",
                    new Struct(conflicting).put("amountMinor", "5").put("payer", "x"), new Fence(1, 1)))
                    .isInstanceOf(SchemaMismatchException.class)
                    .hasMessageContaining("column payments.amount_minor is bigint, but field amountMinor needs TEXT")
                    .hasMessageContaining(
                            "table payments has no column payer TEXT for field payer (set auto.evolve=true to add it)");
        }
    }

    @Test
    void aNotNullColumnTheRecordsDoNotWriteIsNamed() throws SQLException {
        try (Connection connection = connect()) {
            connection.createStatement()
                    .execute("CREATE TABLE legacy (resource_key TEXT PRIMARY KEY, amount_minor BIGINT, region TEXT NOT NULL,"
                            + " deleted BOOLEAN NOT NULL DEFAULT FALSE, fence_token BIGINT NOT NULL, fence_seq BIGINT, "
                            + "updated_at TIMESTAMPTZ NOT NULL DEFAULT now())");
            connection.commit();
            Schema schema = SchemaBuilder.struct().field("amountMinor", Schema.INT64_SCHEMA).build();

            assertThatThrownBy(() -> new RecordTable("legacy", true, true, true).write(connection, "k",
                    new Struct(schema).put("amountMinor", 1L), new Fence(1, 1)))
                    .isInstanceOf(SchemaMismatchException.class)
                    .hasMessageContaining(
                            "column legacy.region is NOT NULL without a default, but records of this schema do not write it");
        }
    }

    /** A NOT NULL data column would make every delete fail, so it is named up front. */
    @Test
    void aNotNullDataColumnIsNamedBecauseDeletesNullIt() throws SQLException {
        try (Connection connection = connect()) {
            connection.createStatement()
                    .execute("CREATE TABLE strict_data (resource_key TEXT PRIMARY KEY, amount_minor BIGINT NOT NULL,"
                            + " created_at TIMESTAMPTZ NOT NULL DEFAULT now(), row_id BIGINT GENERATED ALWAYS AS IDENTITY,"
                            + " deleted BOOLEAN NOT NULL DEFAULT FALSE, fence_token BIGINT NOT NULL, fence_seq BIGINT, "
                            + "updated_at TIMESTAMPTZ NOT NULL DEFAULT now())");
            connection.commit();
            Schema schema = SchemaBuilder.struct().field("amountMinor", Schema.INT64_SCHEMA).build();

            assertThatThrownBy(() -> new RecordTable("strict_data", true, true, true).write(connection, "k",
                    new Struct(schema).put("amountMinor", 1L),
                    new Fence(1, 1)))
                    .isInstanceOf(SchemaMismatchException.class)
                    .hasMessageContaining(
                            "column strict_data.amount_minor is NOT NULL, but a delete sets the data columns to NULL")
                    .hasMessageNotContaining("created_at").hasMessageNotContaining("row_id");
        }
    }

    private static Connection connect() throws SQLException {
        Connection connection = DriverManager.getConnection(postgres.jdbcUrl());
        connection.setAutoCommit(false);
        return connection;
    }

    /** The row as text per column (PostgreSQL's output format), null for NULL. */
    private static Map<String, String> row(String table, String key) throws SQLException {
        try (Connection connection = connect();
                PreparedStatement statement = connection.prepareStatement("SELECT * FROM " + table + " WHERE resource_key = ?")) {
            statement.setString(1, key);
            try (ResultSet rows = statement.executeQuery()) {
                assertThat(rows.next()).as("row %s", key).isTrue();
                Map<String, String> values = new HashMap<>();
                for (int i = 1; i <= rows.getMetaData().getColumnCount(); i++) {
                    values.put(rows.getMetaData().getColumnName(i), rows.getString(i));
                }
                return values;
            }
        }
    }
}
