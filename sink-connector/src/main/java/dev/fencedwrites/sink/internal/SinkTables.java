package dev.fencedwrites.sink.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.kafka.connect.errors.ConnectException;

/**
 * The tables one sink task writes to, one {@link RecordTable} per table name, made at first use.
 * Not thread-safe: one per sink task.
 */
public final class SinkTables {
    private final Function<String, TableName> names;
    private final boolean guarded;
    private final boolean autoCreate;
    private final boolean autoEvolve;
    private final Map<TableName, RecordTable> tables = new HashMap<>();

    /**
     * @param names      the table of a topic ({@code table.name}, with {@code ${topic}} replaced); the topic is {@code null}
     *                   for a fixed table name
     * @param guarded    {@code fence.guard.enabled}
     * @param autoCreate {@code auto.create}
     * @param autoEvolve {@code auto.evolve}
     */
    public SinkTables(Function<String, TableName> names, boolean guarded, boolean autoCreate, boolean autoEvolve) {
        this.names = names;
        this.guarded = guarded;
        this.autoCreate = autoCreate;
        this.autoEvolve = autoEvolve;
    }

    /** The table for records of {@code topic}. */
    public RecordTable forTopic(String topic) {
        return tables.computeIfAbsent(names.apply(topic), name -> new RecordTable(name, guarded, autoCreate, autoEvolve));
    }

    /** Forgets every table's catalog, after a rollback (a rolled-back CREATE or ALTER is gone). */
    public void forgetCatalogs() {
        tables.values().forEach(RecordTable::forgetCatalog);
    }

    /**
     * Checks the fixed table (a {@code table.name} without {@code ${topic}}) before any record, creating it first
     * with {@code auto.create}, so a misfit stops the task at start.
     *
     * @throws ConnectException naming every mismatch and the {@code CREATE TABLE} that would fit
     */
    public void prepareFixed(Connection connection) throws SQLException {
        RecordTable table = forTopic(null);
        if (autoCreate) {
            ConcurrentDdl.execute(connection, table.createStatement(List.of()), () -> table.exists(connection));
            connection.commit();
        }
        List<String> mismatches = table.ownColumnMismatches(connection);
        connection.rollback();
        if (!mismatches.isEmpty()) {
            throw new ConnectException(table.misfitMessage(mismatches));
        }
    }
}
