package dev.fencedwrites.sink.internal;

import static dev.fencedwrites.sink.internal.Row.marker;
import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.Decision;
import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceRule;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.testing.PostgresExtension;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The fence-guarded upsert ({@link GuardedUpsert}, through {@link RecordTable}) on real PostgreSQL (embedded, from
 * Maven Central): the SQL guard must decide exactly like {@link FenceRule}. Fences are written
 * {@code token} or {@code token.seq}.
 */
@Tag("process")
class GuardedUpsertTest {
    private static final String TABLE = "billing_summary";
    private static final String KEY = "customer-42";
    private static final BillingSummary STORED = summary(100, "worker-a", "2026-11-30T10:00:00.123Z");
    private static final BillingSummary INCOMING = summary(200, "worker-b", "2026-11-30T11:00:00.456Z");

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();
    private final RecordTable guarded = new RecordTable(TABLE, true, true, true);
    private Connection connection;

    @BeforeEach
    void emptyTable() throws SQLException {
        connection = postgres.dataSource().getConnection();
        connection.setAutoCommit(true);
        guarded.prepare(connection, BillingStructs.SCHEMA);
        try (Statement statement = connection.createStatement()) {
            statement.execute("TRUNCATE " + TABLE);
        }
        connection.setAutoCommit(false); // each test's writes, read back on this connection, are rolled back at close
    }

    @AfterEach
    void closeConnection() throws SQLException {
        connection.close();
    }

    @ParameterizedTest(name = "stored {0}, incoming {1}")
    @CsvSource({
            "none, 7.0", "none, 7",
            "5.3, 6.1", "5.3, 6.0", "5.3, 6", "5, 6.1", "5, 6",
            "5.3, 5", "5, 5.2", "5, 5",
            "5.3, 5.4", "5.0, 5.1",
            "5.3, 5.3", "5.0, 5.0",
            "5.3, 5.2", "5.3, 5.0",
            "5.3, 4.9", "5.3, 4", "5, 4.1", "5, 4",
    })
    void guardDecidesLikeFenceRule(String stored, String incoming) throws SQLException {
        Fence storedFence = fence(stored);
        Fence incomingFence = fence(incoming);
        if (storedFence != null) {
            guarded.write(connection, KEY, BillingStructs.struct(STORED), storedFence);
        }

        Decision decision = guarded.write(connection, KEY, BillingStructs.struct(INCOMING), incomingFence);

        Decision expected = FenceRule.decide(storedFence, incomingFence);
        assertThat(decision).isEqualTo(expected);
        assertThat(row(KEY)).isEqualTo(expected.accepted()
                ? Row.of(INCOMING, FenceRule.raise(storedFence, incomingFence))
                : Row.of(STORED, storedFence));
    }

    @Test
    void deleteMarksRowDeletedAndKeepsFence() throws SQLException {
        guarded.write(connection, KEY, BillingStructs.struct(STORED), new Fence(5, 1));

        Decision decision = guarded.write(connection, KEY, BillingStructs.struct(null), new Fence(5, 2));

        assertThat(decision.accepted()).isTrue();
        assertThat(row(KEY)).isEqualTo(Row.deleted(new Fence(5, 2)));
        assertThat(guarded.storedFence(connection, KEY)).isEqualTo(new Fence(5, 2));
    }

    @Test
    void rejectsLowerTokenAfterDelete() throws SQLException {
        guarded.write(connection, KEY, BillingStructs.struct(STORED), new Fence(5, 1));
        guarded.write(connection, KEY, BillingStructs.struct(null), new Fence(5, 2));

        Decision decision = guarded.write(connection, KEY, BillingStructs.struct(INCOMING), new Fence(4, 9));

        assertThat(decision).isEqualTo(Decision.reject(RejectionReason.STALE_TOKEN));
        assertThat(row(KEY)).isEqualTo(Row.deleted(new Fence(5, 2)));
    }

    @Test
    void sameTokenWriteWithoutSeqKeepsStoredSeq() throws SQLException {
        guarded.write(connection, KEY, BillingStructs.struct(STORED), new Fence(5, 3));
        Decision noSeq = guarded.write(connection, KEY, BillingStructs.struct(INCOMING), Fence.of(5));

        Decision late = guarded.write(connection, KEY, BillingStructs.struct(STORED), new Fence(5, 1));

        assertThat(noSeq.accepted()).isTrue();
        assertThat(late).isEqualTo(Decision.reject(RejectionReason.OUT_OF_ORDER));
        assertThat(row(KEY)).isEqualTo(Row.of(INCOMING, new Fence(5, 3)));
    }

    @Test
    void rejectsStaleDelete() throws SQLException {
        guarded.write(connection, KEY, BillingStructs.struct(STORED), new Fence(6, 1));

        Decision decision = guarded.write(connection, KEY, BillingStructs.struct(null), new Fence(5, 1));

        assertThat(decision).isEqualTo(Decision.reject(RejectionReason.STALE_TOKEN));
        assertThat(row(KEY)).isEqualTo(Row.of(STORED, new Fence(6, 1)));
    }

