package dev.fencedwrites.sink.internal;

import dev.fencedwrites.contract.Decision;
import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.sink.internal.ColumnMapping.Column;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;

/**
 * One table of fenced rows as the sink task uses it: its {@link TableStructure} (create, evolve,
 * validate), its {@link GuardedUpsert} statement and the {@link BatchWriter} that runs it, wired
 * together. Every method works inside the caller's transaction (which must not be in auto-commit
 * mode); after a rollback, call {@link #forgetCatalog}. Not thread-safe: one per sink task and table.
 */
public final class RecordTable {
    private final TableStructure structure;
    private final BatchWriter writer;

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
        this.structure = new TableStructure(table, autoCreate, autoEvolve);
        this.writer = new BatchWriter(structure, new GuardedUpsert(table, guarded));
    }

    /** The table name. */
    public TableName name() {
        return structure.name();
    }

    /** See {@link TableStructure#ownColumnMismatches}. */
    public List<String> ownColumnMismatches(Connection connection) throws SQLException {
        return structure.ownColumnMismatches(connection);
    }

    /** See {@link TableStructure#misfitMessage}. */
    public String misfitMessage(List<String> mismatches) {
        return structure.misfitMessage(mismatches);
    }

    /** See {@link TableStructure#exists}. */
    public boolean exists(Connection connection) throws SQLException {
        return structure.exists(connection);
    }

    /** See {@link TableStructure#createStatement}. */
    public String createStatement(List<Column> columns) {
        return structure.createStatement(columns);
    }

    /** See {@link TableStructure#prepare}. */
    public List<Column> prepare(Connection connection, Schema schema) throws SQLException {
        return structure.prepare(connection, schema);
    }

    /** See {@link TableStructure#forgetCatalog}. */
    public void forgetCatalog() {
        structure.forgetCatalog();
    }

    /** See {@link BatchWriter#writeAll}. */
    public List<Outcome> writeAll(Connection connection, List<Row> rows) throws SQLException {
        return writer.writeAll(connection, rows);
    }

    /**
     * Writes one record: a data write, or a delete when {@code value} is {@code null}.
     *
     * @return accept when the row was written; otherwise the rejection reason
     */
    public Decision write(Connection connection, String key, Struct value, Fence fence) throws SQLException {
        return writeAll(connection, List.of(Row.of(key, value, fence))).get(0).decision();
    }

    /**
     * The row's fence, or {@code null} when the key has no row (or the table does not exist yet).
     *
     * @throws SchemaMismatchException if the table exists but does not fit (checked at first use)
     */
    public Fence storedFence(Connection connection, String key) throws SQLException {
        return structure.existsChecked(connection) ? writer.storedFences(connection, List.of(key)).get(key) : null;
    }

    /** See {@link BatchWriter#isDataError}. */
    public static boolean isDataError(SQLException e) {
        return BatchWriter.isDataError(e);
    }
}
