package dev.fencedwrites.bench;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.sink.FencedTableWriter;
import dev.fencedwrites.sink.FencedTableWriter.FencedValue;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.Random;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Timestamp;

/**
 * Prints rows per second of the sink's write path ({@link FencedTableWriter}: the task's guarded
 * upsert and batch writer) on embedded PostgreSQL, guarded and unguarded, with 0 % and 20 % stale
 * records, in batches like a sink task's {@code put}. The values are the billing summary's fields as
 * the project's {@code AvroConverter} gives them. Part of {@code ./fence bench} (docs/dev/benchmarks.md); runs
 * alone too, and asserts nothing.
 *
 * <p>Arguments: rows (default 200 000), keys (default 10 000), batch size (default 500).
 */
public final class GuardedUpsertBenchmark {
    /** The Connect schema of the values written: a billing summary. */
    static final Schema SCHEMA = SchemaBuilder.struct().name("dev.fencedwrites.bench.BillingSummary")
            .field("customerId", Schema.STRING_SCHEMA)
            .field("billingPeriod", Schema.STRING_SCHEMA)
            .field("amountMinor", Schema.INT64_SCHEMA)
            .field("currency", Schema.STRING_SCHEMA)
            .field("lineItems", Schema.INT32_SCHEMA)
            .field("computedAt", Timestamp.SCHEMA)
            .field("computedBy", Schema.STRING_SCHEMA)
            .build();

    private GuardedUpsertBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int rows = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
        int keys = args.length > 1 ? Integer.parseInt(args[1]) : 10_000;
        int batch = args.length > 2 ? Integer.parseInt(args[2]) : 500;
        System.out.printf("guarded upsert, %d rows over %d keys, batches of %d, one transaction per batch, %d cores%n", rows,
                keys, batch,
                Runtime.getRuntime().availableProcessors());
        for (Result result : measure(rows, keys, batch, new int[]{0, 20})) {
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
                List<FencedValue> data = data(rows, keys, stalePercent);
                double plain = run(url, "plain_a" + stalePercent, false, data, batch);
                double guarded = run(url, "guarded_a" + stalePercent, true, data, batch);
                guarded = (guarded + run(url, "guarded_b" + stalePercent, true, data, batch)) / 2;
                plain = (plain + run(url, "plain_b" + stalePercent, false, data, batch)) / 2;
                results.add(new Result(stalePercent, plain, guarded));
            }
        }
        return results;
    }

    private static List<FencedValue> data(int rows, int keys, int stalePercent) {
        Random random = new Random(42);
        long[] token = new long[keys];
        List<FencedValue> data = new ArrayList<>(rows);
        Date at = Date.from(Instant.parse("2026-11-29T12:00:00Z"));
        for (int i = 0; i < rows; i++) {
            int key = random.nextInt(keys);
            long t = random.nextInt(100) < stalePercent && token[key] > 1 ? token[key] - 1 : ++token[key];
            Struct value = new Struct(SCHEMA).put("customerId", "customer-" + key).put("billingPeriod", "2026-11")
                    .put("amountMinor", (long) i).put("currency", "EUR").put("lineItems", 3).put("computedAt", at)
                    .put("computedBy", "bench");
            data.add(new FencedValue("customer-" + key, value, new Fence(t, 1)));
        }
        return data;
    }

    /** Writes {@code data} in batches; returns rows per second. */
    private static double run(String url, String table, boolean guard, List<FencedValue> data, int batch) throws Exception {
        FencedTableWriter target = new FencedTableWriter(table, guard);
        try (Connection connection = DriverManager.getConnection(url)) {
            connection.setAutoCommit(false);
            target.prepare(connection, SCHEMA);
            connection.commit();
            long start = System.nanoTime();
            for (int from = 0; from < data.size(); from += batch) {
                target.write(connection, data.subList(from, Math.min(data.size(), from + batch)));
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
