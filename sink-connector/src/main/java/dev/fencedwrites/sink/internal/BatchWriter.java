package dev.fencedwrites.sink.internal;

import dev.fencedwrites.contract.Decision;
import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceRule;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.sink.internal.ColumnMapping.Column;
import dev.fencedwrites.sink.internal.GuardedUpsert.Kind;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.connect.data.Schema;

/**
 * Writes rows to one table in few round trips, inside the caller's transaction, and returns each
 * row's {@link Outcome}: the batching half of kafka-connect-jdbc's {@code BufferedRecords}, with a
 * per-row fallback. Rows are grouped into waves where each key appears at most once (a key's n-th
 * row goes into wave n, so its rows are applied in input order); within a wave, rows of one value
 * schema (or deletes, or markers) share a multi-row {@link GuardedUpsert} of at most
 * {@link #MAX_PARAMETERS} bind parameters, whose {@code RETURNING} names the applied keys, and one
 * {@code SELECT} reads the fences that refused the others ({@link FenceRule} names the reason).
 *
 * <p>If the database refuses a statement's data ({@link #isDataError}), the statement is rolled
 * back to its savepoint and its rows written one by one, so exactly the offending rows come back as
 * {@code MALFORMED_VALUE}, whatever their neighbours did: also when every row of a statement or of
 * the whole batch is refused. Not thread-safe: one per sink task and table.
 */
public final class BatchWriter {
    /** Bind parameters per statement: PostgreSQL's protocol allows 65 535. */
    static final int MAX_PARAMETERS = 30_000;

    private final TableStructure structure;
    private final GuardedUpsert upsert;

    /**
     * @param structure the table's structure, which creates and evolves it as rows need
     * @param upsert    the table's guarded statement
     */
    public BatchWriter(TableStructure structure, GuardedUpsert upsert) {
        this.structure = structure;
        this.upsert = upsert;
    }

    /**
     * Writes {@code rows} and returns each row's outcome, in input order.
     *
     * @throws SchemaMismatchException if a value schema does not fit the table (see {@link TableStructure#prepare})
     * @throws SQLException            on any other database error (the caller rolls back and retries)
     */
    public List<Outcome> writeAll(Connection connection, List<Row> rows) throws SQLException {
        Outcome[] outcomes = new Outcome[rows.size()];
        for (List<Integer> wave : waves(rows)) {
            // A shape is a value schema, or the Kind of a row without a value (a delete or a marker).
            Map<Object, List<Integer>> byShape = new LinkedHashMap<>();
            for (int index : wave) {
                Row row = rows.get(index);
                byShape.computeIfAbsent(row instanceof Row.Upsert data ? data.value().schema() : GuardedUpsert.kind(row),
                        shape -> new ArrayList<>()).add(index);
            }
            for (Map.Entry<Object, List<Integer>> shape : byShape.entrySet()) {
                Kind kind = shape.getKey() instanceof Kind valueless ? valueless : Kind.DATA;
                Schema schema = kind == Kind.DATA ? (Schema) shape.getKey() : null;
                List<Column> columns = columnsOrRefuse(connection, schema, shape.getValue(), outcomes);
                if (columns != null) {
                    writeShape(connection, rows, shape.getValue(), columns, kind, outcomes);
                }
            }
        }
        return List.of(outcomes);
    }

    /** The indexes of {@code rows} in waves: a key's n-th row is in wave n. */
    private static List<List<Integer>> waves(List<Row> rows) {
        List<List<Integer>> waves = new ArrayList<>();
        Map<String, Integer> seen = new HashMap<>();
        for (int i = 0; i < rows.size(); i++) {
            int wave = seen.merge(rows.get(i).key(), 1, Integer::sum) - 1;
            while (waves.size() <= wave) {
                waves.add(new ArrayList<>());
            }
            waves.get(wave).add(i);
        }
        return waves;
    }

