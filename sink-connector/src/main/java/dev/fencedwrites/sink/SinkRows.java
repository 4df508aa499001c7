package dev.fencedwrites.sink;

import dev.fencedwrites.sink.internal.RowMatch;
import dev.fencedwrites.sink.internal.TableName;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Optional;
import org.apache.kafka.connect.data.Struct;

/** The sink's table as other tools read it: {@code fence verify} compares rows with accepted writes through it. */
public final class SinkRows {
    private SinkRows() {
    }

    /**
     * {@code table} as the sink's SQL names it (each part folded and quoted as the sink does).
     *
     * @throws IllegalArgumentException saying what is wrong with the name
     */
    public static String sqlName(String table) {
        return TableName.parse(table).sql();
    }

    /**
     * The data columns of {@code key}'s row that differ from {@code value}, mapped and bound as the sink's upsert binds them
     * and compared by PostgreSQL in the columns' types.
     *
     * @return the differing column names (empty: the row holds {@code value}); {@code Optional.empty()} when there is no row
     * @throws SQLException when the table lacks a column the value maps to, or the database refuses the query
     * @throws org.apache.kafka.connect.errors.DataException when the value's schema does not map to columns
     */
    public static Optional<List<String>> differingColumns(Connection connection, String table, String key, Struct value)
            throws SQLException {
        return RowMatch.differingColumns(connection, table, key, value);
    }
}
