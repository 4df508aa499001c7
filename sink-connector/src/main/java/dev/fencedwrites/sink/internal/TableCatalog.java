package dev.fencedwrites.sink.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * What PostgreSQL's catalog says about one table at the moment it was read.
 *
 * @param types    column name → {@code information_schema.columns.data_type}, in column order; empty when the table does
 *                 not exist
 * @param required columns that are NOT NULL without a default, identity or generated value
 * @param notNull  columns that are NOT NULL
 */
record TableCatalog(Map<String, String> types, Set<String> required, Set<String> notNull) {
    /** Whether the table exists. */
    boolean exists() {
        return !types.isEmpty();
    }

    /** Reads the columns of {@code table} (in the current schema when it names none). */
    static TableCatalog read(Connection connection, TableName table) throws SQLException {
        Map<String, String> columns = new LinkedHashMap<>();
        Set<String> mustBeGiven = new HashSet<>();
        Set<String> nonNullable = new HashSet<>();
        try (PreparedStatement statement = connection
                .prepareStatement("SELECT column_name, data_type, is_nullable, column_default,"
                        + " is_identity, is_generated FROM information_schema.columns"
                        + " WHERE table_schema = coalesce(?::text, current_schema()) AND table_name = ?::text ORDER BY "
                        + "ordinal_position")) {
            bindTable(statement, table);
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
        return new TableCatalog(columns, mustBeGiven, nonNullable);
    }

    /**
     * Whether {@code table} has a primary key or unique index on exactly {@code resource_key} that
     * {@code ON CONFLICT (resource_key)} can use: not partial, not on an expression, not deferrable.
     */
    static boolean hasKeyIndex(Connection connection, TableName table) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement("SELECT 1 FROM pg_index i JOIN pg_attribute a"
                + " ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]"
                + " WHERE i.indrelid = to_regclass(format('%I.%I', coalesce(?::text, current_schema()), ?::text))"
                + " AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL AND i.indexprs IS NULL AND i.indimmediate"
                + " AND a.attname = 'resource_key'")) {
            bindTable(statement, table);
            try (ResultSet rows = statement.executeQuery()) {
                return rows.next();
            }
        }
    }

    /** Whether a relation (table, view, composite type, ...) of {@code table}'s name exists, from the catalog. */
    static boolean relationExists(Connection connection, TableName table) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(
                "SELECT to_regclass(format('%I.%I', coalesce(?::text, current_schema()), ?::text)) IS NOT NULL")) {
            bindTable(statement, table);
            try (ResultSet rows = statement.executeQuery()) {
                return rows.next() && rows.getBoolean(1);
            }
        }
    }

    /**
     * What else holds {@code table}'s name among the relations ({@code pg_class.relkind}: a composite type, sequence, index,
     * view...), so that a missing table's message can say what is in the way ({@code CREATE TABLE IF NOT EXISTS} skips
     * silently then); empty when nothing does.
     */
    static Optional<String> otherRelation(Connection connection, TableName table) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement("SELECT relkind FROM pg_class"
                + " WHERE oid = to_regclass(format('%I.%I', coalesce(?::text, current_schema()), ?::text))")) {
            bindTable(statement, table);
            try (ResultSet rows = statement.executeQuery()) {
                if (!rows.next()) {
                    return Optional.empty();
                }
                String kind = rows.getString(1);
                return Optional.of(switch (kind) {
                    case "c" -> "a composite type";
                    case "S" -> "a sequence";
                    case "i", "I" -> "an index";
                    case "m" -> "a materialized view";
                    default -> "a relation of kind '" + kind + "'";
                });
            }
        }
    }

    /** Binds the table's schema (or NULL for the current one) and name at parameters 1 and 2. */
    private static void bindTable(PreparedStatement statement, TableName table) throws SQLException {
        if (table.schema() == null) {
            statement.setNull(1, Types.VARCHAR);
        } else {
            statement.setString(1, table.schema());
        }
        statement.setString(2, table.name());
    }
}