    @Test
    void decidesEachRecordOfOneTransaction() throws SQLException {
        connection.setAutoCommit(false);
        Decision first = guarded.write(connection, KEY, BillingStructs.struct(STORED), new Fence(5, 1));
        Decision redelivery = guarded.write(connection, KEY, BillingStructs.struct(STORED), new Fence(5, 1));
        Decision stale = guarded.write(connection, KEY, BillingStructs.struct(STORED), new Fence(4, 2));
        Decision next = guarded.write(connection, KEY, BillingStructs.struct(INCOMING), new Fence(5, 2));
        connection.commit();

        assertThat(first.accepted()).isTrue();
        assertThat(redelivery).isEqualTo(Decision.reject(RejectionReason.DUPLICATE));
        assertThat(stale).isEqualTo(Decision.reject(RejectionReason.STALE_TOKEN));
        assertThat(next.accepted()).isTrue();
        assertThat(row(KEY)).isEqualTo(Row.of(INCOMING, new Fence(5, 2)));
    }

    @Test
    void keepsOneFencePerKey() throws SQLException {
        guarded.write(connection, KEY, BillingStructs.struct(STORED), new Fence(6, 1));

        Decision decision = guarded.write(connection, "customer-43", BillingStructs.struct(INCOMING), new Fence(5, 1));

        assertThat(decision.accepted()).isTrue();
        assertThat(row(KEY)).isEqualTo(Row.of(STORED, new Fence(6, 1)));
    }

    // --- FENCE markers: the fence at the resource on takeover ---

    @Test
    void markerRaisesTheRowsFenceAndKeepsItsData() throws SQLException {
        guarded.write(connection, KEY, BillingStructs.struct(STORED), new Fence(5, 1));

        List<Outcome> outcome = guarded.writeAll(connection, List.of(marker(KEY, new Fence(7, 0))));

        assertThat(outcome.get(0).decision().accepted()).isTrue();
        assertThat(row(KEY)).isEqualTo(
                new Row(STORED.getCustomerId(), STORED.getBillingPeriod(), STORED.getAmountMinor(), STORED.getCurrency(),
                        STORED.getLineItems(), STORED.getComputedAt(), STORED.getComputedBy(), false, 7, 0L));
    }

    @Test
    void markerForAKeyWithoutRowCreatesADatalessDeletedRow() throws SQLException {
        guarded.writeAll(connection, List.of(marker(KEY, new Fence(7, 0))));

        assertThat(row(KEY)).isEqualTo(Row.deleted(new Fence(7, 0)));
    }

    @Test
    void writeBelowAMarkerButAboveTheRowsLastDataWriteIsRefusedStale() throws SQLException {
        guarded.write(connection, KEY, BillingStructs.struct(STORED), new Fence(5, 1));
        guarded.writeAll(connection, List.of(marker(KEY, new Fence(7, 0))));

        Decision stale = guarded.write(connection, KEY, BillingStructs.struct(INCOMING), new Fence(6, 1));
        Decision holder = guarded.write(connection, KEY, BillingStructs.struct(INCOMING), new Fence(7, 1));

        assertThat(stale).isEqualTo(Decision.reject(RejectionReason.STALE_TOKEN));
        assertThat(holder.accepted()).isTrue();
        assertThat(row(KEY)).isEqualTo(Row.of(INCOMING, new Fence(7, 1)));
    }

    /**
     * A marker names the fence it superseded at the enforcer; until the row holds it, the previous
     * holder's accepted writes are still on their way (the markers topic and the accepted topic are
     * not ordered against each other), so the marker must not overtake them.
     */
    @Test
    void markerWithAPreviousFenceAppliesOnlyOnceTheRowHoldsIt() throws SQLException {
        guarded.write(connection, KEY, BillingStructs.struct(STORED), new Fence(8, 3));

        List<Outcome> early = guarded.writeAll(connection, List.of(marker(KEY, new Fence(9, 0), new Fence(8, 4))));
        Decision lastOfThePreviousHolder = guarded.write(connection, KEY, BillingStructs.struct(INCOMING), new Fence(8, 4));
        List<Outcome> onTime = guarded.writeAll(connection, List.of(marker(KEY, new Fence(9, 0), new Fence(8, 4))));

        assertThat(early.get(0).decision().accepted()).isFalse();
        assertThat(lastOfThePreviousHolder.accepted()).isTrue();
        assertThat(onTime.get(0).decision().accepted()).isTrue();
        assertThat(row(KEY)).isEqualTo(
                new Row(INCOMING.getCustomerId(), INCOMING.getBillingPeriod(), INCOMING.getAmountMinor(), INCOMING.getCurrency(),
                        INCOMING.getLineItems(), INCOMING.getComputedAt(), INCOMING.getComputedBy(), false, 9, 0L));
    }

