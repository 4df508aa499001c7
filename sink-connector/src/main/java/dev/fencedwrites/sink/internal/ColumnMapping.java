package dev.fencedwrites.sink.internal;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.connect.data.Date;
import org.apache.kafka.connect.data.Decimal;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Time;
import org.apache.kafka.connect.data.Timestamp;
import org.apache.kafka.connect.errors.DataException;

/**
 * How a record's value schema (a Connect {@code Struct}) becomes table columns. The rule:
 * <ul>
 *   <li>Each primitive field is one column. Its name is the field name in snake case, lower case
 *       ({@code amountMinor} → {@code amount_minor}), every character other than a letter or digit as {@code _},
 *       cut to {@value SqlNames#MAX_BYTES} bytes as PostgreSQL cuts identifiers. The sink always quotes it
 *       ({@link SqlNames#quote}), so a field named {@code order}, {@code user} or {@code select} is a column like any other.</li>
 *   <li>Nested records are flattened: the column name is the path joined with {@code _}
 *       ({@code address.zipCode} → {@code address_zip_code}). A null nested record writes NULL to all its columns.</li>
 *   <li>Types: int8/int16 → SMALLINT, int32 → INTEGER, int64 → BIGINT, float32 → REAL,
 *       float64 → DOUBLE PRECISION, boolean → BOOLEAN, string → TEXT, bytes → BYTEA; logical
 *       Timestamp → TIMESTAMPTZ, Date → DATE, Time → TIME, Decimal → NUMERIC; arrays and maps → JSONB
 *       (bytes inside them as base64 text).</li>
 *   <li>Every data column is nullable: a delete nulls them, and a later schema may drop a field.</li>
 *   <li>The names {@link #RESERVED} belong to the sink (key, fence and delete columns), and
 *       {@link SqlNames#SYSTEM_COLUMNS} ({@code xmin}, {@code ctid}, ...) to PostgreSQL; a field mapping to one is refused.</li>
 * </ul>
 */
public final class ColumnMapping {
    /** Columns the sink owns in every table. */
    public static final Set<String> RESERVED = Set.of("resource_key", "deleted", "fence_token", "fence_seq", "updated_at");

    /**
     * One column: its name, its PostgreSQL type, the field path it reads, and the Connect schema of that field.
     *
     * @param name   the column name
     * @param sqlType the type as in {@code CREATE TABLE}, e.g. {@code BIGINT}
     * @param path   the field names from the record's root to the value
     * @param schema the field's schema
     */
    public record Column(String name, String sqlType, List<String> path, Schema schema) {
        /** The column name quoted for SQL text. */
        String sql() {
            return SqlNames.quote(name);
        }

        /** The placeholder in VALUES: {@code ?}, cast for JSONB. */
        String placeholder() {
            return sqlType.equals("JSONB") ? "?::jsonb" : "?";
        }

        /** The {@code information_schema.columns.data_type} names this column accepts in an existing table. */
        Set<String> acceptedCatalogTypes() {
            return switch (sqlType) {
                case "SMALLINT" -> Set.of("smallint", "integer", "bigint", "numeric");
                case "INTEGER" -> Set.of("integer", "bigint", "numeric");
                case "BIGINT" -> Set.of("bigint", "numeric");
                case "REAL" -> Set.of("real", "double precision");
                case "DOUBLE PRECISION" -> Set.of("double precision");
                case "TEXT" -> Set.of("text", "character varying");
                case "TIMESTAMPTZ" -> Set.of("timestamp with time zone");
                case "TIME" -> Set.of("time without time zone");
                case "JSONB" -> Set.of("jsonb", "json");
                default -> Set.of(sqlType.toLowerCase(Locale.ROOT));
            };
        }
    }

    private ColumnMapping() {
    }

    /**
     * The columns of a record value schema, in field order.
     *
     * @throws DataException if the schema is not a struct, or two fields map to one column, or a field maps to a reserved or
     *                       system column or to an empty name, or a record contains itself (a recursive Avro schema: its
     *                       Connect schema is cyclic, so it can neither be flattened nor hashed)
     */
    public static List<Column> columns(Schema valueSchema) {
        if (valueSchema == null || valueSchema.type() != Schema.Type.STRUCT) {
            throw new DataException("the value must be a record (a Connect Struct), not "
                    + (valueSchema == null ? "schemaless" : valueSchema.type()));
        }
        requireNotRecursive(valueSchema, new ArrayList<>(), "");
        Map<String, Column> columns = new LinkedHashMap<>();
        collect(valueSchema, new ArrayList<>(), columns);
        return List.copyOf(columns.values());
    }

    /** Refuses a struct that contains a struct of its own name, anywhere below it (fields, array items, map keys and values). */
    private static void requireNotRecursive(Schema schema, List<String> structs, String path) {
        switch (schema.type()) {
            case STRUCT -> {
                if (schema.name() != null && structs.contains(schema.name())) {
                    throw new DataException("field " + path + " is a " + schema.name() + " inside a " + schema.name()
                            + ": a recursive record schema cannot be mapped to columns");
                }
                structs.add(schema.name());
                for (Field field : schema.fields()) {
                    requireNotRecursive(field.schema(), structs, path.isEmpty() ? field.name() : path + "." + field.name());
                }
                structs.remove(structs.size() - 1);
            }
            case ARRAY -> requireNotRecursive(schema.valueSchema(), structs, path + "[]");
            case MAP -> {
                requireNotRecursive(schema.keySchema(), structs, path + "{}");
                requireNotRecursive(schema.valueSchema(), structs, path + "[]");
            }
            default -> {
            }
        }
    }

