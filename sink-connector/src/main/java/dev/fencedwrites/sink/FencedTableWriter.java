package dev.fencedwrites.sink;

import dev.fencedwrites.contract.Decision;
import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.sink.internal.Outcome;
import dev.fencedwrites.sink.internal.RecordTable;
import dev.fencedwrites.sink.internal.Row;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;

/**
 * The sink task's write path without Kafka Connect, for benchmarks and tools: writes values with
 * their fences to one PostgreSQL table through the same table structure, fence-guarded upsert and
 * batch writer the task uses ({@code auto.create} and {@code auto.evolve} on), so a measurement of it
 * is a measurement of the sink. Each value's Connect schema is mapped to columns as the sink maps a
 * record's (docs/operate/sink.md). Every call works inside the caller's transaction:
 * the connection must not be in auto-commit mode, and the caller commits or rolls back. Not
 * thread-safe: one per table and thread.
 */
public final class FencedTableWriter {
    private final RecordTable table;

    /**
     * One record to write.
     *
     * @param key   the resource id, the row's primary key; non-empty
     * @param value the value ({@code null}: a delete, which nulls the data columns and keeps the fence)
     * @param fence the record's fence ({@code fence.token}, {@code fence.seq})
     */
    public record FencedValue(String key, Struct value, Fence fence) {
    }

    /**
     * @param table   a table name as PostgreSQL reads it: {@code table} or {@code schema.table}
     * @param guarded whether the upsert is guarded by the fencing decision rule ({@code fence.guard.enabled});
     *                {@code false} writes every value unconditionally, the baseline a benchmark compares with
     * @throws IllegalArgumentException if {@code table} is not a table name
     */
    public FencedTableWriter(String table, boolean guarded) {
        this.table = new RecordTable(table, guarded, true, true);
    }

    /**
     * Creates the table for values of {@code schema}, or adds the columns it lacks.
     *
     * @throws SQLException on a database error
     * @throws org.apache.kafka.connect.errors.ConnectException if the schema cannot be mapped or the table does not fit
     */
    public void prepare(Connection connection, Schema schema) throws SQLException {
        table.prepare(connection, schema);
    }

    /**
     * Writes {@code values} in few multi-row statements, each key's values in their order, and returns
     * each one's decision in input order: accept, or the rejection reason ({@code STALE_TOKEN},
     * {@code DUPLICATE}, {@code OUT_OF_ORDER}, or {@code MALFORMED_VALUE} for data the database refused).
     *
     * @throws SQLException on a database error other than a refused value's data (the caller rolls back)
     */
    public List<Decision> write(Connection connection, List<FencedValue> values) throws SQLException {
        List<Row> rows = values.stream().map(value -> Row.of(value.key(), value.value(), value.fence())).toList();
        return table.writeAll(connection, rows).stream().map(Outcome::decision).toList();
    }
}
