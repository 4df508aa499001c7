package dev.fencedwrites.failover;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceRule;
import dev.fencedwrites.failover.Decided.Kind;
import dev.fencedwrites.failover.Decided.Output;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Check (d), the sink's side: a PostgreSQL trigger on the sink's table records every update's old
 * and new fence (whichever sink task made it, also while two tasks overlap in a rebalance), and the
 * final table is compared with the decision rule applied to the accepted topic.
 */
final class SinkAudit {
    private final String url;
    private final String table;

    /** One update of a row, as the trigger recorded it. */
    record Change(String key, Fence before, Fence after) {
        /** Whether the update lowered the row's fence. */
        boolean lowered() {
            return Decided.above(before, after);
        }
    }

    /** One row: its fence, the write id in {@code amount_minor} (null on a data-less row) and the soft-delete flag. */
    record Row(Fence fence, Long writeId, boolean deleted) {
    }

    SinkAudit(String url, String table) {
        this.url = url;
        this.table = table;
    }

    /** Creates the history table and the trigger on the sink's table (which must exist): {@code <table>_history}. */
    void install() throws SQLException {
        try (Connection connection = DriverManager.getConnection(url); Statement statement = connection.createStatement()) {
            statement.execute("CREATE TABLE " + table + "_history (resource_key TEXT, old_token BIGINT, old_seq BIGINT,"
                    + " new_token BIGINT, new_seq BIGINT, changed_at TIMESTAMPTZ DEFAULT clock_timestamp(),"
                    + " client_port INT DEFAULT inet_client_port())");
            statement.execute("CREATE FUNCTION " + table + "_change() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                    + " INSERT INTO " + table + "_history (resource_key, old_token, old_seq, new_token, new_seq)"
                    + " VALUES (OLD.resource_key, OLD.fence_token, OLD.fence_seq, NEW.fence_token, NEW.fence_seq);"
                    + " RETURN NEW; END $$");
            statement.execute("CREATE TRIGGER " + table + "_change AFTER UPDATE ON " + table
                    + " FOR EACH ROW EXECUTE FUNCTION " + table + "_change()");
        }
    }

    /** Every update, in the order the trigger saw them. */
    List<Change> history() throws SQLException {
        return changes("");
    }

    /**
     * The updates made through a connection from one of {@code clientPorts} (a Connect worker's JDBC connections, by their
     * local port) from {@code fromMillis} until {@code untilMillis} (wall clock, ms, of the update's statement).
     */
    List<Change> changesFrom(Set<Integer> clientPorts, long fromMillis, long untilMillis) throws SQLException {
        if (clientPorts.isEmpty()) {
            return List.of();
        }
        return changes(" WHERE client_port IN (" + clientPorts.stream().map(String::valueOf).collect(Collectors.joining(","))
                + ") AND changed_at > to_timestamp(" + fromMillis / 1e3 + ") AND changed_at < to_timestamp("
                + untilMillis / 1e3 + ")");
    }

    private List<Change> changes(String where) throws SQLException {
        List<Change> changes = new ArrayList<>();
        try (Connection connection = DriverManager.getConnection(url);
                Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery("SELECT resource_key, old_token, old_seq, new_token, new_seq FROM "
                        + table + "_history" + where + " ORDER BY changed_at")) {
            while (rows.next()) {
                changes.add(new Change(rows.getString(1), fence(rows, 2), fence(rows, 4)));
            }
        }
        return changes;
    }

    Map<String, Row> rows() throws SQLException {
        Map<String, Row> rows = new HashMap<>();
        try (Connection connection = DriverManager.getConnection(url);
                Statement statement = connection.createStatement();
                ResultSet result = statement.executeQuery(
                        "SELECT resource_key, fence_token, fence_seq, amount_minor, deleted FROM " + table)) {
            while (result.next()) {
                rows.put(result.getString(1), new Row(fence(result, 2), result.getObject(4, Long.class), result.getBoolean(5)));
            }
        }
        return rows;
    }

    private static Fence fence(ResultSet rows, int column) throws SQLException {
        long token = rows.getLong(column);
        long seq = rows.getLong(column + 1);
        return new Fence(token, rows.wasNull() ? Fence.NO_SEQ : seq);
    }

    /** No update ever lowered a row's fence. */
    static FailoverChecks.Result neverDecreased(List<Change> history) {
        List<String> problems = new ArrayList<>();
        for (Change change : history) {
            if (change.lowered()) {
                problems.add(change.key() + " went from " + change.before() + " to " + change.after());
            }
        }
        return new FailoverChecks.Result("(d) no row's fence ever decreased", Map.of("updates audited", (long) history.size()),
                problems);
    }

    /**
     * The table equals the rule applied to the accepted topic in its order: each key's row holds the
     * data of its last accepted write, with that write's fence or a later published marker's (a
     * marker raises the row's fence without data); a key with markers only has a data-less deleted
     * row or none; no other row exists.
     */
    static FailoverChecks.Result tableMatchesRule(Map<String, Row> rows, List<Output> outputs) {
        Map<String, Fence> fences = new HashMap<>();
        Map<String, Long> data = new HashMap<>();
        Map<String, List<Fence>> markers = new HashMap<>();
        outputs.stream().filter(o -> o.kind() == Kind.ACCEPTED)
                .sorted(Comparator.comparingInt(Output::partition).thenComparingLong(Output::offset)).forEach(o -> {
                    Fence stored = fences.get(o.key());
                    if (FenceRule.decide(stored, o.fence()).accepted()) {
                        fences.put(o.key(), FenceRule.raise(stored, o.fence()));
                        data.put(o.key(), o.writeId());
                    }
                });
        outputs.stream().filter(o -> o.kind() == Kind.MARKER)
                .forEach(o -> markers.computeIfAbsent(o.key(), k -> new ArrayList<>()).add(o.fence()));
        List<String> problems = new ArrayList<>();
        rows.forEach((key, row) -> {
            Fence written = fences.get(key);
            List<Fence> raised = markers.getOrDefault(key, List.of());
            boolean fenceOk = row.fence().equals(written)
                    || raised.stream().anyMatch(m -> m.equals(row.fence()) && (written == null || Decided.above(m, written)));
            boolean dataOk = written == null ? row.deleted() : !row.deleted() && data.get(key).equals(row.writeId());
            if (!fenceOk || !dataOk) {
                problems.add(key + ": row " + row + ", the rule applied to the accepted topic gives write "
                        + (written == null ? "none" : data.get(key) + " at " + written)
                        + (raised.isEmpty() ? "" : ", markers " + raised));
            }
        });
        fences.keySet().stream().filter(key -> !rows.containsKey(key))
                .forEach(key -> problems.add(key + ": no row, the accepted topic has write " + data.get(key)));
        Map<String, Long> counts = new LinkedHashMap<>();
        counts.put("rows", (long) rows.size());
        counts.put("keys with accepted writes", (long) fences.size());
        return new FailoverChecks.Result("(d) the table equals the rule applied to the accepted topic", counts, problems);
    }
}
