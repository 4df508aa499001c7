package dev.fencedwrites.sink.internal;

import java.nio.charset.StandardCharsets;
import java.util.Set;

/**
 * How the sink writes PostgreSQL identifiers: always quoted, so a name that is an SQL keyword
 * ({@code order}, {@code user}, {@code select}) or holds any character is taken as it is, never
 * parsed. PostgreSQL folds unquoted names to lower case, so the lower-case names the
 * sink maps fields and topics to are the same names quoted or not, and tables made before quoting
 * keep working. Source: PostgreSQL's "Identifiers and Key Words" (SQL syntax, lexical structure).
 */
public final class SqlNames {
    /**
     * The longest identifier PostgreSQL keeps, in bytes ({@code NAMEDATALEN - 1}); longer ones are
     * truncated by the server, so the sink truncates the same way and its catalog lookups find them.
     */
    public static final int MAX_BYTES = 63;

    /**
     * PostgreSQL's system columns: every table has them, so no user column may take these names,
     * quoted or not (SQLState 42701). Source: PostgreSQL's "System Columns" (DDL chapter).
     */
    public static final Set<String> SYSTEM_COLUMNS = Set.of("tableoid", "xmin", "cmin", "xmax", "cmax", "ctid");

    private SqlNames() {
    }

    /**
     * {@code name} as a quoted identifier: in double quotes, each double quote doubled.
     *
     * @throws IllegalArgumentException if {@code name} is empty or holds a NUL character, which no identifier may
     */
    public static String quote(String name) {
        if (name.isEmpty() || name.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("not a possible PostgreSQL identifier: "
                    + (name.isEmpty() ? "an empty name" : "a name with a NUL character"));
        }
        return '"' + name.replace("\"", "\"\"") + '"';
    }

    /**
     * {@code name} cut to at most {@value #MAX_BYTES} bytes of UTF-8 without splitting a character,
     * as the server truncates a longer identifier.
     */
    public static String truncate(String name) {
        if (name.getBytes(StandardCharsets.UTF_8).length <= MAX_BYTES) {
            return name;
        }
        int bytes = 0;
        int end = 0;
        while (end < name.length()) {
            int codePoint = name.codePointAt(end);
            int size = new String(Character.toChars(codePoint)).getBytes(StandardCharsets.UTF_8).length;
            if (bytes + size > MAX_BYTES) {
                break;
            }
            bytes += size;
            end += Character.charCount(codePoint);
        }
        return name.substring(0, end);
    }
}
