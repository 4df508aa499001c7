package dev.fencedwrites.sink.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.kafka.connect.data.Struct;

/**
 * Whether a table row holds the data columns the sink writes for a record value: the check {@code fence verify} runs on the
 * last accepted write of each key. The value is mapped and bound exactly as the sink's upsert binds it
 * ({@link ColumnMapping}), and PostgreSQL compares each column ({@code IS NOT DISTINCT FROM}) in its own types, so numbers,
 * timestamps and JSONB compare as values, not as text.
 */
public final class RowMatch {
    private RowMatch() {
    }

    /**
     * The data columns of {@code key}'s row in {@code table} that differ from {@code value}, in column order.
     *
     * @param table a table name as the sink's {@code table.name.format} takes it ({@link TableName#parse})
     * @return empty when the row holds {@code value}; {@code Optional.empty()} when the table has no row for {@code key}
     * @throws SQLException when the table lacks a column the value maps to, or the database refuses the query
     * @throws org.apache.kafka.connect.errors.DataException when the value's schema does not map to columns
     */
    public static Optional<List<String>> differingColumns(Connection connection, String table, String key, Struct value)
            throws SQLException {
        List<ColumnMapping.Column> columns = ColumnMapping.columns(value.schema());
        StringBuilder sql = new StringBuilder("SELECT true");
        for (ColumnMapping.Column column : columns) {
            sql.append(", (").append(column.sql()).append(" IS NOT DISTINCT FROM ").append(column.placeholder()).append(')');
        }
        sql.append(" FROM ").append(TableName.parse(table).sql()).append(" WHERE resource_key = ?");
        try (PreparedStatement statement = connection.prepareStatement(sql.toString())) {
            int index = 1;
            for (ColumnMapping.Column column : columns) {
                ColumnMapping.bind(statement, index++, column, value);
            }
            statement.setString(index, key);
            try (ResultSet rows = statement.executeQuery()) {
                if (!rows.next()) {
                    return Optional.empty();
                }
                List<String> differing = new ArrayList<>();
                for (int i = 0; i < columns.size(); i++) {
                    if (!rows.getBoolean(i + 2)) {
                        differing.add(columns.get(i).name());
                    }
                }
                return Optional.of(differing);
            }
        }
    }
}
