package dev.fencedwrites.sink.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.testing.PostgresExtension;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Two sink tasks that create or evolve the same table at the same moment (tasks of one connector start
 * together on two Connect workers): the second waits for the first and must then go on, not fail. Real PostgreSQL,
 * made deterministic: the first task's transaction holds its uncommitted change until the second is seen waiting
 * on it in {@code pg_stat_activity}. Without {@link ConcurrentDdl} the first two fail (23505 on
 * {@code pg_type_typname_nsp_index}; 25P02 when the error was swallowed without a savepoint); the third passes either way
 * today (PostgreSQL's {@code ALTER TABLE} takes its lock before it checks {@code IF NOT EXISTS}) and guards that.
 */
@Tag("process")
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ConcurrentTableChangesTest {
    private static final BillingSummary SUMMARY = BillingSummary.newBuilder().setCustomerId("customer-1")
            .setBillingPeriod("2026-12").setAmountMinor(100).setCurrency("EUR").setLineItems(1)
            .setComputedAt(Instant.parse("2026-12-02T07:00:00Z")).setComputedBy("worker-a").build();

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    @Test
    void aTaskCreatingItsFixedTableWhileAnotherCreatesItGoesOnAndFindsTheTable() throws Exception {
        SinkTables second = tables("race_fixed");
        String create = second.forTopic(null).createStatement(List.of());

        raceBehind(create, connection -> second.prepareFixed(connection));

        assertThat(columns("race_fixed")).contains("resource_key", "fence_token", "fence_seq");
    }

    @Test
    void aTaskCreatingTheTableForItsFirstRecordWhileAnotherCreatesItWritesInTheSameTransaction() throws Exception {
        RecordTable second = tables("race_first_record").forTopic(null);
        String create = second.createStatement(ColumnMapping.columns(BillingStructs.SCHEMA));

        raceBehind(create, connection -> {
            second.prepare(connection, BillingStructs.SCHEMA);
            // the transaction is still usable: a record is written and committed after the lost race
            second.write(connection, "customer-1", BillingStructs.struct(SUMMARY), new Fence(7, 1));
            connection.commit();
        });

        assertThat(rowCount("race_first_record")).isEqualTo(1);
    }

    @Test
    void aTaskAddingAColumnWhileAnotherAddsTheSameColumnGoesOn() throws Exception {
        SinkTables first = tables("race_evolve");
        try (Connection connection = connection()) {
            first.prepareFixed(connection); // the table without data columns: both tasks evolve it
        }
        RecordTable second = tables("race_evolve").forTopic(null);
        String add = "ALTER TABLE race_evolve ADD COLUMN IF NOT EXISTS customer_id TEXT";

        raceBehind(add, connection -> {
            second.prepare(connection, BillingStructs.SCHEMA);
            connection.commit();
        });

        assertThat(columns("race_evolve")).contains("customer_id", "amount_minor", "computed_by");
    }

    /**
     * Two tasks whose schemas map one field to different types add the column at once: the loser must not go on as if
     * its type were there (it would write through PostgreSQL's assignment casts, or fail every batch with 42804).
     */
    @Test
    void aTaskWhoseColumnAnotherTaskAddedInAnotherTypeMeanwhileStopsWithASchemaMismatch() throws Exception {
        try (Connection connection = connection()) {
            tables("race_types").prepareFixed(connection);
        }
        RecordTable second = tables("race_types").forTopic(null);

        raceBehind("ALTER TABLE race_types ADD COLUMN IF NOT EXISTS amount_minor TEXT",
                connection -> assertThatThrownBy(() -> second.prepare(connection, BillingStructs.SCHEMA))
                        .isInstanceOf(SchemaMismatchException.class)
                        .hasMessageContaining("as another sink task changed it")
                        .hasMessageContaining("race_types.amount_minor is text"));
    }

    /**
     * The other forms the lost race takes, depending on when the winner commits (42710 "type ... already exists" was seen
     * when two Connect workers started a connector's tasks together): each leaves the caller's transaction usable.
     */
    @Test
    void eachFormOfTheLostRaceIsRolledBackToItsSavepointAndTheTransactionGoesOn() throws Exception {
        try (Connection connection = connection()) {
            try (Statement statement = connection.createStatement()) {
                statement.execute("CREATE TYPE race_row AS (n int)");
                statement.execute("CREATE TABLE race_forms (n int)");
                statement.execute("CREATE UNIQUE INDEX race_forms_n ON race_forms (n)");
            }
            assertThat(ConcurrentDdl.execute(connection, "CREATE TYPE race_row AS (n int)", () -> true)).as("42710").isFalse();
            assertThat(ConcurrentDdl.execute(connection, "CREATE TABLE race_forms (n int)", () -> true)).as("42P07").isFalse();
            assertThat(ConcurrentDdl.execute(connection, "ALTER TABLE race_forms ADD COLUMN n int", () -> true)).as("42701")
                    .isFalse();
            assertThat(ConcurrentDdl.execute(connection, "INSERT INTO race_forms VALUES (1), (1)", () -> true)).as("23505")
                    .isFalse();
            assertThat(ConcurrentDdl.execute(connection, "CREATE TABLE race_forms_more (n int)", () -> true)).isTrue();
            connection.commit();
        }
        assertThat(columns("race_forms_more")).containsExactly("n");
    }

    /**
     * Break-it finding F5: the same SQLStates come from an object of the table's name that is not a table. The sink must
     * say so, not take it for "another task created the table" and then fail on a table that is not there.
     */
    @Test
    void aTypeNamedLikeTheTableIsReportedAsInTheWayNotTakenForTheTable() throws Exception {
        committed("CREATE TYPE blocked_summary AS ENUM ('a')");
        try (Connection connection = connection()) {

            assertThatThrownBy(() -> tables("blocked_summary").prepareFixed(connection)).isInstanceOf(SQLException.class)
                    .hasMessageContaining("CREATE TABLE").hasMessageContaining("in the way")
                    .hasMessageContaining("already exists");
            connection.rollback();
        }
    }

    /** The sibling without an error: {@code CREATE TABLE IF NOT EXISTS} skips silently when a composite type has the name. */
    @Test
    void aCompositeTypeNamedLikeTheTableIsNamedInTheMissingTableMessage() throws Exception {
        committed("CREATE TYPE shadowed_summary AS (n int)");
        try (Connection connection = connection()) {

            assertThatThrownBy(() -> tables("shadowed_summary").prepareFixed(connection))
                    .hasMessageContaining("table shadowed_summary does not exist in the current schema: a composite type of "
                            + "that name is in the way");
            connection.rollback();
        }
    }

    /** Runs {@code ddl} and commits it. */
    private static void committed(String ddl) throws SQLException {
        try (Connection connection = connection(); Statement statement = connection.createStatement()) {
            statement.execute(ddl);
            connection.commit();
        }
    }

    private interface Racer {
        void run(Connection connection) throws Exception;
    }

    /**
     * Runs {@code firstDdl} in an open transaction, starts {@code racer} on its own connection, waits until PostgreSQL
     * shows the racer waiting for a lock (behind the first transaction), then commits the first; the racer must finish
     * without an error.
     */
    private static void raceBehind(String firstDdl, Racer racer) throws Exception {
        try (Connection first = connection(); Connection racing = connection()) {
            try (Statement statement = first.createStatement()) {
                statement.execute(firstDdl);
            }
            int racingPid = backendPid(racing);
            CompletableFuture<Void> raced = CompletableFuture.runAsync(() -> {
                try {
                    racer.run(racing);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20))
                    .until(() -> raced.isDone() || waitsForALock(racingPid));
            first.commit();
            raced.get(30, TimeUnit.SECONDS);
        }
    }

    private static SinkTables tables(String table) {
        return new SinkTables(topic -> TableName.parse(table), true, true, true);
    }

    private static Connection connection() throws SQLException {
        Connection connection = postgres.dataSource().getConnection();
        connection.setAutoCommit(false); // as HikariPools configures the sink task's pool
        return connection;
    }

    private static int backendPid(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery(
                        "SELECT pg_backend_pid()")) {
            rows.next();
            int pid = rows.getInt(1);
            connection.commit();
            return pid;
        }
    }

    private static boolean waitsForALock(int pid) throws SQLException {
        try (Connection watcher = postgres.dataSource().getConnection();
                PreparedStatement query = watcher.prepareStatement(
                        "SELECT wait_event_type FROM pg_stat_activity WHERE pid = ?")) {
            query.setInt(1, pid);
            try (ResultSet rows = query.executeQuery()) {
                return rows.next() && "Lock".equals(rows.getString(1));
            }
        }
    }

    private static List<String> columns(String table) throws SQLException {
        try (Connection connection = postgres.dataSource().getConnection();
                PreparedStatement query = connection.prepareStatement(
                        "SELECT column_name FROM information_schema.columns WHERE table_name = ?")) {
            query.setString(1, table);
            try (ResultSet rows = query.executeQuery()) {
                List<String> names = new ArrayList<>();
                while (rows.next()) {
                    names.add(rows.getString(1));
                }
                return names;
            }
        }
    }

    private static long rowCount(String table) throws SQLException {
        try (Connection connection = postgres.dataSource().getConnection();
                Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery("SELECT count(*) FROM " + table)) {
            rows.next();
            return rows.getLong(1);
        }
    }
}