    private static void collect(Schema struct, List<String> path, Map<String, Column> into) {
        for (Field field : struct.fields()) {
            List<String> fieldPath = new ArrayList<>(path);
            fieldPath.add(field.name());
            Schema schema = field.schema();
            if (schema.type() == Schema.Type.STRUCT) {
                collect(schema, fieldPath, into);
                continue;
            }
            String name = SqlNames.truncate(String.join("_", fieldPath.stream().map(ColumnMapping::snakeCase).toList()));
            if (RESERVED.contains(name)) {
                throw new DataException("field " + String.join(".", fieldPath) + " maps to column " + name
                        + ", which the sink reserves for itself " + RESERVED);
            }
            if (SqlNames.SYSTEM_COLUMNS.contains(name)) {
                throw new DataException("field " + String.join(".", fieldPath) + " maps to column " + name
                        + ", a PostgreSQL system column no table"
                        + " may have " + new TreeSet<>(SqlNames.SYSTEM_COLUMNS) + "; rename the field");
            }
            if (name.isEmpty()) {
                throw new DataException("field " + String.join(".", fieldPath) + " has an empty name, which no column may have");
            }
            Column column = new Column(name, sqlType(schema, fieldPath), List.copyOf(fieldPath), schema);
            if (into.putIfAbsent(name, column) != null) {
                throw new DataException(
                        "fields " + String.join(".", into.get(name).path()) + " and " + String.join(".", fieldPath)
                                + " both map to column " + name);
            }
        }
    }

    /**
     * {@code amountMinor} → {@code amount_minor}; {@code HTTPCode} → {@code http_code}; other characters than letters and digits
     * → {@code _}.
     */
    static String snakeCase(String name) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            boolean upper = Character.isUpperCase(c);
            boolean boundary = upper && i > 0
                    && (Character.isLowerCase(name.charAt(i - 1)) || Character.isDigit(name.charAt(i - 1))
                            || i + 1 < name.length() && Character.isLowerCase(name.charAt(i + 1))
                                    && Character.isUpperCase(name.charAt(i - 1)));
            if (boundary && out.length() > 0 && out.charAt(out.length() - 1) != '_') {
                out.append('_');
            }
            out.append(Character.isLetterOrDigit(c) ? Character.toLowerCase(c) : '_');
        }
        return out.toString();
    }

    private static String sqlType(Schema schema, List<String> path) {
        String logical = schema.name();
        if (Timestamp.LOGICAL_NAME.equals(logical)) {
            return "TIMESTAMPTZ";
        }
        if (Date.LOGICAL_NAME.equals(logical)) {
            return "DATE";
        }
        if (Time.LOGICAL_NAME.equals(logical)) {
            return "TIME";
        }
        if (Decimal.LOGICAL_NAME.equals(logical)) {
            return "NUMERIC";
        }
        return switch (schema.type()) {
            case INT8, INT16 -> "SMALLINT";
            case INT32 -> "INTEGER";
            case INT64 -> "BIGINT";
            case FLOAT32 -> "REAL";
            case FLOAT64 -> "DOUBLE PRECISION";
            case BOOLEAN -> "BOOLEAN";
            case STRING -> "TEXT";
            case BYTES -> "BYTEA";
            case ARRAY, MAP -> "JSONB";
            case STRUCT -> throw new IllegalStateException("flattened above: " + path);
        };
    }

    /** Binds {@code column}'s value from {@code value} (the record's root Struct) at {@code index}. */
    static void bind(PreparedStatement statement, int index, Column column, Struct value) throws SQLException {
        Object raw = value;
        for (String name : column.path()) {
            raw = raw == null ? null : ((Struct) raw).get(name);
        }
        if (raw == null) {
            statement.setNull(index, sqlTypeCode(column));
            return;
        }
        switch (column.sqlType()) {
            // CHECKSTYLE:OFF: FullyQualifiedName java.sql and java.util both have Date
            case "TIMESTAMPTZ" -> statement.setTimestamp(index, new java.sql.Timestamp(((java.util.Date) raw).getTime()));
            case "DATE" -> statement.setDate(index, new java.sql.Date(((java.util.Date) raw).getTime()));
            case "TIME" -> statement.setTime(index, new java.sql.Time(((java.util.Date) raw).getTime()));
            // CHECKSTYLE:ON: FullyQualifiedName
            case "NUMERIC" -> statement.setBigDecimal(index, (BigDecimal) raw);
            case "BYTEA" -> statement.setBytes(index, raw instanceof ByteBuffer buffer ? JsonValues.bytes(buffer) : (byte[]) raw);
            case "JSONB" -> statement.setString(index, JsonValues.json(raw));
            case "SMALLINT" -> statement.setShort(index, ((Number) raw).shortValue());
            default -> statement.setObject(index, raw);
        }
    }

    private static int sqlTypeCode(Column column) {
        return switch (column.sqlType()) {
            case "TIMESTAMPTZ" -> Types.TIMESTAMP_WITH_TIMEZONE;
            case "DATE" -> Types.DATE;
            case "TIME" -> Types.TIME;
            case "NUMERIC" -> Types.NUMERIC;
            case "BYTEA" -> Types.BINARY;
            case "SMALLINT" -> Types.SMALLINT;
            case "INTEGER" -> Types.INTEGER;
            case "BIGINT" -> Types.BIGINT;
            case "REAL" -> Types.REAL;
            case "DOUBLE PRECISION" -> Types.DOUBLE;
            case "BOOLEAN" -> Types.BOOLEAN;
            default -> Types.VARCHAR;
        };
    }
}
