package dev.fencedwrites.sink.internal;

import dev.fencedwrites.schemas.Decision;
import dev.fencedwrites.schemas.Fence;
import dev.fencedwrites.schemas.FenceRule;
import dev.fencedwrites.schemas.RejectionReason;
import dev.fencedwrites.schemas.billing.BillingSummary;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.sql.Types;

/**
 * The {@code BillingSummary} table: one row per record key, the data columns, {@code deleted}
 * (soft delete), and the fence columns {@code fence_token} / {@code fence_seq}.
 *
 * <p>The upsert's update is guarded by the decision rule written in SQL
 * ({@link #GUARD}); {@code RETURNING} tells per record whether it was applied. When it was not,
 * the stored fence is read and {@link FenceRule} names the reason, so the SQL and the Java rule
 * must agree (a test checks them against each other on real PostgreSQL).
 */
public final class BillingSummaryTable {
    /** The decision rule as a predicate over the stored row {@code t} and the incoming {@code EXCLUDED}. */
    static final String GUARD = "t.fence_token < EXCLUDED.fence_token OR (t.fence_token = EXCLUDED.fence_token"
            + " AND (t.fence_seq IS NULL OR EXCLUDED.fence_seq IS NULL OR t.fence_seq < EXCLUDED.fence_seq))";

    /** {@link FenceRule#raise} in SQL: a same-token write without a seq keeps the stored seq. */
    static final String SEQ_AFTER = "CASE WHEN t.fence_token = EXCLUDED.fence_token AND EXCLUDED.fence_seq IS NULL"
            + " THEN t.fence_seq ELSE EXCLUDED.fence_seq END";

    private final String table;
    private final String upsert;
    private final String selectFence;

    /**
     * @param table   a plain SQL identifier
     * @param guarded whether to apply the fence guard; {@code false} writes unconditionally
     */
    public BillingSummaryTable(String table, boolean guarded) {
        this.table = table;
        this.upsert = "INSERT INTO " + table + " AS t (resource_key, customer_id, billing_period, amount_minor, currency, line_items,"
                + " computed_at, computed_by, deleted, fence_token, fence_seq, updated_at)"
                + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())"
                + " ON CONFLICT (resource_key) DO UPDATE SET customer_id = EXCLUDED.customer_id, billing_period = EXCLUDED.billing_period,"
                + " amount_minor = EXCLUDED.amount_minor, currency = EXCLUDED.currency, line_items = EXCLUDED.line_items,"
                + " computed_at = EXCLUDED.computed_at, computed_by = EXCLUDED.computed_by, deleted = EXCLUDED.deleted,"
                + " fence_token = EXCLUDED.fence_token, fence_seq = " + SEQ_AFTER + ", updated_at = now()"
                + (guarded ? " WHERE " + GUARD : "")
                + " RETURNING fence_token";
        this.selectFence = "SELECT fence_token, fence_seq FROM " + table + " WHERE resource_key = ?";
    }

    /** Creates the table if it does not exist. */
    public void createIfMissing(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            statement.execute("CREATE TABLE IF NOT EXISTS " + table + " ("
                    + "resource_key TEXT PRIMARY KEY, customer_id TEXT, billing_period TEXT, amount_minor BIGINT, currency TEXT,"
                    + " line_items INTEGER, computed_at TIMESTAMPTZ, computed_by TEXT, deleted BOOLEAN NOT NULL DEFAULT FALSE,"
                    + " fence_token BIGINT NOT NULL, fence_seq BIGINT, updated_at TIMESTAMPTZ NOT NULL DEFAULT now())");
        }
    }

    /**
     * Writes one record inside the caller's transaction.
     *
     * @param key   the record key (the row's primary key)
     * @param value the summary, or {@code null} for a delete (data columns nulled, {@code deleted}
     *              set, fence kept)
     * @return accept when the row was written; otherwise the rejection reason
     * @throws SQLException on database errors
     */
    public Decision write(Connection connection, String key, BillingSummary value, Fence fence) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(upsert)) {
            statement.setString(1, key);
            if (value == null) {
                for (int i = 2; i <= 8; i++) {
                    statement.setNull(i, i == 4 ? Types.BIGINT : i == 6 ? Types.INTEGER : i == 7 ? Types.TIMESTAMP_WITH_TIMEZONE : Types.VARCHAR);
                }
            } else {
                statement.setString(2, value.getCustomerId());
                statement.setString(3, value.getBillingPeriod());
                statement.setLong(4, value.getAmountMinor());
                statement.setString(5, value.getCurrency());
                statement.setInt(6, value.getLineItems());
                statement.setTimestamp(7, Timestamp.from(value.getComputedAt()));
                statement.setString(8, value.getComputedBy());
            }
            statement.setBoolean(9, value == null);
            statement.setLong(10, fence.token());
            if (fence.hasSeq()) {
                statement.setLong(11, fence.seq());
            } else {
                statement.setNull(11, Types.BIGINT);
            }
            try (ResultSet applied = statement.executeQuery()) {
                if (applied.next()) {
                    return Decision.accept();
                }
            }
        }
        Fence stored = storedFence(connection, key);
        Decision decision = FenceRule.decide(stored, fence);
        // The row is locked by the failed upsert, so the stored fence cannot have moved in between.
        return decision.accepted() ? Decision.reject(RejectionReason.STALE_TOKEN) : decision;
    }

    /** The row's fence, or {@code null} when the key has no row. */
    public Fence storedFence(Connection connection, String key) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(selectFence)) {
            statement.setString(1, key);
            try (ResultSet row = statement.executeQuery()) {
                if (!row.next()) {
                    return null;
                }
                long token = row.getLong(1);
                long seq = row.getLong(2);
                return new Fence(token, row.wasNull() ? Fence.NO_SEQ : seq);
            }
        }
    }
}
