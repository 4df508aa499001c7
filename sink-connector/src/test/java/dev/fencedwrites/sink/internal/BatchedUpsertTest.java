package dev.fencedwrites.sink.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.Decision;
import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceRule;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.testing.PostgresExtension;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link BatchWriter} (through {@link RecordTable#writeAll}) on real PostgreSQL: many records in few multi-row
 * statements, each record's outcome read back, order within a key kept.
 */
@Tag("process")
class BatchedUpsertTest {
    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    /**
     * 500 records over 50 keys, 100 of them stale, interleaved at random with each key's records in
     * order: exactly 400 applied, the 100 stale ones refused with STALE_TOKEN and the fence that
     * refused them, and the table equals the rule applied record by record. pgjdbc's
     * reWriteBatchedInserts must not matter: outcomes come from RETURNING, not batch counts.
     */
    @ParameterizedTest(name = "reWriteBatchedInserts={0}")
    @ValueSource(booleans = {false, true})
    void fiveHundredRecordsOverFiftyKeysWithAHundredStale(boolean reWriteBatchedInserts) throws SQLException {
        String table = "batch_" + reWriteBatchedInserts;
        RecordTable guarded = new RecordTable(table, true, true, true);
        // Per key, 10 records in order: tokens 1 2 1 3 4 2 5 6 7 8 (the 3rd and 6th are stale).
        long[] tokens = {1, 2, 1, 3, 4, 2, 5, 6, 7, 8};
        Random random = new Random(20261129);
        List<Row> rows = new ArrayList<>();
        int[] next = new int[50];
        while (rows.size() < 500) {
            int key = random.nextInt(50);
            if (next[key] < tokens.length) {
                long token = tokens[next[key]++];
                rows.add(Row.of("customer-" + key, BillingStructs.struct(summary("customer-" + key, token * 100)),
                        new Fence(token, 1)));
            }
        }

        List<Outcome> outcomes;
        try (Connection connection = connect(reWriteBatchedInserts)) {
            guarded.prepare(connection, BillingStructs.SCHEMA);
            outcomes = guarded.writeAll(connection, rows);
            connection.commit();
        }

        assertThat(outcomes).hasSize(500);
        assertThat(outcomes).filteredOn(o -> o.decision().accepted()).hasSize(400);
        Map<String, Fence> model = new HashMap<>();
        for (int i = 0; i < rows.size(); i++) {
            Row row = rows.get(i);
            Decision expected = FenceRule.decide(model.get(row.key()), row.fence());
            assertThat(outcomes.get(i).decision()).as("record %d %s", i, row).isEqualTo(expected);
            if (expected.accepted()) {
                model.put(row.key(), FenceRule.raise(model.get(row.key()), row.fence()));
            } else {
                assertThat(expected.reason()).isEqualTo(RejectionReason.STALE_TOKEN);
                assertThat(outcomes.get(i).highest()).as("the fence that refused record %d", i).isEqualTo(model.get(row.key()));
            }
        }
        assertThat(tableFences(table)).isEqualTo(model).hasSize(50)
                .allSatisfy((key, fence) -> assertThat(fence).isEqualTo(new Fence(8, 1)));
    }

    /** An update then a delete for one key in one batch: the delete wins and keeps the fence; a later stale write is refused. */
    @Test
    void updateThenDeleteInOneBatchEndsDeletedWithTheFenceKept() throws SQLException {
        RecordTable guarded = new RecordTable("update_delete", true, true, true);
        try (Connection connection = connect(false)) {
            guarded.prepare(connection, BillingStructs.SCHEMA);
            List<Outcome> outcomes = guarded.writeAll(connection, List.of(
                    Row.of("customer-1", BillingStructs.struct(summary("customer-1", 100)), new Fence(7, 1)),
                    Row.of("customer-2", BillingStructs.struct(summary("customer-2", 200)), new Fence(7, 1)),
                    Row.of("customer-1", BillingStructs.struct(null), new Fence(7, 2))));
            List<Outcome> later = guarded.writeAll(connection,
                    List.of(Row.of("customer-1", BillingStructs.struct(summary("customer-1", 999)), new Fence(6, 9))));
            connection.commit();

            assertThat(outcomes).allSatisfy(o -> assertThat(o.decision().accepted()).isTrue());
            assertThat(later).singleElement().satisfies(o -> {
                assertThat(o.decision()).isEqualTo(Decision.reject(RejectionReason.STALE_TOKEN));
                assertThat(o.highest()).isEqualTo(new Fence(7, 2));
            });
            try (Statement statement = connection.createStatement();
                    ResultSet row = statement.executeQuery(
                            "SELECT deleted, amount_minor, fence_token, fence_seq FROM update_delete WHERE resource_key = "
                                    + "'customer-1'")) {
                assertThat(row.next()).isTrue();
                assertThat(row.getBoolean(1)).isTrue();
                assertThat(row.getObject(2)).isNull();
                assertThat(row.getLong(3)).isEqualTo(7);
                assertThat(row.getLong(4)).isEqualTo(2);
            }
        }
    }

    /** A row the database refuses (a NUL in text) fails its statement; only that row comes back MALFORMED_VALUE. */
    @Test
    void aRowTheDatabaseRefusesIsTheOnlyOneRejected() throws SQLException {
        RecordTable guarded = new RecordTable("refused_row", true, true, true);
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            rows.add(Row.of("customer-" + i, BillingStructs.struct(summary(i == 4 ? "bad\u0000id" : "customer-" + i, i)),
                    new Fence(3, 1)));
        }
        try (Connection connection = connect(false)) {
            guarded.prepare(connection, BillingStructs.SCHEMA);
            List<Outcome> outcomes = guarded.writeAll(connection, rows);
            connection.commit();

            assertThat(outcomes.get(4).decision()).isEqualTo(Decision.reject(RejectionReason.MALFORMED_VALUE));
            assertThat(outcomes.get(4).detail()).contains("the database refused the record");
            assertThat(outcomes).filteredOn(o -> o.decision().accepted()).hasSize(9);
        }
        assertThat(tableFences("refused_row")).hasSize(9).doesNotContainKey("customer-4");
    }

    /** A key too long for the primary key index (SQLState 54000) is that record's problem only. */
    @Test
    void aKeyTooLongForTheIndexIsTheOnlyOneRejected() throws SQLException {
        RecordTable guarded = new RecordTable("long_key", true, true, true);
        String longKey = "k".repeat(3_000) + new Random(1).ints(3_000, 33, 127).collect(StringBuilder::new,
                StringBuilder::appendCodePoint, StringBuilder::append);
        try (Connection connection = connect(false)) {
            List<Outcome> outcomes = guarded.writeAll(connection, List.of(
                    Row.of("short-1", BillingStructs.struct(summary("short-1", 1)), new Fence(1, 1)),
                    Row.of(longKey, BillingStructs.struct(summary("long", 2)), new Fence(1, 1)),
                    Row.of("short-2", BillingStructs.struct(summary("short-2", 3)), new Fence(1, 1))));
            connection.commit();

            assertThat(outcomes).extracting(o -> o.decision().accepted() ? "accept" : o.decision().reason().name())
                    .containsExactly("accept", "MALFORMED_VALUE", "accept");
        }
    }

    /** The fence reported for a refused write is the stored one exactly, also when it has no seq. */
    @Test
    void theRefusingFenceIsReportedExactlyAlsoWithoutSeq() throws SQLException {
        RecordTable guarded = new RecordTable("no_seq_fence", true, true, true);
        try (Connection connection = connect(false)) {
            guarded.writeAll(connection, List.of(Row.of("k", BillingStructs.struct(summary("k", 1)), Fence.of(7))));
            List<Outcome> refused = guarded.writeAll(connection,
                    List.of(Row.of("k", BillingStructs.struct(summary("k", 2)), new Fence(5, 1))));
            connection.commit();

            assertThat(refused.get(0).decision()).isEqualTo(Decision.reject(RejectionReason.STALE_TOKEN));
            assertThat(refused.get(0).highest()).isEqualTo(Fence.of(7));
        }
    }

    /**
     * A CHECK that every row of a statement breaks is each row's own outcome (SQLState 23514):
     * each is dead-lettered, as it would be beside good rows, and the batch goes on. (Before, a
     * statement of only refused rows failed the task, which stopped the pipeline on two bad records.)
     */
    @Test
    void aCheckConstraintEveryRowOfAStatementBreaksDeadLettersEachRowAndFailsNothing() throws SQLException {
        RecordTable guarded = new RecordTable("new_check", true, true, true);
        try (Connection connection = connect(false)) {
            guarded.writeAll(connection, List.of(Row.of("seed", BillingStructs.struct(summary("seed", 1)), new Fence(1, 1))));
            connection.createStatement().execute("ALTER TABLE new_check ADD CONSTRAINT oops CHECK (amount_minor < 0) NOT VALID");
            connection.commit();

            List<Outcome> outcomes = guarded.writeAll(connection, List.of(
                    Row.of("a", BillingStructs.struct(summary("a", 5)), new Fence(1, 1)),
                    Row.of("b", BillingStructs.struct(summary("b", 6)), new Fence(1, 1))));
            connection.commit();

            assertThat(outcomes).extracting(o -> o.decision().reason()).containsExactly(RejectionReason.MALFORMED_VALUE,
                    RejectionReason.MALFORMED_VALUE);
            assertThat(outcomes)
                    .allSatisfy(o -> assertThat(o.detail()).contains("the database refused the record").contains("oops"));
        }
        assertThat(tableFences("new_check")).containsOnlyKeys("seed");
    }

    /** A unique index besides the key depends on other rows and their order: not a record's fault, so not dead-lettered. */
    @Test
    void aViolationOfAnotherUniqueIndexIsNotDeadLettered() throws SQLException {
        RecordTable guarded = new RecordTable("other_unique", true, true, true);
        try (Connection connection = connect(false)) {
            guarded.writeAll(connection, List.of(Row.of("seed", BillingStructs.struct(summary("seed", 1)), new Fence(1, 1))));
            connection.createStatement().execute("CREATE UNIQUE INDEX one_per_customer ON other_unique (customer_id)");
            connection.commit();

            Assertions.assertThatThrownBy(() -> guarded.writeAll(connection, List.of(
                    Row.of("other", BillingStructs.struct(summary("seed", 2)), new Fence(1, 1)))))
                    .isInstanceOf(SQLException.class)
                    .satisfies(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("23505"));
        }
    }

    private static Connection connect(boolean reWriteBatchedInserts) throws SQLException {
        Connection connection = DriverManager
                .getConnection(postgres.jdbcUrl() + "&reWriteBatchedInserts=" + reWriteBatchedInserts);
        connection.setAutoCommit(false);
        return connection;
    }

    private static Map<String, Fence> tableFences(String table) throws SQLException {
        Map<String, Fence> fences = new HashMap<>();
        try (Connection connection = connect(false);
                PreparedStatement statement = connection
                        .prepareStatement("SELECT resource_key, fence_token, fence_seq FROM " + table);
                ResultSet rows = statement.executeQuery()) {
            while (rows.next()) {
                long seq = rows.getLong(3);
                boolean noSeq = rows.wasNull();
                fences.put(rows.getString(1), new Fence(rows.getLong(2), noSeq ? Fence.NO_SEQ : seq));
            }
        }
        return fences;
    }

    private static BillingSummary summary(String customer, long amountMinor) {
        return BillingSummary.newBuilder().setCustomerId(customer).setBillingPeriod("2026-11").setAmountMinor(amountMinor)
                .setCurrency("EUR")
                .setLineItems(1).setComputedAt(Instant.parse("2026-11-29T12:00:00Z")).setComputedBy("batch-test").build();
    }
}
