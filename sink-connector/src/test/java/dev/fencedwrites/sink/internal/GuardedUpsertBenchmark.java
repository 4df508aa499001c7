package dev.fencedwrites.sink.internal;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.testing.BillingSummary;
import dev.fencedwrites.sink.internal.RecordTable.Row;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Prints rows per second of {@link RecordTable#writeAll} on embedded PostgreSQL, guarded and
 * unguarded, with 0 % and 20 % stale records, in batches like a sink task's {@code put}. Not a test:
 * run it by hand (see the README's "Measuring"); it asserts nothing.
 *
 * <p>Arguments: rows (default 200 000), keys (default 10 000), batch size (default 500).
 */
public final class GuardedUpsertBenchmark {
    private GuardedUpsertBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int rows = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
        int keys = args.length > 1 ? Integer.parseInt(args[1]) : 10_000;
        int batch = args.length > 2 ? Integer.parseInt(args[2]) : 500;
        System.out.printf("guarded upsert, %d rows over %d keys, batches of %d, one transaction per batch, %d cores%n", rows, keys, batch,
                Runtime.getRuntime().availableProcessors());
        for (Result result : measure(rows, keys, batch, new int[] {0, 20})) {
            System.out.printf("stale %2d %%: unguarded %,8.0f rows/s   guarded %,8.0f rows/s   ratio %.2f%n",
                    result.stalePercent(), result.plainRowsPerSecond(), result.guardedRowsPerSecond(), result.ratio());
        }
    }

    /** Rows per second with and without the guard, at one share of stale records. */
    public record Result(int stalePercent, double plainRowsPerSecond, double guardedRowsPerSecond) {
        public double ratio() {
            return guardedRowsPerSecond / plainRowsPerSecond;
        }
    }

    /**
     * On a fresh embedded PostgreSQL: for each share of stale records, a warm-up, then the same
     * {@code rows} over {@code keys} written unguarded and guarded into fresh tables, twice each
     * (plain, guarded, guarded, plain), in batches of {@code batch}.
     */
    public static List<Result> measure(int rows, int keys, int batch, int[] stalePercents) throws Exception {
        List<Result> results = new ArrayList<>();
        try (EmbeddedPostgres postgres = EmbeddedPostgres.start()) {
            String url = postgres.getJdbcUrl("postgres", "postgres");
            for (int stalePercent : stalePercents) {
                run(url, "warmup_" + stalePercent, false, data(rows / 4, keys, stalePercent), batch);
                // In the order plain, guarded, guarded, plain (each on a fresh table), so warming up
                // and drift favour neither; each figure is the mean of its two runs.
                List<Row> data = data(rows, keys, stalePercent);
                double plain = run(url, "plain_a" + stalePercent, false, data, batch);
                double guarded = run(url, "guarded_a" + stalePercent, true, data, batch);
                guarded = (guarded + run(url, "guarded_b" + stalePercent, true, data, batch)) / 2;
                plain = (plain + run(url, "plain_b" + stalePercent, false, data, batch)) / 2;
                results.add(new Result(stalePercent, plain, guarded));
            }
        }
        return results;
    }

    private static List<Row> data(int rows, int keys, int stalePercent) {
        Random random = new Random(42);
        long[] token = new long[keys];
        List<Row> data = new ArrayList<>(rows);
        Instant at = Instant.parse("2026-11-29T12:00:00Z");
        for (int i = 0; i < rows; i++) {
            int key = random.nextInt(keys);
            long t = random.nextInt(100) < stalePercent && token[key] > 1 ? token[key] - 1 : ++token[key];
            BillingSummary value = BillingSummary.newBuilder().setCustomerId("customer-" + key).setBillingPeriod("2026-11").setAmountMinor(i)
                    .setCurrency("EUR").setLineItems(3).setComputedAt(at).setComputedBy("bench").build();
            data.add(new Row("customer-" + key, BillingStructs.struct(value), new Fence(t, 1)));
        }
        return data;
    }

    /** Writes {@code data} in batches; returns rows per second. */
    private static double run(String url, String table, boolean guard, List<Row> data, int batch) throws Exception {
        RecordTable target = new RecordTable(table, guard, true, true);
        try (Connection connection = DriverManager.getConnection(url)) {
            connection.setAutoCommit(false);
            target.prepare(connection, BillingStructs.SCHEMA);
            connection.commit();
            long start = System.nanoTime();
            for (int from = 0; from < data.size(); from += batch) {
                target.writeAll(connection, data.subList(from, Math.min(data.size(), from + batch)));
                connection.commit();
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            try (Statement statement = connection.createStatement()) {
                statement.execute("DROP TABLE " + table);
            }
            connection.commit();
            return data.size() / seconds;
        }
    }
}
