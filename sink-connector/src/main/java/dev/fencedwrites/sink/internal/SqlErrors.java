package dev.fencedwrites.sink.internal;

import java.sql.SQLException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientException;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;

/**
 * Which database errors may pass on retry, and their whole story for messages. SQLState classes
 * from PostgreSQL's "PostgreSQL Error Codes" appendix.
 */
public final class SqlErrors {
    private SqlErrors() {
    }

    /**
     * Transient: the connection (class 08), a serialization failure or deadlock (class 40),
     * insufficient resources (53), an operator or crash shutdown (57P01-57P03), a lock or statement
     * timeout (55P03, 57014), or a driver or pool that says so ({@link SQLTransientException},
     * {@link SQLRecoverableException}, e.g. HikariCP's connection timeout).
     */
    public static boolean isTransient(SQLException e) {
        String state = e.getSQLState();
        if (state != null && (state.startsWith("28") || state.startsWith("3D") || state.startsWith("42"))) {
            // Wrong credentials, no such database, a missing table or privilege: HikariCP reports its pool timeout as an
            // SQLTransientConnectionException carrying such a cause's SQLState, and no retry fixes them.
            return false;
        }
        if (e instanceof SQLTransientException || e instanceof SQLRecoverableException) {
            return true;
        }
        if (state == null) {
            return false;
        }
        return state.startsWith("08") || state.startsWith("40") || state.startsWith("53") || state.equals("57P01")
                || state.equals("57P02")
                || state.equals("57P03") || state.equals("55P03") || state.equals("57014");
    }

    /** Every message of the chain (causes and {@link SQLException#getNextException()}), each with its SQLState. */
    public static String describe(SQLException error) {
        StringBuilder text = new StringBuilder();
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        append(text, error, seen);
        return text.toString();
    }

    private static void append(StringBuilder text, Throwable error, Set<Throwable> seen) {
        for (Throwable t = error; t != null && seen.add(t) && text.length() < 4_000; t = t.getCause()) {
            if (text.length() > 0) {
                text.append(" <- ");
            }
            text.append(t.getMessage());
            if (t instanceof SQLException sql && sql.getSQLState() != null) {
                text.append(" [SQLState ").append(sql.getSQLState()).append(']');
                if (sql.getNextException() != null) {
                    append(text, sql.getNextException(), seen);
                }
            }
        }
    }
}
