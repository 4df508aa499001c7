package dev.fencedwrites.sink.internal;

import dev.fencedwrites.sink.internal.ColumnMapping.Column;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.connect.data.Schema;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The structure of one table of fenced rows: creates it ({@code auto.create}), adds columns for new
 * fields ({@code auto.evolve}), and validates it, reading PostgreSQL's catalog
 * ({@code information_schema.columns}, {@code pg_index}). The table has the key column
 * {@code resource_key}, one column per value field by {@link ColumnMapping}'s rule, {@code deleted}
 * (soft delete), the fence columns {@code fence_token} / {@code fence_seq}, and {@code updated_at}.
 *
 * <p>Whatever table the sink writes to, it is checked at first use ({@link #ownColumnMismatches}) and
 * refused when it does not fit; each value schema is checked once. What was read is cached
 * until {@link #forgetCatalog}, which the caller calls after a rollback. The create and evolve half
 * of kafka-connect-jdbc's {@code DbStructure}. Not thread-safe: one per sink task and table.
 */
public final class TableStructure {
    // RecordTable's logger name, as before the split
    private static final Logger LOG = LoggerFactory.getLogger(RecordTable.class);

    /** The sink's own columns and the catalog types each accepts. */
    private static final Map<String, Set<String>> OWN_COLUMNS = Map.of(
            "resource_key", Set.of("text", "character varying"),
            "deleted", Set.of("boolean"),
            "fence_token", Set.of("bigint", "numeric"),
            "fence_seq", Set.of("bigint", "numeric"),
            "updated_at", Set.of("timestamp with time zone"));

    private final TableName table;
    private final boolean autoCreate;
    private final boolean autoEvolve;
    /** The catalog as last read; {@code null} when not read since it was last forgotten. */
    private TableCatalog catalog;
    /** Whether the table's own columns and key index were checked since the catalog was last forgotten. */
    private boolean validated;
    /** Value schemas already checked against the table, with their columns. */
    private final Map<Schema, List<Column>> checked = new HashMap<>();

    /**
     * @param table      the table
     * @param autoCreate create the table from the first record's schema when it does not exist
     * @param autoEvolve add a column for each new field of a later schema
     */
    public TableStructure(TableName table, boolean autoCreate, boolean autoEvolve) {
        this.table = table;
        this.autoCreate = autoCreate;
        this.autoEvolve = autoEvolve;
    }

    /** The table name. */
    public TableName name() {
        return table;
    }

    /**
     * Whether {@link #columns} needs no DDL and no catalog read for {@code schema} ({@code null}: deletes
     * and markers): the schema was checked, or the table was validated.
     */
    boolean ready(Schema schema) {
        return schema == null ? validated && catalog != null && catalog.exists() : checked.containsKey(schema);
    }

    /**
     * The data columns for rows of {@code schema} ({@link #prepare}), or for deletes and markers when it is
     * {@code null}: every data column the table has now (a delete nulls them; a marker writes none, but
     * needs the table too).
     */
    List<Column> columns(Connection connection, Schema schema) throws SQLException {
        if (schema != null) {
            return prepare(connection, schema);
        }
        ensureTable(connection, List.of(), "(a delete or a marker)");
        List<Column> columns = new ArrayList<>();
        for (String name : catalog.types().keySet()) {
            if (!OWN_COLUMNS.containsKey(name)) {
                columns.add(new Column(name, "NULL", List.of(name), null));
            }
        }
        return columns;
    }

    /** Forgets the catalog and the validation after DDL was rolled back, keeping the checked schemas. */
    void forgetTable() {
        catalog = null;
        validated = false;
    }

    /**
     * Whether the table exists, validating it at first use.
     *
     * @throws SchemaMismatchException if the table exists but does not fit
     */
    boolean existsChecked(Connection connection) throws SQLException {
        if (catalog == null || !catalog.exists()) {
            catalog = TableCatalog.read(connection, table);
            if (!catalog.exists()) {
                return false;
            }
        }
        if (!validated) {
            ensureTable(connection, List.of(), null);
        }
        return true;
    }

    /**
     * Checks the sink's own columns of an existing table: the key, fence and delete columns in
     * compatible types and a primary key or unique index on exactly {@code resource_key} (the upsert's
     * conflict target). Data columns are checked per value schema when records arrive.
     *
     * @return the mismatches, each naming the column; a missing table is one mismatch
     */
    public List<String> ownColumnMismatches(Connection connection) throws SQLException {
        TableCatalog actual = TableCatalog.read(connection, table);
        if (!actual.exists()) {
            return List.of("table " + table + " does not exist" + (table.schema() == null ? " in the current schema" : "")
                    + TableCatalog.otherRelation(connection, table).map(other -> ": " + other + " of that name is in the way")
                            .orElse(""));
        }
        List<String> problems = new ArrayList<>();
        new TreeSet<>(OWN_COLUMNS.keySet()).forEach(column -> {
            String type = actual.types().get(column);
            String expected = String.join(" or ", new TreeSet<>(OWN_COLUMNS.get(column)));
            if (type == null) {
                problems.add("table " + table + " has no column " + column + " (expected " + expected + ")");
            } else if (!OWN_COLUMNS.get(column).contains(type)) {
                problems.add("column " + table + "." + column + " is " + type + ", expected " + expected);
            }
        });
        if (actual.types().containsKey("fence_token") && !actual.notNull().contains("fence_token")) {
            problems.add("column " + table + ".fence_token must be NOT NULL (a row without a fence could never be fenced)");
        }
        if (!TableCatalog.hasKeyIndex(connection, table)) {
            problems.add("table " + table + " has no primary key or unique index on exactly (resource_key), which the upsert's"
                    + " ON CONFLICT needs (not partial, not deferrable)");
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
        StringBuilder ddl = new StringBuilder("CREATE TABLE IF NOT EXISTS ").append(table.sql())
                .append(" (resource_key TEXT PRIMARY KEY");
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
        List<Column> missing = new ArrayList<>();
        for (Column column : columns) {
            if (!catalog.types().containsKey(column.name())) {
                missing.add(column);
            }
        }
        List<String> problems = misfits(columns, missing);
        if (!problems.isEmpty()) {
            throw new SchemaMismatchException("records of schema " + (schema.name() == null ? "(unnamed)" : schema.name())
                    + " do not fit table " + table + ": " + String.join("; ", problems));
        }
        if (!missing.isEmpty()) {
            for (Column column : missing) {
                boolean added = ConcurrentDdl.execute(connection,
                        "ALTER TABLE " + table.sql() + " ADD COLUMN IF NOT EXISTS " + column.sql() + " " + column.sqlType(),
                        () -> TableCatalog.read(connection, table).types().containsKey(column.name()));
                LOG.info("{} column {}.{} {} for field {}", added ? "added (or found)" : "another sink task added", table,
                        column.name(), column.sqlType(), String.join(".", column.path()));
            }
            catalog = TableCatalog.read(connection, table);
            List<String> raced = misfits(columns, List.of());
            if (!raced.isEmpty()) {
                throw new SchemaMismatchException("records of schema " + (schema.name() == null ? "(unnamed)" : schema.name())
                        + " do not fit table " + table + " as another sink task changed it: " + String.join("; ", raced));
            }
        }
        checked.put(schema, columns);
        return columns;
    }

    /**
     * Whether a relation of the table's name exists now: {@code to_regclass} reads the latest committed catalog at any
     * isolation level and needs no privilege on the table ({@code information_schema} hides tables the role cannot use).
     */
    boolean exists(Connection connection) throws SQLException {
        return TableCatalog.relationExists(connection, table);
    }

    /** Why records with {@code columns} cannot be written to the table as the catalog says it is ({@code missing}: not in it). */
    private List<String> misfits(List<Column> columns, List<Column> missing) {
        List<String> problems = new ArrayList<>();
        for (Column column : columns) {
            String type = catalog.types().get(column.name());
            if (type != null && !column.acceptedCatalogTypes().contains(type)) {
                problems.add(
                        "column " + table + "." + column.name() + " is " + type + ", but field " + String.join(".", column.path())
                                + " needs " + column.sqlType());
            }
        }
        Set<String> written = new HashSet<>(OWN_COLUMNS.keySet());
        columns.forEach(column -> written.add(column.name()));
        for (String column : new TreeSet<>(catalog.required())) {
            if (!written.contains(column)) {
                problems.add(
                        "column " + table + "." + column + " is NOT NULL without a default, but records of this schema do not"
                                + " write it (give it a default or allow NULL)");
            }
        }
        for (Column column : columns) {
            if (catalog.notNull().contains(column.name())) {
                problems.add("column " + table + "." + column.name()
                        + " is NOT NULL, but a delete sets the data columns to NULL (allow NULL)");
            }
        }
        if (!autoEvolve) {
            for (Column column : missing) {
                problems.add("table " + table + " has no column " + column.name() + " " + column.sqlType() + " for field "
                        + String.join(".", column.path()) + " (set auto.evolve=true to add it)");
            }
        }
        return problems;
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
        if (catalog == null || !catalog.exists()) {
            catalog = TableCatalog.read(connection, table);
        }
        if (!catalog.exists()) {
            if (!autoCreate) {
                throw new SchemaMismatchException(
                        "table " + table + " does not exist; set auto.create=true or create it as: " + createStatement(columns));
            }
            if (ConcurrentDdl.execute(connection, createStatement(columns), () -> exists(connection))) {
                LOG.info("created table {} for schema {}", table, schemaName);
            } else {
                LOG.info("table {} was created by another sink task at the same time", table);
            }
            catalog = TableCatalog.read(connection, table);
        }
        if (!validated) {
            List<String> mismatches = ownColumnMismatches(connection);
            if (!mismatches.isEmpty()) {
                throw new SchemaMismatchException(misfitMessage(mismatches));
            }
            validated = true;
        }
    }
}
