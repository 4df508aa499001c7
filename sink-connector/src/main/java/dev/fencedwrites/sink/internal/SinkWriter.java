package dev.fencedwrites.sink.internal;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceRule;
import dev.fencedwrites.contract.RejectionReason;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;

/**
 * Writes the records of one {@code put} in one database transaction: each record is decoded
 * ({@link RecordDecoder}), rows go to their table's guarded upsert ({@link RecordTable#writeAll}),
 * and every record that is not written becomes a {@link Rejection}, except markers the row's fence
 * already covers and markers that wait for their row ({@link PendingMarkers}). Commits only when
 * the whole batch is decided; on any error rolls back and forgets what it read of the tables. The
 * role of kafka-connect-jdbc's {@code JdbcDbWriter}.
 */
public final class SinkWriter {
    private final DataSource dataSource;
    private final RecordDecoder decoder;
    private final SinkTables tables;
    private final boolean deadLetterQueue;

    /**
     * What one committed batch did.
     *
     * @param written      rows the guarded upsert wrote (data writes and deletes)
     * @param fencesRaised row fences raised by winning {@code FENCE} markers
     * @param rejections   the records refused, in input order
     * @param waiting      the takeover markers that would raise their row's fence but whose row is still below the fence
     *                     they superseded ({@code fence.marker.previous}), in input order
     */
    public record Result(int written, int fencesRaised, List<Rejection> rejections, List<SinkRecord> waiting) {
    }

    /**
     * @param dataSource      connections in manual-commit mode
     * @param decoder         the record decoder
     * @param tables          the task's tables
     * @param deadLetterQueue whether refused records can be reported (an errant record reporter exists); without one,
     *                        a record that can never be written fails the batch
     */
    public SinkWriter(DataSource dataSource, RecordDecoder decoder, SinkTables tables, boolean deadLetterQueue) {
        this.dataSource = dataSource;
        this.decoder = decoder;
        this.tables = tables;
        this.deadLetterQueue = deadLetterQueue;
    }

    /**
     * Writes {@code records} and commits.
     *
     * @throws SQLException            on a database error (rolled back; the caller decides whether to retry)
     * @throws SchemaMismatchException if a table does not fit and may not be changed to fit
     * @throws TransientFailure        if the schema registry cannot be reached
     * @throws ConnectException        if a record cannot be written and there is no dead-letter queue, or the worker's
     *                                 converters or registry credentials are wrong
     */
    public Result write(Collection<SinkRecord> records) throws SQLException {
        try (Connection connection = dataSource.getConnection()) {
            try {
                Result result = writeIn(connection, new ArrayList<>(records));
                connection.commit();
                return result;
            } catch (SQLException | RuntimeException e) {
                try {
                    connection.rollback();
                } catch (SQLException rollback) {
                    // the connection broke (PostgreSQL ended the session, the network): HikariCP then answers "Connection is
                    // closed" without an SQLState; the first error says why, and decides whether a retry may pass
                    e.addSuppressed(rollback);
                }
                tables.forgetCatalogs(); // a rolled-back CREATE or ALTER is gone
                throw e;
            }
        }
    }

    private Result writeIn(Connection connection, List<SinkRecord> records) throws SQLException {
        // Pass 1: decode and check each record; those that cannot be written are rejected here.
        Rejection[] rejected = new Rejection[records.size()];
        Row[] rows = new Row[records.size()];
        Map<RecordTable, List<Integer>> byTable = new LinkedHashMap<>();
        for (int i = 0; i < records.size(); i++) {
            SinkRecord record = records.get(i);
            RecordTable table = tables.forTopic(RecordDecoder.tableTopic(record));
            Decoded decoded = decoder.decode(record);
            if (decoded instanceof Row row) {
                rows[i] = row;
                byTable.computeIfAbsent(table, t -> new ArrayList<>()).add(i);
            } else if (decoded instanceof Decoded.Bad bad) {
                Fence highest = bad.key() == null ? null : storedFence(connection, table, bad.key());
                rejected[i] = new Rejection(record, bad.reason(), highest, bad.detail());
            }
        }
        // Pass 2: the guarded upsert for all rows, a few round trips per table and batch.
        int written = 0;
        int raised = 0;
        List<SinkRecord> waiting = new ArrayList<>();
        for (Map.Entry<RecordTable, List<Integer>> entry : byTable.entrySet()) {
            List<Integer> indexes = entry.getValue();
            List<Outcome> outcomes = entry.getKey().writeAll(connection, indexes.stream().map(i -> rows[i]).toList());
            for (int r = 0; r < indexes.size(); r++) {
                Outcome outcome = outcomes.get(r);
                int i = indexes.get(r);
                boolean marker = rows[i] instanceof Row.FenceOnly;
                if (outcome.decision().accepted()) {
                    raised += marker ? 1 : 0;
                    written += marker ? 0 : 1;
                } else if (marker && outcome.decision().reason() != RejectionReason.MALFORMED_VALUE
                        && FenceRule.decide(outcome.highest(), rows[i].fence()).accepted()) {
                    waiting.add(records.get(i)); // the marker would win, but its row has not reached fence.marker.previous
                } else if (!marker || outcome.decision().reason() == RejectionReason.MALFORMED_VALUE) {
                    // A marker the row's fence already covers is no rejection: the holder's own write got there first (the
                    // markers topic and the accepted topic are not ordered against each other), or a later holder's.
                    rejected[i] = new Rejection(records.get(i), outcome.decision().reason(), outcome.highest(), outcome.detail());
                }
            }
        }
        List<Rejection> rejections = Arrays.stream(rejected).filter(Objects::nonNull).toList();
        if (!deadLetterQueue) {
            requireWritable(rejections);
        }
        return new Result(written, raised, rejections, waiting);
    }

    /** A fenced write needs no dead-letter queue to be refused, but a record that can never be written does. */
    private static void requireWritable(List<Rejection> rejections) {
        for (Rejection rejection : rejections) {
            if (rejection.reason() == RejectionReason.MALFORMED_VALUE || rejection.reason() == RejectionReason.MALFORMED_KEY) {
                SinkRecord bad = rejection.record();
                throw new ConnectException("the record at " + bad.topic() + "-" + bad.kafkaPartition() + "@" + bad.kafkaOffset()
                        + " (key " + RecordDecoder.printable(bad.key())
                        + ") cannot be written and no dead-letter queue is configured"
                        + " (errors.tolerance=all, errors.deadletterqueue.topic.name): " + rejection.detail());
            }
        }
    }

    /** The key's stored fence for a rejection's {@code fence.rejected.highest}; a key the database refuses has none. */
    private static Fence storedFence(Connection connection, RecordTable table, String key) throws SQLException {
        Savepoint before = connection.setSavepoint();
        try {
            Fence fence = table.storedFence(connection, key);
            connection.releaseSavepoint(before);
            return fence;
        } catch (SQLException e) {
            if (!RecordTable.isDataError(e)) {
                throw e;
            }
            connection.rollback(before);
            return null;
        }
    }
}