    @Test
    void markerWithAPreviousFenceCreatesNoRow() throws SQLException {
        List<Outcome> outcome = guarded.writeAll(connection, List.of(marker(KEY, new Fence(9, 0), Fence.of(8))));

        assertThat(outcome.get(0).decision().accepted()).isFalse();
        assertThat(guarded.storedFence(connection, KEY)).isNull();
    }

    @Test
    void markerWithAPreviousFenceWithoutSeqAppliesAtThatToken() throws SQLException {
        guarded.write(connection, KEY, BillingStructs.struct(STORED), new Fence(8, 2));

        List<Outcome> outcome = guarded.writeAll(connection, List.of(marker(KEY, new Fence(9, 0), Fence.of(8)),
                marker("customer-43", new Fence(9, 0), new Fence(8, 1))));

        assertThat(outcome.get(0).decision().accepted()).isTrue();
        assertThat(outcome.get(1).decision().accepted()).as("customer-43 has no row").isFalse();
        assertThat(guarded.storedFence(connection, KEY)).isEqualTo(new Fence(9, 0));
    }

    @Test
    void markerBelowTheRowsFenceChangesNothing() throws SQLException {
        guarded.write(connection, KEY, BillingStructs.struct(STORED), new Fence(7, 1));

        List<Outcome> outcome = guarded.writeAll(connection, List.of(marker(KEY, new Fence(7, 0)),
                marker("customer-43", new Fence(3, 0))));

        assertThat(outcome.get(0).decision()).isEqualTo(Decision.reject(RejectionReason.OUT_OF_ORDER));
        assertThat(outcome.get(1).decision().accepted()).isTrue();
        assertThat(row(KEY)).isEqualTo(Row.of(STORED, new Fence(7, 1)));
    }

    @Test
    void storedFenceIsNullWithoutRow() throws SQLException {
        assertThat(guarded.storedFence(connection, "no-such-key")).isNull();
    }

    @Test
    void unguardedTableLetsStaleWriteOverwrite() throws SQLException {
        RecordTable unguarded = new RecordTable(TABLE, false, true, true);
        guarded.write(connection, KEY, BillingStructs.struct(STORED), new Fence(6, 1));

        Decision decision = unguarded.write(connection, KEY, BillingStructs.struct(INCOMING), new Fence(5, 1));

        assertThat(decision.accepted()).isTrue();
        assertThat(row(KEY)).isEqualTo(Row.of(INCOMING, new Fence(5, 1)));
    }

    /** The row's data, {@code deleted} and fence columns; {@code fenceSeq} null when absent. */
    record Row(String customerId, String billingPeriod, Long amountMinor, String currency, Integer lineItems,
            Instant computedAt, String computedBy, boolean deleted, long fenceToken, Long fenceSeq) {

        static Row of(BillingSummary value, Fence fence) {
            return new Row(value.getCustomerId(), value.getBillingPeriod(), value.getAmountMinor(), value.getCurrency(),
                    value.getLineItems(), value.getComputedAt(), value.getComputedBy(), false, fence.token(), seqOf(fence));
        }

        static Row deleted(Fence fence) {
            return new Row(null, null, null, null, null, null, null, true, fence.token(), seqOf(fence));
        }

        private static Long seqOf(Fence fence) {
            return fence.hasSeq() ? fence.seq() : null;
        }
    }

    private Row row(String key) throws SQLException {
        try (PreparedStatement statement = connection
                .prepareStatement("SELECT customer_id, billing_period, amount_minor, currency,"
                        + " line_items, computed_at, computed_by, deleted, fence_token, fence_seq FROM " + TABLE
                        + " WHERE resource_key = ?")) {
            statement.setString(1, key);
            try (ResultSet rs = statement.executeQuery()) {
                assertThat(rs.next()).as("row for key %s", key).isTrue();
                OffsetDateTime computedAt = rs.getObject(6, OffsetDateTime.class);
                return new Row(rs.getString(1), rs.getString(2), rs.getObject(3, Long.class), rs.getString(4),
                        rs.getObject(5, Integer.class),
                        computedAt == null ? null : computedAt.toInstant(), rs.getString(7), rs.getBoolean(8), rs.getLong(9),
                        rs.getObject(10, Long.class));
            }
        }
    }

    /** {@code none}, {@code token} or {@code token.seq}: the form of {@link Fence#toString()}. */
    private static Fence fence(String text) {
        if (text.equals("none")) {
            return null;
        }
        int dot = text.indexOf('.');
        return dot < 0
                ? Fence.of(Long.parseLong(text))
                : new Fence(Long.parseLong(text.substring(0, dot)), Long.parseLong(text.substring(dot + 1)));
    }

    private static BillingSummary summary(long amountMinor, String computedBy, String computedAt) {
        return BillingSummary.newBuilder()
                .setCustomerId(KEY)
                .setBillingPeriod("2026-11")
                .setAmountMinor(amountMinor)
                .setCurrency("EUR")
                .setLineItems(3)
                .setComputedAt(Instant.parse(computedAt))
                .setComputedBy(computedBy)
                .build();
    }
}
