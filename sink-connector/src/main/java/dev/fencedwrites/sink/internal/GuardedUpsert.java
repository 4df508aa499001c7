package dev.fencedwrites.sink.internal;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceRule;
import dev.fencedwrites.sink.internal.ColumnMapping.Column;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.util.List;

/**
 * The fence-guarded statement of one table: its SQL text for a number of rows of one {@link Kind},
 * and the binding of each row's parameters. A data write, delete or marker without a previous fence
 * is a multi-row {@code INSERT ... ON CONFLICT (resource_key) DO UPDATE ... WHERE <guard> RETURNING
 * resource_key}; a marker with a previous fence is an {@code UPDATE ... FROM (VALUES ...)} that
 * never creates a row. {@code RETURNING} names the applied keys.
 *
 * <p>The guard is {@link FenceRule}'s decision rule written in SQL; a test checks the two against
 * each other on real PostgreSQL. Table and data column names are quoted ({@link TableName#sql()},
 * {@link SqlNames#quote}). Stateless and thread-safe.
 */
public final class GuardedUpsert {
    /** The decision rule as a predicate over the stored row {@code t} and the incoming {@code EXCLUDED}. */
    static final String GUARD = "t.fence_token < EXCLUDED.fence_token OR (t.fence_token = EXCLUDED.fence_token"
            + " AND (t.fence_seq IS NULL OR EXCLUDED.fence_seq IS NULL OR t.fence_seq < EXCLUDED.fence_seq))";

    /** {@link FenceRule#raise} in SQL: a same-token write without a seq keeps the stored seq. */
    static final String SEQ_AFTER = "CASE WHEN t.fence_token = EXCLUDED.fence_token AND EXCLUDED.fence_seq IS NULL"
            + " THEN t.fence_seq ELSE EXCLUDED.fence_seq END";

    /** {@link #GUARD} for the update of {@link Kind#MARKER_AFTER}, whose incoming fence is {@code m.token}/{@code m.seq}. */
    private static final String MARKER_GUARD = GUARD.replace("EXCLUDED.fence_token", "m.token").replace("EXCLUDED.fence_seq",
            "m.seq");

    /**
     * The row holds at least the marker's previous fence: every write accepted before the marker is in. A row at
     * {@code (T, no seq)} is below {@code (T, s)}: the guard lets {@code (T, s)} in after it.
     */
    private static final String AT_LEAST_PREVIOUS = "(t.fence_token > m.previous_token OR (t.fence_token = m.previous_token"
            + " AND (m.previous_seq IS NULL OR t.fence_seq >= m.previous_seq)))";

    /**
     * What a statement writes: data columns, NULLs for a delete, only the fence for a marker (an
     * upsert), or only the fence of a row already at the marker's previous fence (an update).
     */
    public enum Kind {
        DATA, DELETE, MARKER, MARKER_AFTER
    }

    private final TableName table;
    private final boolean guarded;

    /**
     * @param table   the table written to
     * @param guarded whether to apply the fence guard; {@code false} writes unconditionally
     */
    public GuardedUpsert(TableName table, boolean guarded) {
        this.table = table;
        this.guarded = guarded;
    }

    /** The statement kind of {@code row}. */
    public static Kind kind(Row row) {
        if (row instanceof Row.FenceOnly marker) {
            return marker.previous() == null ? Kind.MARKER : Kind.MARKER_AFTER;
        }
        return row instanceof Row.Upsert ? Kind.DATA : Kind.DELETE;
    }

    /**
     * The SQL text for {@code rowCount} rows of {@code kind}.
     *
     * @param columns the data columns: those of the rows' value schema for {@link Kind#DATA}, every data
     *                column of the table for {@link Kind#DELETE} (set to NULL), ignored otherwise
     */
    public String sql(Kind kind, List<Column> columns, int rowCount) {
        return kind == Kind.MARKER_AFTER ? markerAfterSql(rowCount) : upsertSql(columns, kind, rowCount);
    }

