package dev.fencedwrites.sink.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.schemas.Decision;
import dev.fencedwrites.schemas.Fence;
import dev.fencedwrites.schemas.FenceRule;
import dev.fencedwrites.schemas.RejectionReason;
import dev.fencedwrites.schemas.billing.BillingSummary;
import dev.fencedwrites.sink.internal.BillingSummaryTable.Outcome;
import dev.fencedwrites.sink.internal.BillingSummaryTable.Row;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link BillingSummaryTable#writeAll} on real PostgreSQL: many records in few multi-row
 * statements, each record's outcome read back, order within a key kept.
 */
class BatchedUpsertTest {
    private static EmbeddedPostgres postgres;

    @BeforeAll
    static void startPostgres() throws IOException {
        postgres = EmbeddedPostgres.start();
    }

    @AfterAll
    static void stopPostgres() throws IOException {
        postgres.close();
    }

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
        BillingSummaryTable guarded = new BillingSummaryTable(table, true);
        // Per key, 10 records in order: tokens 1 2 1 3 4 2 5 6 7 8 (the 3rd and 6th are stale).
        long[] tokens = {1, 2, 1, 3, 4, 2, 5, 6, 7, 8};
        Random random = new Random(20261129);
        List<Row> rows = new ArrayList<>();
        int[] next = new int[50];
        while (rows.size() < 500) {
            int key = random.nextInt(50);
            if (next[key] < tokens.length) {
                long token = tokens[next[key]++];
                rows.add(new Row("customer-" + key, summary("customer-" + key, token * 100), new Fence(token, 1)));
            }
        }

        List<Outcome> outcomes;
        try (Connection connection = connect(reWriteBatchedInserts)) {
            guarded.createIfMissing(connection);
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
        assertThat(tableFences(table)).isEqualTo(model).hasSize(50).allSatisfy((key, fence) -> assertThat(fence).isEqualTo(new Fence(8, 1)));
    }

    /** An update then a delete for one key in one batch: the delete wins and keeps the fence; a later stale write is refused. */
    @Test
    void updateThenDeleteInOneBatchEndsDeletedWithTheFenceKept() throws SQLException {
        BillingSummaryTable guarded = new BillingSummaryTable("update_delete", true);
        try (Connection connection = connect(false)) {
            guarded.createIfMissing(connection);
            List<Outcome> outcomes = guarded.writeAll(connection, List.of(
                    new Row("customer-1", summary("customer-1", 100), new Fence(7, 1)),
                    new Row("customer-2", summary("customer-2", 200), new Fence(7, 1)),
                    new Row("customer-1", null, new Fence(7, 2))));
            List<Outcome> later = guarded.writeAll(connection, List.of(new Row("customer-1", summary("customer-1", 999), new Fence(6, 9))));
            connection.commit();

            assertThat(outcomes).allSatisfy(o -> assertThat(o.decision().accepted()).isTrue());
            assertThat(later).singleElement().satisfies(o -> {
                assertThat(o.decision()).isEqualTo(Decision.reject(RejectionReason.STALE_TOKEN));
                assertThat(o.highest()).isEqualTo(new Fence(7, 2));
            });
            try (Statement statement = connection.createStatement();
                 ResultSet row = statement.executeQuery("SELECT deleted, amount_minor, fence_token, fence_seq FROM update_delete WHERE resource_key = 'customer-1'")) {
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
        BillingSummaryTable guarded = new BillingSummaryTable("refused_row", true);
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            rows.add(new Row("customer-" + i, summary(i == 4 ? "bad\u0000id" : "customer-" + i, i), new Fence(3, 1)));
        }
        try (Connection connection = connect(false)) {
            guarded.createIfMissing(connection);
            List<Outcome> outcomes = guarded.writeAll(connection, rows);
            connection.commit();

            assertThat(outcomes.get(4).decision()).isEqualTo(Decision.reject(RejectionReason.MALFORMED_VALUE));
            assertThat(outcomes.get(4).detail()).contains("the database refused the record");
            assertThat(outcomes).filteredOn(o -> o.decision().accepted()).hasSize(9);
        }
        assertThat(tableFences("refused_row")).hasSize(9).doesNotContainKey("customer-4");
    }

    private static Connection connect(boolean reWriteBatchedInserts) throws SQLException {
        Connection connection = DriverManager.getConnection(postgres.getJdbcUrl("postgres", "postgres") + "&reWriteBatchedInserts=" + reWriteBatchedInserts);
        connection.setAutoCommit(false);
        return connection;
    }

    private static Map<String, Fence> tableFences(String table) throws SQLException {
        Map<String, Fence> fences = new HashMap<>();
        try (Connection connection = connect(false);
             PreparedStatement statement = connection.prepareStatement("SELECT resource_key, fence_token, fence_seq FROM " + table);
             ResultSet rows = statement.executeQuery()) {
            while (rows.next()) {
                long seq = rows.getLong(3);
                fences.put(rows.getString(1), new Fence(rows.getLong(2), rows.wasNull() ? Fence.NO_SEQ : seq));
            }
        }
        return fences;
    }

    private static BillingSummary summary(String customer, long amountMinor) {
        return BillingSummary.newBuilder().setCustomerId(customer).setBillingPeriod("2026-11").setAmountMinor(amountMinor).setCurrency("EUR")
                .setLineItems(1).setComputedAt(Instant.parse("2026-11-29T12:00:00Z")).setComputedBy("batch-test").build();
    }
}
