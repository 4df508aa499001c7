package dev.fencedwrites.history;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceRule;
import dev.fencedwrites.sink.SinkRows;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;

/**
 * {@code fence verify}'s table check: each row of the sink's table against what the sink's guard makes of the
 * accepted topic: the fence and data of the key's winning accepted write, raised by a winning marker above it. Only keys
 * whose last accepted record (and marker) the sink's consumer group has committed past are compared; the rest are counted as
 * not caught up. A row above its key's accepted history was written around the enforcer ({@code ROW_AHEAD}).
 */
final class TableAudit {
    private final Findings findings;
    private final String table;
    private final String accepted;
    private final String markers;
    private final SinkProgress sink;
    private final Function<byte[], Struct> decode;
    private final Function<Set<String>, Map<String, Set<Fence>>> later;
    private final Map<String, Ahead> ahead = new HashMap<>();
    /**
     * Keys whose row is at the right fence, with the values it may hold (the winning write's, and the highest one the sink
     * refused only on redelivery), to compare once the table's cursor is closed.
     */
    private final Map<String, List<Candidate>> toCompare = new LinkedHashMap<>();

    /** A value the row may hold, and where it is on the accepted topic. */
    private record Candidate(byte[] value, Fence fence, String from, boolean redelivered) {
    }

    /** A row above what the topics showed when read: its fence, and the message should it stay unexplained. */
    private record Ahead(Fence fence, String detail) {
    }

    /** How far the sink has got: whether its consumer group has committed past a record of a topic. */
    @FunctionalInterface
    interface SinkProgress {
        boolean passed(String topic, int partition, long offset);
    }

    /**
     * @param decode the value of an accepted record as the sink decodes it (Confluent wire format through the registry)
     * @param later  for the given keys, the fences of their accepted records and markers written after the topics were
     *               read: a row ahead of what was read may hold one of them on a live pipeline
     * @throws IllegalArgumentException when {@code table} is not a table name the sink takes
     */
    TableAudit(Findings findings, String table, Scope scope, SinkProgress sink, Function<byte[], Struct> decode,
            Function<Set<String>, Map<String, Set<Fence>>> later) {
        SinkRows.sqlName(table);
        this.findings = findings;
        this.table = table;
        this.accepted = scope.accepted();
        this.markers = scope.markers();
        this.sink = sink;
        this.decode = decode;
        this.later = later;
    }