    /** Writes rows of one shape in statements of at most {@link #MAX_PARAMETERS}, each chunk falling back to row by row. */
    private void writeShape(Connection connection, List<Row> rows, List<Integer> indexes, List<Column> columns, Kind kind,
            Outcome[] outcomes) throws SQLException {
        int perStatement = Math.max(1, MAX_PARAMETERS / (columns.size() + 3));
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

    /**
     * The columns for rows of {@code schema} ({@code null}: deletes and markers), after creating or evolving the
     * table; or {@code null} when the database refuses that DDL for the schema itself (SQLState class
     * 54, e.g. more than 1600 columns, 54011), and then every row of {@code indexes} is
     * {@code MALFORMED_VALUE}: one record schema too wide for PostgreSQL stops no other.
     */
    private List<Column> columnsOrRefuse(Connection connection, Schema schema, List<Integer> indexes, Outcome[] outcomes)
            throws SQLException {
        if (structure.ready(schema)) {
            return structure.columns(connection, schema); // no DDL to run: no savepoint, no extra round trip
        }
        Savepoint beforeDdl = connection.setSavepoint();
        try {
            List<Column> columns = structure.columns(connection, schema);
            connection.releaseSavepoint(beforeDdl);
            return columns;
        } catch (SQLException e) {
            if (e.getSQLState() == null || !e.getSQLState().startsWith("54")) {
                throw e;
            }
            connection.rollback(beforeDdl);
            structure.forgetTable(); // the rolled-back CREATE or ALTER is gone
            for (int index : indexes) {
                outcomes[index] = new Outcome(Decision.reject(RejectionReason.MALFORMED_VALUE), null,
                        "the database refused the columns of"
                                + " schema " + (schema == null || schema.name() == null ? "(unnamed)" : schema.name())
                                + " in table "
                                + structure.name() + ": " + e.getMessage());
            }
            return null;
        }
    }

    private void writeChunk(Connection connection, List<Row> rows, List<Integer> chunk, List<Column> columns, Kind kind,
            Outcome[] outcomes) throws SQLException {
        Set<String> applied = new HashSet<>();
        try (PreparedStatement statement = connection.prepareStatement(upsert.sql(kind, columns, chunk.size()))) {
            int[] index = {1};
            for (int row : chunk) {
                upsert.bind(statement, index, rows.get(row), columns);
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
                outcomes[row] = Outcome.ACCEPTED;
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
        return new Outcome(decision.accepted() ? Decision.reject(RejectionReason.STALE_TOKEN) : decision, highest,
                "incoming " + row.fence());
    }

    /** Writes one row in its own savepoint; a row whose data the database refuses becomes {@code MALFORMED_VALUE}. */
    private void writeOne(Connection connection, List<Row> rows, int row, List<Column> columns, Kind kind, Outcome[] outcomes)
            throws SQLException {
        Savepoint beforeRow = connection.setSavepoint();
        try {
            writeChunk(connection, rows, List.of(row), columns, kind, outcomes);
            connection.releaseSavepoint(beforeRow);
        } catch (SQLException e) {
            if (!isDataError(e)) {
                throw e;
            }
            connection.rollback(beforeRow);
            outcomes[row] = new Outcome(Decision.reject(RejectionReason.MALFORMED_VALUE), null,
                    "the database refused the record: " + e.getMessage());
        }
    }

    /**
     * Errors of one row's data, which no retry can fix and which say nothing about other rows:
     * SQLState class 22 (data exception, e.g. a NUL in text 22021, a value out of range 22003), 54
     * (program limit exceeded, e.g. a key too long for the index 54000), 23502 (NULL in a NOT NULL
     * column) and 23514 (a check constraint). Each is the row's own outcome, dead-lettered alone, even
     * when all rows of a statement break it. Everything else is the table's or the
     * database's fault and fails the task: an undefined table or column (42P01, 42703: changed under
     * the running task), a type mismatch (42804), missing privileges (42501), and the integrity
     * violations that depend on other rows and their order, another unique index (23505) or a foreign
     * key (23503). Source: PostgreSQL's "PostgreSQL Error Codes" appendix.
     */
    public static boolean isDataError(SQLException e) {
        String state = e.getSQLState();
        return state != null
                && (state.startsWith("22") || state.startsWith("54") || state.equals("23502") || state.equals("23514"));
    }

    /** The stored fences of {@code keys} that have a row. */
    Map<String, Fence> storedFences(Connection connection, List<String> keys) throws SQLException {
        Map<String, Fence> fences = new HashMap<>();
        try (PreparedStatement statement = connection.prepareStatement(
                "SELECT resource_key, fence_token, fence_seq FROM " + structure.name().sql() + " WHERE resource_key = ANY (?)")) {
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
}
