package dev.fencedwrites.sink.internal;

import java.util.ArrayList;
import java.util.List;

/**
 * A table the sink writes to, optionally in a named schema, as PostgreSQL reads a table name:
 * {@code table} or {@code schema.table}; an unquoted part is folded to lower case (ASCII letters, as
 * the server folds them), a part in double quotes is taken exactly ({@code ""} for a quote inside),
 * and each part is cut to {@value SqlNames#MAX_BYTES} bytes as the server does. So
 * {@code Billing_Summary}, {@code billing_summary} and {@code "billing_summary"} are one table, and
 * {@code order} (a keyword) or {@code "Orders 2026"} are tables like any other. Every SQL text the sink
 * builds uses {@link #sql()}, quoted; the catalog is searched for the exact names.
 *
 * @param schema the schema, or {@code null} for the connection's current schema ({@code current_schema()},
 *               the first existing schema of its {@code search_path}), where an unqualified {@code CREATE TABLE} puts it
 * @param name   the table's name as the catalog holds it
 */
public record TableName(String schema, String name) {

    /**
     * Parses a table name written as described above.
     *
     * @throws IllegalArgumentException saying what is wrong: an empty part, more than two parts, an unclosed or stray quote,
     *                                  white space or a control character outside quotes, a NUL anywhere
     */
    public static TableName parse(String text) {
        List<String> parts = new ArrayList<>();
        int i = 0;
        while (true) {
            StringBuilder part = new StringBuilder();
            if (i < text.length() && text.charAt(i) == '"') {
                i++;
                while (true) {
                    if (i >= text.length()) {
                        throw new IllegalArgumentException("unclosed double quote in " + text);
                    }
                    char c = text.charAt(i++);
                    if (c == '"') {
                        if (i < text.length() && text.charAt(i) == '"') {
                            part.append('"');
                            i++;
                            continue;
                        }
                        break;
                    }
                    part.append(c);
                }
                if (i < text.length() && text.charAt(i) != '.') {
                    throw new IllegalArgumentException("a quoted name must be followed by . or the end, in " + text);
                }
            } else {
                while (i < text.length() && text.charAt(i) != '.') {
                    char c = text.charAt(i++);
                    if (c == '"') {
                        throw new IllegalArgumentException(
                                "a double quote inside an unquoted name in " + text + " (quote the whole part: \"...\")");
                    }
                    if (Character.isWhitespace(c) || Character.isISOControl(c)) {
                        throw new IllegalArgumentException("white space or a control character in the unquoted name " + text
                                + " (put the part in double quotes)");
                    }
                    part.append(c >= 'A' && c <= 'Z' ? (char) (c + ('a' - 'A')) : c);
                }
            }
            if (part.isEmpty()) {
                throw new IllegalArgumentException("an empty name in " + (text.isEmpty() ? "an empty table name" : text));
            }
            if (part.indexOf("\0") >= 0) {
                throw new IllegalArgumentException("a NUL character in " + text);
            }
            parts.add(SqlNames.truncate(part.toString()));
            if (i >= text.length()) {
                break;
            }
            i++; // the dot
        }
        if (parts.size() > 2) {
            throw new IllegalArgumentException(text + " has " + parts.size()
                    + " parts; give table or schema.table (the connection's database is the database)");
        }
        return parts.size() == 1 ? new TableName(null, parts.get(0)) : new TableName(parts.get(0), parts.get(1));
    }

    /** The name for SQL text: {@code "schema"."table"} or {@code "table"}. */
    public String sql() {
        return schema == null ? SqlNames.quote(name) : SqlNames.quote(schema) + "." + SqlNames.quote(name);
    }

    /** The name for messages and logs: {@code schema.table} or {@code table}, unquoted. */
    @Override
    public String toString() {
        return schema == null ? name : schema + "." + name;
    }
}
