package dev.fencedwrites.sink.internal;

import dev.fencedwrites.schemas.Decision;
import dev.fencedwrites.schemas.Fence;
import dev.fencedwrites.schemas.FenceRule;
import dev.fencedwrites.schemas.RejectionReason;
import dev.fencedwrites.schemas.billing.BillingSummary;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.sql.Timestamp;
import java.sql.Types;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The {@code BillingSummary} table: one row per record key, the data columns, {@code deleted}
 * (soft delete), and the fence columns {@code fence_token} / {@code fence_seq}.
 *
 * <p>The upsert's update is guarded by the decision rule written in SQL
 * ({@link #GUARD}); {@code RETURNING} tells per record whether it was applied. When it was not,
 * the stored fence is read and {@link FenceRule} names the reason, so the SQL and the Java rule
 * must agree (a test checks them against each other on real PostgreSQL).
 */
public final class BillingSummaryTable {
    /** The decision rule as a predicate over the stored row {@code t} and the incoming {@code EXCLUDED}. */
    static final String GUARD = "t.fence_token < EXCLUDED.fence_token OR (t.fence_token = EXCLUDED.fence_token"
            + " AND (t.fence_seq IS NULL OR EXCLUDED.fence_seq IS NULL OR t.fence_seq < EXCLUDED.fence_seq))";

    /** {@link FenceRule#raise} in SQL: a same-token write without a seq keeps the stored seq. */
    static final String SEQ_AFTER = "CASE WHEN t.fence_token = EXCLUDED.fence_token AND EXCLUDED.fence_seq IS NULL"
            + " THEN t.fence_seq ELSE EXCLUDED.fence_seq END";

    /** Data and fence columns written per row, in statement order. */
    private static final String COLUMNS = "resource_key, customer_id, billing_period, amount_minor, currency, line_items,"
            + " computed_at, computed_by, deleted, fence_token, fence_seq, updated_at";
    private static final String ROW_PLACEHOLDERS = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())";
    private static final int PARAMETERS_PER_ROW = 11;
    /** Rows per statement: PostgreSQL's protocol allows 65 535 bind parameters per statement. */
    static final int MAX_ROWS_PER_STATEMENT = 1_000;

    private final String table;
    private final String upsert;
    private final String conflictClause;
    private final String selectFence;
    private final String selectFences;

    /**
     * @param table   a plain SQL identifier
     * @param guarded whether to apply the fence guard; {@code false} writes unconditionally
     */
    public BillingSummaryTable(String table, boolean guarded) {
        this.table = table;
        this.conflictClause = " ON CONFLICT (resource_key) DO UPDATE SET customer_id = EXCLUDED.customer_id, billing_period = EXCLUDED.billing_period,"
                + " amount_minor = EXCLUDED.amount_minor, currency = EXCLUDED.currency, line_items = EXCLUDED.line_items,"
                + " computed_at = EXCLUDED.computed_at, computed_by = EXCLUDED.computed_by, deleted = EXCLUDED.deleted,"
                + " fence_token = EXCLUDED.fence_token, fence_seq = " + SEQ_AFTER + ", updated_at = now()"
                + (guarded ? " WHERE " + GUARD : "")
                + " RETURNING resource_key";
        this.upsert = "INSERT INTO " + table + " AS t (" + COLUMNS + ") VALUES " + ROW_PLACEHOLDERS + conflictClause;
        this.selectFence = "SELECT fence_token, fence_seq FROM " + table + " WHERE resource_key = ?";
        this.selectFences = "SELECT resource_key, fence_token, fence_seq FROM " + table + " WHERE resource_key = ANY (?)";
    }

    /** Each column the upsert writes, and the PostgreSQL types ({@code information_schema} names) it accepts. */
    private static final Map<String, Set<String>> EXPECTED_COLUMNS = expectedColumns();

    private static Map<String, Set<String>> expectedColumns() {
        Set<String> text = Set.of("text", "character varying");
        Map<String, Set<String>> columns = new java.util.LinkedHashMap<>();
        columns.put("resource_key", text);
        columns.put("customer_id", text);
        columns.put("billing_period", text);
        columns.put("amount_minor", Set.of("bigint", "numeric"));
        columns.put("currency", text);
        columns.put("line_items", Set.of("integer", "bigint"));
        columns.put("computed_at", Set.of("timestamp with time zone"));
        columns.put("computed_by", text);
        columns.put("deleted", Set.of("boolean"));
        columns.put("fence_token", Set.of("bigint", "numeric"));
        columns.put("fence_seq", Set.of("bigint", "numeric"));
        columns.put("updated_at", Set.of("timestamp with time zone"));
        return columns;
    }

    /**
     * Checks that the table exists in the connection's current schema with every column the
     * upsert writes, in a compatible type, and a primary key or unique index on exactly
     * {@code resource_key} (the upsert's conflict target).
     *
     * @return the mismatches, each naming the table, the column and what was expected; empty when the table fits
     * @throws SQLException if the catalog cannot be read
     */
    public List<String> mismatches(Connection connection) throws SQLException {
        Map<String, String> actual = new HashMap<>();
        Map<String, String> nullable = new HashMap<>();
        try (PreparedStatement statement = connection.prepareStatement("SELECT column_name, data_type, is_nullable FROM information_schema.columns"
                + " WHERE table_schema = current_schema() AND table_name = ?")) {
            statement.setString(1, table.toLowerCase(java.util.Locale.ROOT));
            try (ResultSet rows = statement.executeQuery()) {
                while (rows.next()) {
                    actual.put(rows.getString(1), rows.getString(2));
                    nullable.put(rows.getString(1), rows.getString(3));
                }
            }
        }
        if (actual.isEmpty()) {
            return List.of("table " + table + " does not exist in the current schema");
        }
        List<String> problems = new ArrayList<>();
        EXPECTED_COLUMNS.forEach((column, types) -> {
            String type = actual.get(column);
            if (type == null) {
                problems.add("table " + table + " has no column " + column + " (expected " + String.join(" or ", new java.util.TreeSet<>(types)) + ")");
            } else if (!types.contains(type)) {
                problems.add("column " + table + "." + column + " is " + type + ", expected " + String.join(" or ", new java.util.TreeSet<>(types)));
            }
        });
        for (Map.Entry<String, String> column : nullable.entrySet()) {
            if ("NO".equals(column.getValue()) && !EXPECTED_COLUMNS.containsKey(column.getKey())) {
                problems.add("column " + table + "." + column.getKey() + " is NOT NULL but the sink does not write it (give it a default or allow NULL)");
            }
        }
        try (PreparedStatement statement = connection.prepareStatement("SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid"
                + " AND a.attnum = i.indkey[0] WHERE i.indrelid = to_regclass(?) AND i.indisunique AND i.indnatts = 1 AND a.attname = 'resource_key'")) {
            statement.setString(1, table);
            try (ResultSet rows = statement.executeQuery()) {
                if (!rows.next()) {
                    problems.add("table " + table + " has no primary key or unique index on exactly (resource_key), which the upsert's ON CONFLICT needs");
                }
            }
        }
        return problems;
    }

    /** The statement that creates the table, for error messages and {@link #createIfMissing}. */
    public String createStatement() {
        return "CREATE TABLE IF NOT EXISTS " + table + " ("
                + "resource_key TEXT PRIMARY KEY, customer_id TEXT, billing_period TEXT, amount_minor BIGINT, currency TEXT,"
                + " line_items INTEGER, computed_at TIMESTAMPTZ, computed_by TEXT, deleted BOOLEAN NOT NULL DEFAULT FALSE,"
                + " fence_token BIGINT NOT NULL, fence_seq BIGINT, updated_at TIMESTAMPTZ NOT NULL DEFAULT now())";
    }

    /** Creates the table if it does not exist. */
    public void createIfMissing(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            statement.execute(createStatement());
        }
    }

    /**
     * Writes one record inside the caller's transaction.
     *
     * @param key   the record key (the row's primary key)
     * @param value the summary, or {@code null} for a delete (data columns nulled, {@code deleted}
     *              set, fence kept)
     * @return accept when the row was written; otherwise the rejection reason
     * @throws SQLException on database errors
     */
    public Decision write(Connection connection, String key, BillingSummary value, Fence fence) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(upsert)) {
            bind(statement, 0, new Row(key, value, fence));
            try (ResultSet applied = statement.executeQuery()) {
                if (applied.next()) {
                    return Decision.accept();
                }
            }
        }
        Fence stored = storedFence(connection, key);
        Decision decision = FenceRule.decide(stored, fence);
        // The row is locked by the failed upsert, so the stored fence cannot have moved in between.
        return decision.accepted() ? Decision.reject(RejectionReason.STALE_TOKEN) : decision;
    }

    /**
     * One record to write: the record key, the summary ({@code null} for a delete) and its fence.
     *
     * @param key   the row's primary key, non-empty
     * @param value the summary, or {@code null} for a delete
     * @param fence the record's fence
     */
    public record Row(String key, BillingSummary value, Fence fence) {
    }

    /**
     * What happened to one {@link Row} of {@link #writeAll}.
     *
     * @param decision accept, or the rejection reason ({@code MALFORMED_VALUE} when the database refused the row's data)
     * @param highest  the key's stored fence when rejected, or {@code null}
     * @param detail   why, for logs and the dead-letter record; {@code null} when accepted
     */
    public record Outcome(Decision decision, Fence highest, String detail) {
    }

    /**
     * Writes {@code rows} inside the caller's transaction in few round trips and returns each
     * row's outcome, in input order. Rows are grouped into waves where each key appears at most
     * once (a key's n-th row goes into wave n, so its rows are applied in input order); each wave
     * is one multi-row guarded upsert whose {@code RETURNING} names the applied keys, and one
     * {@code SELECT} reads the fences that refused the others. If the database refuses a wave's
     * data (SQLState class 22 or 23), that wave is rolled back to its savepoint and written row by
     * row, so only the offending rows come back as {@code MALFORMED_VALUE}.
     *
     * @throws SQLException on any other database error (the caller rolls back and retries)
     */
    public List<Outcome> writeAll(Connection connection, List<Row> rows) throws SQLException {
        Outcome[] outcomes = new Outcome[rows.size()];
        List<List<Integer>> waves = new ArrayList<>();
        Map<String, Integer> seen = new HashMap<>();
        for (int i = 0; i < rows.size(); i++) {
            int wave = seen.merge(rows.get(i).key(), 1, Integer::sum) - 1;
            while (waves.size() <= wave) {
                waves.add(new ArrayList<>());
            }
            waves.get(wave).add(i);
        }
        for (List<Integer> wave : waves) {
            for (int from = 0; from < wave.size(); from += MAX_ROWS_PER_STATEMENT) {
                List<Integer> chunk = wave.subList(from, Math.min(wave.size(), from + MAX_ROWS_PER_STATEMENT));
                Savepoint beforeChunk = connection.setSavepoint();
                try {
                    writeChunk(connection, rows, chunk, outcomes);
                    connection.releaseSavepoint(beforeChunk);
                } catch (SQLException e) {
                    if (!isDataError(e)) {
                        throw e;
                    }
                    connection.rollback(beforeChunk);
                    writeOneByOne(connection, rows, chunk, outcomes);
                }
            }
        }
        return List.of(outcomes);
    }

    private void writeChunk(Connection connection, List<Row> rows, List<Integer> chunk, Outcome[] outcomes) throws SQLException {
        StringBuilder sql = new StringBuilder("INSERT INTO ").append(table).append(" AS t (").append(COLUMNS).append(") VALUES ");
        for (int i = 0; i < chunk.size(); i++) {
            sql.append(i == 0 ? "" : ", ").append(ROW_PLACEHOLDERS);
        }
        sql.append(conflictClause);
        Set<String> applied = new HashSet<>();
        try (PreparedStatement statement = connection.prepareStatement(sql.toString())) {
            for (int i = 0; i < chunk.size(); i++) {
                bind(statement, i * PARAMETERS_PER_ROW, rows.get(chunk.get(i)));
            }
            try (ResultSet returned = statement.executeQuery()) {
                while (returned.next()) {
                    applied.add(returned.getString(1));
                }
            }
        }
        List<String> refusedKeys = new ArrayList<>();
        for (int index : chunk) {
            if (applied.contains(rows.get(index).key())) {
                outcomes[index] = new Outcome(Decision.accept(), null, null);
            } else {
                refusedKeys.add(rows.get(index).key());
            }
        }
        if (refusedKeys.isEmpty()) {
            return;
        }
        // The refused rows' keys were not touched by this statement (one row per key), and the
        // failed upsert locked them, so these are the fences that refused them.
        Map<String, Fence> stored = storedFences(connection, refusedKeys);
        for (int index : chunk) {
            if (outcomes[index] == null) {
                Row row = rows.get(index);
                Fence highest = stored.get(row.key());
                Decision decision = FenceRule.decide(highest, row.fence());
                outcomes[index] = new Outcome(decision.accepted() ? Decision.reject(RejectionReason.STALE_TOKEN) : decision, highest,
                        "incoming " + row.fence());
            }
        }
    }

    private void writeOneByOne(Connection connection, List<Row> rows, List<Integer> chunk, Outcome[] outcomes) throws SQLException {
        for (int index : chunk) {
            Row row = rows.get(index);
            Savepoint beforeRow = connection.setSavepoint();
            try {
                Decision decision = write(connection, row.key(), row.value(), row.fence());
                connection.releaseSavepoint(beforeRow);
                outcomes[index] = decision.accepted() ? new Outcome(decision, null, null)
                        : new Outcome(decision, storedFence(connection, row.key()), "incoming " + row.fence());
            } catch (SQLException e) {
                if (!isDataError(e)) {
                    throw e;
                }
                connection.rollback(beforeRow);
                outcomes[index] = new Outcome(Decision.reject(RejectionReason.MALFORMED_VALUE), null,
                        "the database refused the record: " + e.getMessage());
            }
        }
    }

    /** SQLState class 22 (data exception) or 23 (integrity constraint violation): this data can never be written. */
    public static boolean isDataError(SQLException e) {
        String state = e.getSQLState();
        return state != null && (state.startsWith("22") || state.startsWith("23"));
    }

    private static void bind(PreparedStatement statement, int offset, Row row) throws SQLException {
        BillingSummary value = row.value();
        statement.setString(offset + 1, row.key());
        if (value == null) {
            statement.setNull(offset + 2, Types.VARCHAR);
            statement.setNull(offset + 3, Types.VARCHAR);
            statement.setNull(offset + 4, Types.BIGINT);
            statement.setNull(offset + 5, Types.VARCHAR);
            statement.setNull(offset + 6, Types.INTEGER);
            statement.setNull(offset + 7, Types.TIMESTAMP_WITH_TIMEZONE);
            statement.setNull(offset + 8, Types.VARCHAR);
        } else {
            statement.setString(offset + 2, value.getCustomerId());
            statement.setString(offset + 3, value.getBillingPeriod());
            statement.setLong(offset + 4, value.getAmountMinor());
            statement.setString(offset + 5, value.getCurrency());
            statement.setInt(offset + 6, value.getLineItems());
            statement.setTimestamp(offset + 7, Timestamp.from(value.getComputedAt()));
            statement.setString(offset + 8, value.getComputedBy());
        }
        statement.setBoolean(offset + 9, value == null);
        statement.setLong(offset + 10, row.fence().token());
        if (row.fence().hasSeq()) {
            statement.setLong(offset + 11, row.fence().seq());
        } else {
            statement.setNull(offset + 11, Types.BIGINT);
        }
    }

    /** The stored fences of {@code keys} that have a row. */
    private Map<String, Fence> storedFences(Connection connection, List<String> keys) throws SQLException {
        Map<String, Fence> fences = new HashMap<>();
        try (PreparedStatement statement = connection.prepareStatement(selectFences)) {
            statement.setArray(1, connection.createArrayOf("text", keys.toArray()));
            try (ResultSet rows = statement.executeQuery()) {
                while (rows.next()) {
                    long token = rows.getLong(2);
                    long seq = rows.getLong(3);
                    fences.put(rows.getString(1), new Fence(token, rows.wasNull() ? Fence.NO_SEQ : seq));
                }
            }
        }
        return fences;
    }

    /** The row's fence, or {@code null} when the key has no row. */
    public Fence storedFence(Connection connection, String key) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(selectFence)) {
            statement.setString(1, key);
            try (ResultSet row = statement.executeQuery()) {
                if (!row.next()) {
                    return null;
                }
                long token = row.getLong(1);
                long seq = row.getLong(2);
                return new Fence(token, row.wasNull() ? Fence.NO_SEQ : seq);
            }
        }
    }
}