    /**
     * Binds the parameters of {@code row} from {@code index[0]} on, advancing it.
     *
     * @param columns as for {@link #sql}
     */
    public void bind(PreparedStatement statement, int[] index, Row row, List<Column> columns) throws SQLException {
        if (row instanceof Row.FenceOnly marker && marker.previous() != null) {
            statement.setString(index[0]++, row.key());
            bindFence(statement, index, row.fence());
            bindFence(statement, index, marker.previous());
            return;
        }
        statement.setString(index[0]++, row.key());
        if (row instanceof Row.Upsert upsert) {
            for (Column column : columns) {
                ColumnMapping.bind(statement, index[0]++, column, upsert.value());
            }
        }
        // A marker's new row holds no data: it reads as deleted until its holder writes.
        statement.setBoolean(index[0]++, !(row instanceof Row.Upsert));
        bindFence(statement, index, row.fence());
    }

    private static void bindFence(PreparedStatement statement, int[] index, Fence fence) throws SQLException {
        statement.setLong(index[0]++, fence.token());
        if (fence.hasSeq()) {
            statement.setLong(index[0]++, fence.seq());
        } else {
            statement.setNull(index[0]++, Types.BIGINT);
        }
    }

    /**
     * The update of {@link Kind#MARKER_AFTER} rows: the fence rises only where the guard allows and the row holds the previous
     * fence.
     */
    private String markerAfterSql(int rowCount) {
        StringBuilder sql = new StringBuilder("UPDATE ").append(table.sql())
                .append(" AS t SET fence_token = m.token, fence_seq = ")
                .append(SEQ_AFTER.replace("EXCLUDED.fence_token", "m.token").replace("EXCLUDED.fence_seq", "m.seq"))
                .append(", updated_at = now() FROM (VALUES ");
        for (int i = 0; i < rowCount; i++) {
            sql.append(i == 0 ? "" : ", ").append("(?::text, ?::bigint, ?::bigint, ?::bigint, ?::bigint)");
        }
        return sql.append(
                ") AS m (resource_key, token, seq, previous_token, previous_seq) WHERE t.resource_key = m.resource_key AND (")
                .append(MARKER_GUARD).append(") AND ").append(AT_LEAST_PREVIOUS).append(" RETURNING t.resource_key").toString();
    }

    private String upsertSql(List<Column> columns, Kind kind, int rowCount) {
        StringBuilder names = new StringBuilder("resource_key");
        StringBuilder placeholders = new StringBuilder("(?");
        StringBuilder updates = new StringBuilder();
        for (Column column : columns) {
            if (kind == Kind.DATA) {
                names.append(", ").append(column.sql());
                placeholders.append(", ").append(column.placeholder());
                updates.append(column.sql()).append(" = EXCLUDED.").append(column.sql()).append(", ");
            } else if (kind == Kind.DELETE) {
                updates.append(column.sql()).append(" = NULL, ");
            }
        }
        names.append(", deleted, fence_token, fence_seq, updated_at");
        placeholders.append(", ?, ?, ?, now())");
        if (kind != Kind.MARKER) {
            updates.append("deleted = EXCLUDED.deleted, ");
        }
        StringBuilder sql = new StringBuilder("INSERT INTO ").append(table.sql()).append(" AS t (").append(names)
                .append(") VALUES ");
        for (int i = 0; i < rowCount; i++) {
            sql.append(i == 0 ? "" : ", ").append(placeholders);
        }
        sql.append(" ON CONFLICT (resource_key) DO UPDATE SET ").append(updates)
                .append("fence_token = EXCLUDED.fence_token, fence_seq = ").append(SEQ_AFTER).append(", updated_at = now()");
        if (guarded) {
            sql.append(" WHERE ").append(GUARD);
        }
        return sql.append(" RETURNING resource_key").toString();
    }
}
