package dev.fencedwrites.sink.internal;

import dev.fencedwrites.contract.Decision;
import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceRule;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.sink.internal.ColumnMapping.Column;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A table of fenced rows for records of any value schema: the key column {@code resource_key},
 * one column per field by {@link ColumnMapping}'s rule, {@code deleted} (soft delete), and the fence
 * columns {@code fence_token} / {@code fence_seq}, plus {@code updated_at}.
 *
 * <p>The upsert's update is guarded by the decision rule written in SQL ({@link #GUARD});
 * {@code RETURNING} tells per record whether it was applied. When it was not, the stored fence is
 * read and {@link FenceRule} names the reason, so the SQL and the Java rule must agree (a test
 * checks them against each other on real PostgreSQL).
 *
 * <p>Every table and data column name in the SQL text is quoted ({@link TableName#sql()},
 * {@link SqlNames#quote}), so keywords and any other characters are names like any other; the sink's
 * own column names are plain lower-case words that are no keyword. Whatever table it writes to, the
 * sink checks it at first use ({@link #ownColumnMismatches}) and refuses one that does not fit
 * (issue 13).
 *
 * <p>Not thread-safe: one per sink task and table.
 */
public final class RecordTable {
    private static final Logger LOG = LoggerFactory.getLogger(RecordTable.class);

    /** The decision rule as a predicate over the stored row {@code t} and the incoming {@code EXCLUDED}. */
    static final String GUARD = "t.fence_token < EXCLUDED.fence_token OR (t.fence_token = EXCLUDED.fence_token"
            + " AND (t.fence_seq IS NULL OR EXCLUDED.fence_seq IS NULL OR t.fence_seq < EXCLUDED.fence_seq))";

    /** {@link FenceRule#raise} in SQL: a same-token write without a seq keeps the stored seq. */
    static final String SEQ_AFTER = "CASE WHEN t.fence_token = EXCLUDED.fence_token AND EXCLUDED.fence_seq IS NULL"
            + " THEN t.fence_seq ELSE EXCLUDED.fence_seq END";

    /** Rows per statement: PostgreSQL's protocol allows 65 535 bind parameters per statement. */
    static final int MAX_PARAMETERS = 30_000;

    /** The sink's own columns and the catalog types each accepts. */
    private static final Map<String, Set<String>> OWN_COLUMNS = Map.of(
            "resource_key", Set.of("text", "character varying"),
            "deleted", Set.of("boolean"),
            "fence_token", Set.of("bigint", "numeric"),
            "fence_seq", Set.of("bigint", "numeric"),
            "updated_at", Set.of("timestamp with time zone"));

    private final TableName table;
    private final boolean guarded;
    private final boolean autoCreate;
    private final boolean autoEvolve;
    /** Column name → catalog data type, as last read; empty when the table does not exist. */
    private Map<String, String> catalog;
    /** Columns that are NOT NULL without a default, identity or generated value, as last read. */
    private Set<String> required = Set.of();
    /** Columns that are NOT NULL, as last read. */
    private Set<String> notNull = Set.of();
    /** Whether the table's own columns and key index were checked since the catalog was last forgotten. */
    private boolean validated;
    /** Value schemas already checked against the table, with their columns. */
    private final Map<Schema, List<Column>> checked = new HashMap<>();

    /**
     * @param table      a table name as {@link TableName#parse} reads it, e.g. {@code billing_summary} or {@code sink."order"}
     * @param guarded    whether to apply the fence guard; {@code false} writes unconditionally
     * @param autoCreate create the table from the first record's schema when it does not exist
     * @param autoEvolve add a column for each new field of a later schema
     * @throws IllegalArgumentException if {@code table} is not a table name
     */
    public RecordTable(String table, boolean guarded, boolean autoCreate, boolean autoEvolve) {
        this(TableName.parse(table), guarded, autoCreate, autoEvolve);
    }

    /**
     * @param table      the table
     * @param guarded    whether to apply the fence guard; {@code false} writes unconditionally
     * @param autoCreate create the table from the first record's schema when it does not exist
     * @param autoEvolve add a column for each new field of a later schema
     */
    public RecordTable(TableName table, boolean guarded, boolean autoCreate, boolean autoEvolve) {
        this.table = table;
        this.guarded = guarded;
        this.autoCreate = autoCreate;
        this.autoEvolve = autoEvolve;
    }

    /** The table name. */
    public TableName name() {
        return table;
    }

    /**
     * One record to write.
     *
     * @param key    the row's primary key, non-empty
     * @param value  the record value, or {@code null} for a delete (data columns nulled, {@code deleted} set, fence kept)
     *               or a marker
     * @param fence  the record's fence
     * @param marker   a winning {@code FENCE} marker: only the row's fence rises, the data stays; a key
     *                 without a row gets a data-less one ({@code deleted} set, data columns NULL)
     * @param previous for a marker, the fence it superseded at the enforcer ({@code fence.marker.previous}),
     *                 or {@code null} when the key had none: the marker then applies only to a row that
     *                 already holds at least that fence (never creating one), so it cannot overtake the
     *                 previous holder's accepted writes still on their way
     */
    public record Row(String key, Struct value, Fence fence, boolean marker, Fence previous) {
        /** A data write, or a delete when {@code value} is {@code null}. */
        public Row(String key, Struct value, Fence fence) {
            this(key, value, fence, false, null);
        }

        /** A {@code FENCE} marker for {@code key} with no earlier fence at the enforcer. */
        public static Row marker(String key, Fence fence) {
            return marker(key, fence, null);
        }

        /** A {@code FENCE} marker for {@code key} that superseded {@code previous} at the enforcer ({@code null}: none). */
        public static Row marker(String key, Fence fence, Fence previous) {
            return new Row(key, null, fence, true, previous);
        }

        Kind kind() {
            return marker ? (previous == null ? Kind.MARKER : Kind.MARKER_AFTER) : value == null ? Kind.DELETE : Kind.DATA;
        }
    }

    /**
     * What a statement writes: data columns, NULLs for a delete, only the fence for a marker (an
     * upsert), or only the fence of a row already at the marker's previous fence (an update).
     */
    private enum Kind { DATA, DELETE, MARKER, MARKER_AFTER }

    /** {@link #GUARD} for the update of {@link Kind#MARKER_AFTER}, whose incoming fence is {@code m.token}/{@code m.seq}. */
    private static final String MARKER_GUARD = GUARD.replace("EXCLUDED.fence_token", "m.token").replace("EXCLUDED.fence_seq", "m.seq");

    /** The row holds at least the marker's previous fence {@code m.previous_token}/{@code m.previous_seq}: every write accepted before the marker is in. */
    private static final String AT_LEAST_PREVIOUS = "(t.fence_token > m.previous_token OR (t.fence_token = m.previous_token"
            + " AND (m.previous_seq IS NULL OR t.fence_seq IS NULL OR t.fence_seq >= m.previous_seq)))";

    /**
     * What happened to one {@link Row}.
     *
     * @param decision accept, or the rejection reason ({@code MALFORMED_VALUE} when the database refused the row's data)
     * @param highest  the key's stored fence when rejected, or {@code null}
     * @param detail   why, for logs and the dead-letter record; {@code null} when accepted
     */
    public record Outcome(Decision decision, Fence highest, String detail) {
    }

    /** Thrown when a record's schema does not fit the table and the table may not be changed to fit it. */
    public static final class SchemaMismatchException extends RuntimeException {
        SchemaMismatchException(String message) {
            super(message);
        }
    }

    /**
     * Checks the sink's own columns of an existing table: the key, fence and delete columns in
     * compatible types and a primary key or unique index on exactly {@code resource_key} (the upsert's
     * conflict target). Data columns are checked per value schema when records arrive.
     *
     * @return the mismatches, each naming the column; a missing table is one mismatch
     */
    public List<String> ownColumnMismatches(Connection connection) throws SQLException {
        Map<String, String> actual = readCatalog(connection);
        if (actual.isEmpty()) {
            return List.of("table " + table + " does not exist" + (table.schema() == null ? " in the current schema" : ""));
        }
        List<String> problems = new ArrayList<>();
        new TreeSet<>(OWN_COLUMNS.keySet()).forEach(column -> {
            String type = actual.get(column);
            Set<String> types = OWN_COLUMNS.get(column);
            if (type == null) {
                problems.add("table " + table + " has no column " + column + " (expected " + String.join(" or ", new TreeSet<>(types)) + ")");
            } else if (!types.contains(type)) {
                problems.add("column " + table + "." + column + " is " + type + ", expected " + String.join(" or ", new TreeSet<>(types)));
            }
        });
        if (actual.containsKey("fence_token") && !notNull.contains("fence_token")) {
            problems.add("column " + table + ".fence_token must be NOT NULL (a row without a fence could never be fenced)");
        }
        try (PreparedStatement statement = connection.prepareStatement("SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid"
                + " AND a.attnum = i.indkey[0] WHERE i.indrelid = to_regclass(format('%I.%I', coalesce(?::text, current_schema()), ?::text))"
                + " AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL AND i.indexprs IS NULL AND i.indimmediate"
                + " AND a.attname = 'resource_key'")) {
            bindTable(statement);
            try (ResultSet rows = statement.executeQuery()) {
                if (!rows.next()) {
                    problems.add("table " + table + " has no primary key or unique index on exactly (resource_key), which the upsert's ON CONFLICT needs"
                            + " (not partial, not deferrable)");
                }
            }
        }
        return problems;
    }

    /**
     * The message for a table that does not fit the sink: every mismatch, and the {@code CREATE TABLE} that would fit.
     *
     * @param mismatches what {@link #ownColumnMismatches} found
     */
    public String misfitMessage(List<String> mismatches) {
        return "table " + table + " does not fit the sink: " + String.join("; ", mismatches)
                + ". Fix the table, or let the sink create it (auto.create=true) as: " + createStatement(List.of())
                + " (data columns are added per record schema)";
    }

    /** The {@code CREATE TABLE} for {@code columns}, for {@code auto.create} and error messages. */
    public String createStatement(List<Column> columns) {
        StringBuilder ddl = new StringBuilder("CREATE TABLE IF NOT EXISTS ").append(table.sql()).append(" (resource_key TEXT PRIMARY KEY");
        for (Column column : columns) {
            ddl.append(", ").append(column.sql()).append(' ').append(column.sqlType());
        }
        return ddl.append(", deleted BOOLEAN NOT NULL DEFAULT FALSE, fence_token BIGINT NOT NULL, fence_seq BIGINT,"
                + " updated_at TIMESTAMPTZ NOT NULL DEFAULT now())").toString();
    }

    /**
     * The columns of {@code schema}, after making sure the table has them: creates the table
     * ({@code auto.create}) or adds missing columns ({@code auto.evolve}), inside the caller's
     * transaction. Checked once per schema.
     *
     * @throws SchemaMismatchException naming every mismatch when the table does not fit and may not be changed
     * @throws org.apache.kafka.connect.errors.DataException if the schema cannot be mapped at all
     */
    public List<Column> prepare(Connection connection, Schema schema) throws SQLException {
        List<Column> known = checked.get(schema);
        if (known != null) {
            return known;
        }
        List<Column> columns = ColumnMapping.columns(schema);
        ensureTable(connection, columns, schema.name());
        List<String> problems = new ArrayList<>();
        List<Column> missing = new ArrayList<>();
        for (Column column : columns) {
            String type = catalog.get(column.name());
            if (type == null) {
                missing.add(column);
            } else if (!column.acceptedCatalogTypes().contains(type)) {
                problems.add("column " + table + "." + column.name() + " is " + type + ", but field " + String.join(".", column.path())
                        + " needs " + column.sqlType());
            }
        }
        Set<String> written = new HashSet<>(OWN_COLUMNS.keySet());
        columns.forEach(column -> written.add(column.name()));
        for (String column : new TreeSet<>(required)) {
            if (!written.contains(column)) {
                problems.add("column " + table + "." + column + " is NOT NULL without a default, but records of this schema do not write it"
                        + " (give it a default or allow NULL)");
            }
        }
        for (Column column : columns) {
            if (notNull.contains(column.name())) {
                problems.add("column " + table + "." + column.name() + " is NOT NULL, but a delete sets the data columns to NULL (allow NULL)");
            }
        }
        if (!missing.isEmpty() && !autoEvolve) {
            for (Column column : missing) {
                problems.add("table " + table + " has no column " + column.name() + " " + column.sqlType() + " for field " + String.join(".", column.path())
                        + " (set auto.evolve=true to add it)");
            }
        }
        if (!problems.isEmpty()) {
            throw new SchemaMismatchException("records of schema " + (schema.name() == null ? "(unnamed)" : schema.name()) + " do not fit table " + table
                    + ": " + String.join("; ", problems));
        }
        if (!missing.isEmpty()) {
            try (Statement statement = connection.createStatement()) {
                for (Column column : missing) {
                    statement.execute("ALTER TABLE " + table.sql() + " ADD COLUMN IF NOT EXISTS " + column.sql() + " " + column.sqlType());
                    LOG.info("added column {}.{} {} for field {}", table, column.name(), column.sqlType(), String.join(".", column.path()));
                }
            }
            catalog = readCatalog(connection);
        }
        checked.put(schema, columns);
        return columns;
    }

    /** Forgets what was read from the catalog, e.g. after a rolled-back transaction created or altered the table. */
    public void forgetCatalog() {
        catalog = null;
        validated = false;
        checked.clear();
    }

    /**
     * Makes sure the table exists (creating it with {@code columns} when {@code auto.create} allows)
     * and, once until the catalog is forgotten, that its own columns and key index fit, whether the
     * table name is fixed or comes from the topic.
     *
     * @throws SchemaMismatchException naming every mismatch, or the missing table without {@code auto.create}
     */
    private void ensureTable(Connection connection, List<Column> columns, String schemaName) throws SQLException {
        if (catalog == null || catalog.isEmpty()) {
            catalog = readCatalog(connection);
        }
        if (catalog.isEmpty()) {
            if (!autoCreate) {
                throw new SchemaMismatchException("table " + table + " does not exist; set auto.create=true or create it as: " + createStatement(columns));
            }
            try (Statement statement = connection.createStatement()) {
                statement.execute(createStatement(columns));
            }
            LOG.info("created table {} for schema {}", table, schemaName);
            catalog = readCatalog(connection);
        }
        if (!validated) {
            List<String> mismatches = ownColumnMismatches(connection);
            if (!mismatches.isEmpty()) {
                throw new SchemaMismatchException(misfitMessage(mismatches));
            }
            validated = true;
        }
    }

    /** Binds the table's schema (or NULL for the current one) and name at parameters 1 and 2. */
    private void bindTable(PreparedStatement statement) throws SQLException {
        if (table.schema() == null) {
            statement.setNull(1, Types.VARCHAR);
        } else {
            statement.setString(1, table.schema());
        }
        statement.setString(2, table.name());
    }

    private Map<String, String> readCatalog(Connection connection) throws SQLException {
        Map<String, String> columns = new LinkedHashMap<>();
        Set<String> mustBeGiven = new HashSet<>();
        Set<String> nonNullable = new HashSet<>();
        try (PreparedStatement statement = connection.prepareStatement("SELECT column_name, data_type, is_nullable, column_default, is_identity,"
                + " is_generated FROM information_schema.columns WHERE table_schema = coalesce(?::text, current_schema()) AND table_name = ?::text"
                + " ORDER BY ordinal_position")) {
            bindTable(statement);
            try (ResultSet rows = statement.executeQuery()) {
                while (rows.next()) {
                    String name = rows.getString(1);
                    columns.put(name, rows.getString(2));
                    if ("NO".equals(rows.getString(3))) {
                        nonNullable.add(name);
                        if (rows.getString(4) == null && !"YES".equals(rows.getString(5)) && "NEVER".equals(rows.getString(6))) {
                            mustBeGiven.add(name);
                        }
                    }
                }
            }
        }
        required = mustBeGiven;
        notNull = nonNullable;
        return columns;
    }

    /**
     * Writes {@code rows} inside the caller's transaction in few round trips and returns each
     * row's outcome, in input order. Rows are grouped into waves where each key appears at most
     * once (a key's n-th row goes into wave n, so its rows are applied in input order); within a
     * wave, rows of one value schema (or deletes, or markers) share a multi-row guarded upsert whose
     * {@code RETURNING} names the applied keys, and one {@code SELECT} reads the fences that refused
     * the others. If the database refuses a statement's data ({@link #isDataError}), that
     * statement is rolled back to its savepoint and its rows written one by one, so exactly the
     * offending rows come back as {@code MALFORMED_VALUE}, whatever their neighbours did: also when
     * every row of a statement or of the whole batch is refused (issue 13).
     *
     * @throws SchemaMismatchException if a value schema does not fit the table (see {@link #prepare})
     * @throws SQLException            on any other database error (the caller rolls back and retries)
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
            // A shape is a value schema, or the Kind of a row without a value (a delete or a marker).
            Map<Object, List<Integer>> byShape = new LinkedHashMap<>();
            for (int index : wave) {
                Row row = rows.get(index);
                byShape.computeIfAbsent(row.kind() == Kind.DATA ? row.value().schema() : row.kind(), shape -> new ArrayList<>()).add(index);
            }
            for (Map.Entry<Object, List<Integer>> shape : byShape.entrySet()) {
                Kind kind = shape.getKey() instanceof Kind valueless ? valueless : Kind.DATA;
                List<Column> columns = columnsOrRefuse(connection, kind == Kind.DATA ? (Schema) shape.getKey() : null, shape.getValue(), outcomes);
                if (columns == null) {
                    continue;
                }
                int perStatement = Math.max(1, MAX_PARAMETERS / (columns.size() + 3));
                List<Integer> indexes = shape.getValue();
                for (int from = 0; from < indexes.size(); from += perStatement) {
                    List<Integer> chunk = indexes.subList(from, Math.min(indexes.size(), from + perStatement));
                    Savepoint beforeChunk = connection.setSavepoint();
                    try {
                        writeChunk(connection, rows, chunk, columns, kind, outcomes);
                        connection.releaseSavepoint(beforeChunk);
                    } catch (SQLException e) {
                        if (!isDataError(e)) {
                            throw e;
                        }
                        connection.rollback(beforeChunk);
                        for (int index : chunk) {
                            writeOne(connection, rows, index, columns, kind, outcomes);
                        }
                    }
                }
            }
        }
        return List.of(outcomes);
    }

    /**
     * The columns for rows of {@code schema} ({@code null}: deletes and markers), after creating or evolving the
     * table; or {@code null} when the database refuses that DDL for the schema itself (SQLState class
     * 54, e.g. more than 1600 columns, 54011), and then every row of {@code indexes} is
     * {@code MALFORMED_VALUE}: one record schema too wide for PostgreSQL stops no other (issue 13).
     */
    private List<Column> columnsOrRefuse(Connection connection, Schema schema, List<Integer> indexes, Outcome[] outcomes) throws SQLException {
        List<Column> known = schema == null ? null : checked.get(schema);
        if (known != null || (schema == null && validated && catalog != null && !catalog.isEmpty())) {
            return known != null ? known : deleteColumns(connection); // no DDL to run: no savepoint, no extra round trip
        }
        Savepoint beforeDdl = connection.setSavepoint();
        try {
            List<Column> columns = schema == null ? deleteColumns(connection) : prepare(connection, schema);
            connection.releaseSavepoint(beforeDdl);
            return columns;
        } catch (SQLException e) {
            if (e.getSQLState() == null || !e.getSQLState().startsWith("54")) {
                throw e;
            }
            connection.rollback(beforeDdl);
            catalog = null; // the rolled-back CREATE or ALTER is gone
            validated = false;
            for (int index : indexes) {
                outcomes[index] = new Outcome(Decision.reject(RejectionReason.MALFORMED_VALUE), null, "the database refused the columns of schema "
                        + (schema == null || schema.name() == null ? "(unnamed)" : schema.name()) + " in table " + table + ": " + e.getMessage());
            }
            return null;
        }
    }

    /**
     * Writes one record inside the caller's transaction (which must not be in auto-commit mode).
     *
     * @return accept when the row was written; otherwise the rejection reason
     */
    public Decision write(Connection connection, String key, Struct value, Fence fence) throws SQLException {
        return writeAll(connection, List.of(new Row(key, value, fence))).get(0).decision();
    }

    /** A delete nulls every data column the table has now (a marker writes none, but needs the table too). */
    private List<Column> deleteColumns(Connection connection) throws SQLException {
        ensureTable(connection, List.of(), "(a delete or a marker)");
        List<Column> columns = new ArrayList<>();
        for (String name : catalog.keySet()) {
            if (!OWN_COLUMNS.containsKey(name)) {
                columns.add(new Column(name, "NULL", List.of(name), null));
            }
        }
        return columns;
    }

    /** The update of {@link Kind#MARKER_AFTER} rows: the fence rises only where the guard allows and the row holds the previous fence. */
    private String markerAfterSql(int rowCount) {
        StringBuilder sql = new StringBuilder("UPDATE ").append(table.sql()).append(" AS t SET fence_token = m.token, fence_seq = ")
                .append(SEQ_AFTER.replace("EXCLUDED.fence_token", "m.token").replace("EXCLUDED.fence_seq", "m.seq"))
                .append(", updated_at = now() FROM (VALUES ");
        for (int i = 0; i < rowCount; i++) {
            sql.append(i == 0 ? "" : ", ").append("(?::text, ?::bigint, ?::bigint, ?::bigint, ?::bigint)");
        }
        return sql.append(") AS m (resource_key, token, seq, previous_token, previous_seq) WHERE t.resource_key = m.resource_key AND (")
                .append(MARKER_GUARD).append(") AND ").append(AT_LEAST_PREVIOUS).append(" RETURNING t.resource_key").toString();
    }

    private static void bindMarkerAfter(PreparedStatement statement, int[] index, Row row) throws SQLException {
        statement.setString(index[0]++, row.key());
        bindFence(statement, index, row.fence());
        bindFence(statement, index, row.previous());
    }

    private static void bindFence(PreparedStatement statement, int[] index, Fence fence) throws SQLException {
        statement.setLong(index[0]++, fence.token());
        if (fence.hasSeq()) {
            statement.setLong(index[0]++, fence.seq());
        } else {
            statement.setNull(index[0]++, Types.BIGINT);
        }
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
        StringBuilder sql = new StringBuilder("INSERT INTO ").append(table.sql()).append(" AS t (").append(names).append(") VALUES ");
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

    private void bindRow(PreparedStatement statement, int[] index, Row row, List<Column> columns, Kind kind) throws SQLException {
        statement.setString(index[0]++, row.key());
        if (kind == Kind.DATA) {
            for (Column column : columns) {
                ColumnMapping.bind(statement, index[0]++, column, row.value());
            }
        }
        // A marker's new row holds no data: it reads as deleted until its holder writes.
        statement.setBoolean(index[0]++, kind != Kind.DATA);
        bindFence(statement, index, row.fence());
    }

    private void writeChunk(Connection connection, List<Row> rows, List<Integer> chunk, List<Column> columns, Kind kind, Outcome[] outcomes)
            throws SQLException {
        Set<String> applied = new HashSet<>();
        String sql = kind == Kind.MARKER_AFTER ? markerAfterSql(chunk.size()) : upsertSql(columns, kind, chunk.size());
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            int[] index = {1};
            for (int row : chunk) {
                if (kind == Kind.MARKER_AFTER) {
                    bindMarkerAfter(statement, index, rows.get(row));
                } else {
                    bindRow(statement, index, rows.get(row), columns, kind);
                }
            }
            try (ResultSet returned = statement.executeQuery()) {
                while (returned.next()) {
                    applied.add(returned.getString(1));
                }
            }
        }
        List<String> refusedKeys = new ArrayList<>();
        for (int row : chunk) {
            if (applied.contains(rows.get(row).key())) {
                outcomes[row] = new Outcome(Decision.accept(), null, null);
            } else {
                refusedKeys.add(rows.get(row).key());
            }
        }
        if (refusedKeys.isEmpty()) {
            return;
        }
        // The refused rows' keys were not touched by this statement (one row per key), and the
        // failed upsert locked them, so these are the fences that refused them.
        Map<String, Fence> stored = storedFences(connection, refusedKeys);
        for (int row : chunk) {
            if (outcomes[row] == null) {
                outcomes[row] = refused(rows.get(row), stored.get(rows.get(row).key()));
            }
        }
    }

    private static Outcome refused(Row row, Fence highest) {
        Decision decision = FenceRule.decide(highest, row.fence());
        return new Outcome(decision.accepted() ? Decision.reject(RejectionReason.STALE_TOKEN) : decision, highest, "incoming " + row.fence());
    }

    /** Writes one row in its own savepoint; a row whose data the database refuses becomes {@code MALFORMED_VALUE}. */
    private void writeOne(Connection connection, List<Row> rows, int row, List<Column> columns, Kind kind, Outcome[] outcomes) throws SQLException {
        Savepoint beforeRow = connection.setSavepoint();
        try {
            writeChunk(connection, rows, List.of(row), columns, kind, outcomes);
            connection.releaseSavepoint(beforeRow);
        } catch (SQLException e) {
            if (!isDataError(e)) {
                throw e;
            }
            connection.rollback(beforeRow);
            outcomes[row] = new Outcome(Decision.reject(RejectionReason.MALFORMED_VALUE), null, "the database refused the record: " + e.getMessage());
        }
    }

    /**
     * Errors of one row's data, which no retry can fix and which say nothing about other rows:
     * SQLState class 22 (data exception, e.g. a NUL in text 22021, a value out of range 22003), 54
     * (program limit exceeded, e.g. a key too long for the index 54000), 23502 (NULL in a NOT NULL
     * column) and 23514 (a check constraint). Each is the row's own outcome, dead-lettered alone, even
     * when all rows of a statement break it (issue 13). Everything else is the table's or the
     * database's fault and fails the task: an undefined table or column (42P01, 42703: changed under
     * the running task), a type mismatch (42804), missing privileges (42501), and the integrity
     * violations that depend on other rows and their order, another unique index (23505) or a foreign
     * key (23503). Source: PostgreSQL's "PostgreSQL Error Codes" appendix.
     */
    public static boolean isDataError(SQLException e) {
        String state = e.getSQLState();
        return state != null && (state.startsWith("22") || state.startsWith("54") || state.equals("23502") || state.equals("23514"));
    }

    /** The stored fences of {@code keys} that have a row. */
    private Map<String, Fence> storedFences(Connection connection, List<String> keys) throws SQLException {
        Map<String, Fence> fences = new HashMap<>();
        try (PreparedStatement statement = connection.prepareStatement(
                "SELECT resource_key, fence_token, fence_seq FROM " + table.sql() + " WHERE resource_key = ANY (?)")) {
            statement.setArray(1, connection.createArrayOf("text", keys.toArray()));
            try (ResultSet rows = statement.executeQuery()) {
                while (rows.next()) {
                    String key = rows.getString(1);
                    long token = rows.getLong(2);
                    long seq = rows.getLong(3);
                    boolean noSeq = rows.wasNull(); // right after the seq column: wasNull() tells about the last column read
                    fences.put(key, new Fence(token, noSeq ? Fence.NO_SEQ : seq));
                }
            }
        }
        return fences;
    }

    /**
     * The row's fence, or {@code null} when the key has no row (or the table does not exist yet).
     *
     * @throws SchemaMismatchException if the table exists but does not fit (checked at first use)
     */
    public Fence storedFence(Connection connection, String key) throws SQLException {
        if (catalog == null || catalog.isEmpty()) {
            catalog = readCatalog(connection);
            if (catalog.isEmpty()) {
                return null;
            }
        }
        if (!validated) {
            ensureTable(connection, List.of(), null);
        }
        return storedFences(connection, List.of(key)).get(key);
    }
}