    void run(Connection connection, Map<String, KeyState> keys) throws SQLException {
        Set<String> seen = new HashSet<>();
        String sql = "SELECT resource_key, fence_token, fence_seq, deleted FROM " + SinkRows.sqlName(table);
        connection.setAutoCommit(false); // a cursor, not the whole table in memory
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setFetchSize(5_000);
            try (ResultSet rows = statement.executeQuery()) {
                while (rows.next()) {
                    String key = new String(rows.getString(1).getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1);
                    long token = rows.getLong(2);
                    long seq = rows.getLong(3);
                    boolean noSeq = rows.wasNull();
                    seen.add(key);
                    findings.count("table rows");
                    if (token <= 0 || seq < 0 && !noSeq) {
                        findings.violation(ViolationKind.ROW_DATA_DIFFERS, key,
                                "row with fence_token " + token + " and fence_seq "
                                        + seq + " in " + table + ": no fence the sink writes");
                        continue;
                    }
                    row(key, new Fence(token, noSeq ? Fence.NO_SEQ : seq), rows.getBoolean(4), keys.get(key));
                }
            }
        } finally {
            connection.commit();
            connection.setAutoCommit(true);
        }
        for (Map.Entry<String, List<Candidate>> key : toCompare.entrySet()) {
            compareData(connection, key.getKey(), key.getValue());
        }
        reportAhead();
        keys.forEach((key, state) -> {
            // A marker alone makes no row when the row it supersedes is not there (the sink's MARKER_AFTER update).
            if (!seen.contains(key) && state.rowFence != null && caughtUp(state)) {
                findings.violation(ViolationKind.ROW_MISSING, key, "no row in " + table + ", though the sink has passed "
                        + (state.rowFrom != null
                                ? state.rowFrom + " with " + state.rowFence
                                : "the marker with " + state.markerFence));
            }
        });
    }

    private void row(String key, Fence fence, boolean deleted, KeyState state) {
        Fence expected = state == null ? null : expected(state);
        if (expected == null) {
            ahead.put(key, new Ahead(fence, fence + " in " + table + ", but no accepted write or marker for this key"));
            return;
        }
        if (!caughtUp(state)) {
            findings.count("rows the sink has not caught up with");
            return;
        }
        // The winning write's fence is right too when a marker above it found the row behind its previous fence: the sink then
        // leaves the row as it is (GuardedUpsert's MARKER_AFTER).
        boolean atWinning = fence.equals(expected) || fence.equals(state.rowFence);
        boolean redelivery = redeliveryExplains(fence, deleted, state);
        if (!atWinning && !redelivery) {
            String detail = fence + " in " + table + ", the accepted history gives " + expected + " (" + source(state) + ")";
            if (FenceRule.decide(expected, fence).accepted()) {
                ahead.put(key, new Ahead(fence, detail));
            } else {
                findings.violation(ViolationKind.ROW_BEHIND, key, "row with " + detail);
            }
            return;
        }
        findings.count("rows compared");
        boolean expectDeleted = state.rowFence == null || state.rowDeleted;
        // the winning write's data only at its own fence (or a marker's above it), the redelivered one's only at its own
        boolean winning = atWinning && deleted == expectDeleted;
        if (!winning && !redelivery) {
            findings.violation(ViolationKind.ROW_DATA_DIFFERS, key, "row at " + fence + " has deleted=" + deleted + ", "
                    + source(state) + (expectDeleted ? " is a delete" : " is a write"));
            return;
        }
        List<Candidate> candidates = new ArrayList<>();
        if (winning && state.rowValue != null) {
            candidates.add(new Candidate(state.rowValue, state.rowFence, source(state), false));
        }
        if (redelivery && state.topValue != null) {
            candidates.add(new Candidate(state.topValue, state.topFence, "the write the sink refused on redelivery "
                    + state.topFrom, true));
        }
        if (!deleted && !candidates.isEmpty()) {
            toCompare.put(key, candidates);
        }
    }

    /**
     * Whether the row is what the sink makes when it applied the key's highest accepted write on its first delivery and
     * refused only a redelivery of it: Connect sinks are at-least-once (a task that lost its partitions before committing
     * their offsets gets the records again), and the guard refuses a write the row already holds or has passed.
     */
    private static boolean redeliveryExplains(Fence fence, boolean deleted, KeyState state) {
        if (state.topFence == null || state.topFence.equals(state.rowFence)) {
            return false;
        }
        return deleted == state.topDeleted && (fence.equals(state.topFence) || fence.equals(expected(state.topFence,
                state.markerFence)));
    }

    /** Compares the row's data with each value it may hold; a violation when it holds none of them. */
    private void compareData(Connection connection, String key, List<Candidate> candidates) throws SQLException {
        String violation = null;
        for (Candidate candidate : candidates) {
            Struct value;
            try {
                value = decode.apply(candidate.value());
            } catch (DataException e) {
                continue;
            }
            Optional<List<String>> differing;
            try {
                differing = SinkRows.differingColumns(connection, table, OutputRecord.display(key), value);
            } catch (SQLException | DataException e) {
                violation = violation != null
                        ? violation
                        : "the row at " + candidate.fence() + " cannot hold "
                                + candidate.from() + ": " + e.getMessage();
                continue;
            }
            if (differing.isEmpty() || differing.get().isEmpty()) {
                if (candidate.redelivered()) {
                    findings.count("rows holding a write the sink refused only on redelivery");
                }
                return;
            }
            violation = violation != null
                    ? violation
                    : "columns " + differing.get() + " of the row at " + candidate.fence()
                            + " differ from " + candidate.from();
        }
        if (violation == null) {
            findings.count("rows not compared: value not decodable");
        } else {
            findings.violation(ViolationKind.ROW_DATA_DIFFERS, key, violation);
        }
    }

    /** Reports the rows ahead of the topics as read, but for those holding a fence written to the topics since. */
    private void reportAhead() {
        if (ahead.isEmpty()) {
            return;
        }
        Map<String, Set<Fence>> since = later.apply(ahead.keySet());
        ahead.forEach((key, row) -> {
            if (since.getOrDefault(key, Set.of()).contains(row.fence())) {
                findings.count("rows holding a write newer than the topics as read");
            } else {
                findings.violation(ViolationKind.ROW_AHEAD, key, "row with " + row.detail() + ": written around the enforcer");
            }
        });
    }

    /** The row's fence the accepted history gives: the winning write's, or a winning marker's above it; null: none. */
    private static Fence expected(KeyState state) {
        return expected(state.rowFence, state.markerFence);
    }

    private static Fence expected(Fence write, Fence marker) {
        if (marker != null && (write == null || FenceRule.decide(write, marker).accepted())) {
            return FenceRule.raise(write, marker);
        }
        return write;
    }

    private boolean caughtUp(KeyState state) {
        return (state.lastCopyPartition < 0 || sink.passed(accepted, state.lastCopyPartition, state.lastCopyOffset))
                && (state.markerPartition < 0 || markers == null
                        || sink.passed(markers, state.markerPartition, state.markerOffset));
    }

    private static String source(KeyState state) {
        return state.rowFrom != null ? "the winning accepted write " + state.rowFrom : "the winning marker";
    }
}
