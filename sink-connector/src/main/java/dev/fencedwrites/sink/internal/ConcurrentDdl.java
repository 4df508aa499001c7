package dev.fencedwrites.sink.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.util.Set;

/**
 * Runs {@code CREATE TABLE IF NOT EXISTS} and {@code ALTER TABLE ... ADD COLUMN IF NOT EXISTS} that
 * other sink tasks may run at the same moment (several tasks of one connector start together).
 *
 * <p>Why: PostgreSQL checks {@code IF NOT EXISTS} before it inserts the catalog rows, so of two
 * transactions creating the same table the second fails, depending on when the first commits, with
 * {@code unique_violation} (23505, on {@code pg_type_typname_nsp_index} or {@code pg_class}),
 * {@code duplicate_table} (42P07) or {@code duplicate_object} (42710, "type ... already exists": the
 * table's row type, seen in a clustered start); a column added twice fails with {@code duplicate_column} (42701).
 * Each of those means another task made the same change, which is all this one wanted. The sink's
 * connections do not auto-commit, and a failed statement aborts the whole transaction (every later
 * statement fails with 25P02), so the statement runs inside a savepoint that is rolled back on such a
 * failure: the caller's transaction goes on.
 */
final class ConcurrentDdl {
    /** SQLStates that mean "another transaction made this same object first". */
    private static final Set<String> MADE_BY_ANOTHER = Set.of("23505", "42P07", "42710", "42701");

    private ConcurrentDdl() {
    }

    /** Whether the object a statement makes exists now, read from the catalog. */
    @FunctionalInterface
    interface Made {
        boolean exists() throws SQLException;
    }

    /**
     * Runs {@code ddl} on {@code connection}, in a savepoint unless the connection auto-commits. When it fails with one of
     * the SQLStates above, {@code made} is asked whether the object exists now: the same SQLStates come from an object of
     * the same name that is not what {@code ddl} makes (42710 from an enum, domain or range type named like the table,
     * which has no relation of its own; a composite type, view or sequence makes {@code IF NOT EXISTS} skip instead), and
     * that must not pass as "another task made it".
     *
     * @return {@code true} when this statement made the change (or found it made), {@code false} when a
     *         concurrent transaction made it and this one's attempt was rolled back to the savepoint
     * @throws SQLException any other failure, after rolling back to the savepoint; or one of those SQLStates when the
     *                      object still does not exist, naming the statement and keeping the original as its cause
     */
    static boolean execute(Connection connection, String ddl, Made made) throws SQLException {
        Savepoint savepoint = connection.getAutoCommit() ? null : connection.setSavepoint();
        try (Statement statement = connection.createStatement()) {
            statement.execute(ddl);
        } catch (SQLException e) {
            if (savepoint != null) {
                connection.rollback(savepoint);
            }
            if (!MADE_BY_ANOTHER.contains(e.getSQLState())) {
                throw e;
            }
            if (!made.exists()) {
                throw new SQLException(ddl + " failed (" + e.getMessage() + ") and the object it makes does not exist: another "
                        + "object of that name is in the way (a type, a view, a sequence); drop or rename it", e.getSQLState(),
                        e);
            }
            return false;
        }
        if (savepoint != null) {
            connection.releaseSavepoint(savepoint);
        }
        return true;
    }
}
