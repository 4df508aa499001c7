package dev.fencedwrites.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code ./fence bench --quick} runs against real etcd, a real Kafka broker, PostgreSQL and JMH, and produces a
 * complete table: every figure a number. Nothing about time is asserted.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class BenchQuickIT {
    @TempDir
    Path out;

    @Test
    void quickRunPrintsACompleteTableAndWritesIt() throws Exception {
        StringWriter table = new StringWriter();
        StringWriter errors = new StringWriter();
        CommandLine line = bench(table, errors);

        int exit = line.execute("--quick", "--out", out.toString());

        assertThat(exit).as("exit code; the bench's error output:%n%s", errors).isZero();
        String printed = table.toString();
        // The table of figures ends at the first blank line; the cost and state sections follow.
        String figures = printed.substring(0, printed.indexOf("\n\n") + 1);
        List<String> rows = figures.lines().filter(l -> l.startsWith("| ") && !l.startsWith("| measure")).toList();
        assertCostSections(printed.substring(figures.length()));
        List<String> expected = new ArrayList<>(List.of(
                "token acquisition p50 vs raw etcd put p50",
                "token acquisition p99 vs raw etcd put p99",
                "acquisitions/s of one resource, 4 contending clients vs one client alone",
                "sink guarded upsert vs plain upsert, 0 % stale",
                "sink guarded upsert vs plain upsert, 20 % stale"));
        for (String row : List.of("100 B values, 1k keys", "100 B values, 20k keys", "1 KB values, 1k keys",
                "1 KB values, 20k keys")) {
            expected.add("ceiling: raw produce of the input, plain producer (acks=all), " + row);
            expected.add("ceiling: raw consume of the input, plain consumer (read_committed), " + row);
            for (String guarantee : List.of("exactly_once_v2", "at_least_once")) {
                expected.add("enforcer vs stateful baseline throughput, " + row + ", " + guarantee + " (one run each)");
                expected.add("stateful baseline vs pass-through throughput, " + row + ", " + guarantee + " (one run each)");
                expected.add("enforcer vs pass-through throughput, " + row + ", " + guarantee + " (one run each)");
            }
        }
        expected.addAll(List.of(
                "fence state per key at 20k keys: state store (RocksDB files)",
                "fence state per key at 20k keys: changelog topic (log on disk)",
                "fence store restore of 20k keys from the changelog into an empty state directory"));
        for (String guarantee : List.of("exactly_once_v2", "at_least_once")) {
            for (String shape : List.of("1 instance x 2 stream threads", "2 instances x 1 stream thread")) {
                expected.add("enforcer scaling on 6 partitions, " + shape + " vs 1 instance x 1 stream thread, 100 B values, 1k "
                        + "keys, " + guarantee);
            }
        }
        for (String guarantee : List.of("exactly_once_v2", "at_least_once")) {
            expected.add("enforcer throughput, 20 % stale (rejected) vs all accepted, 100 B values, 1k keys, " + guarantee);
        }
        expected.addAll(List.of(
                "end-to-end latency p50, produce to output topic, enforcer vs pass-through, exactly_once_v2",
                "end-to-end latency p99, produce to output topic, enforcer vs pass-through, exactly_once_v2",
                "end-to-end latency p50, produce to output topic, enforcer vs pass-through, at_least_once",
                "end-to-end latency p99, produce to output topic, enforcer vs pass-through, at_least_once",
                "enforcer throughput, CRC32 writer (re-routed) vs murmur2 writer, 100 B values, 1k keys, exactly_once_v2",
                "enforcer throughput, CRC32 writer (re-routed) vs murmur2 writer, 100 B values, 1k keys, at_least_once"));
        for (String shape : List.of("writes under long leases (1k keys, 20 writes per token)",
                "one acquisition per key (5k keys, one write each)")) {
            expected.addAll(verificationRows(shape));
        }
        expected.addAll(List.of(
                "etcd CPU per 1,000 lock transactions, with vs without a watch on the lock prefix",
                "end-to-end latency p50, produce to accepted topic, enforcer with vs without token verification, one acquisition "
                        + "per key, exactly_once_v2",
                "end-to-end latency p99, produce to accepted topic, enforcer with vs without token verification, one acquisition "
                        + "per key, exactly_once_v2",
                "decision rule per record (JMH): parse + decide + raise vs header read + store"));
        assertThat(rows).extracting(row -> row.split("\\|")[1].trim().replaceAll(", spread [^)]*\\)$", ")"))
                .containsExactlyElementsOf(expected);
        for (String row : rows) {
            String[] cells = row.split("\\|");
            // The fence state, the etcd reads, the shares, etcd's CPU per acquisition and the ceilings have no baseline, so no
            // ratio either: those cells are "-". A share may be 0 (a backlog is read from etcd) and a CPU difference
            // negative (noise).
            if (cells[1].startsWith(" acquisitions verified") || cells[1].startsWith(" etcd CPU per 1,000 acquisitions")) {
                assertThat(Double.parseDouble(cells[2].trim().replace(",", ""))).as("%s", cells[1]).isFinite();
                continue;
            }
            int[] columns = cells[1].startsWith(" fence st") || cells[1].startsWith(" etcd reads")
                    || cells[1].startsWith(" ceiling")
                            ? new int[]{2}
                            : new int[]{2, 3, 5};
            for (int column : columns) {
                assertThat(Double.parseDouble(cells[column].trim().replace(",", ""))).as("%s, column %d", cells[1], column)
                        .isPositive().isFinite();
            }
        }
        assertThat(out.resolve("latest-quick.md")).exists();
        assertThat(Files.readString(out.resolve("latest-quick.md"))).contains(table.toString().lines().findFirst().orElseThrow())
                .contains("cores").contains("Java ").contains("Kafka ").contains("How the figures are taken");
    }

    @Test
    void quickChurnRunMeasuresTheStoreWithAndWithoutExpiryAndWritesItsSamples() throws Exception {
        StringWriter table = new StringWriter();
        StringWriter errors = new StringWriter();

        int exit = bench(table, errors).execute("--quick", "--only", "churn", "--out", out.toString());

        assertThat(exit).as("exit code; the bench's error output:%n%s", errors).isZero();
        List<String> rows = table.toString().lines().filter(l -> l.startsWith("| ") && !l.startsWith("| measure")).toList();
        assertThat(rows).extracting(row -> row.split("\\|")[1].trim().replaceAll(", 200k keys.*$", "")).containsExactly(
                "fences in the fence store at the end, with vs without fence expiry",
                "fence store bytes (RocksDB SST + memtables) at the end, with vs without fence expiry",
                "fences in the store vs live locks in etcd, with fence expiry, the sample where their ratio is highest after the "
                        + "first hold + 2 intervals",
                "fence store bytes vs live locks x bytes per fence of the run without expiry, with fence expiry, the sample "
                        + "where their ratio is highest after the first hold + 2 intervals",
                "enforcer throughput (writer paced by the enforcer's decisions) with vs without fence expiry",
                "enforcer process CPU per record, with vs without fence expiry",
                "etcd CPU per record (the writer's lock transactions and revokes, the enforcer's verification and its "
                        + "oldest-lock reads), with vs without fence expiry");
        String[] keys = rows.get(0).split("\\|");
        assertThat(Double.parseDouble(keys[3].trim().replace(",", ""))).as("fences without expiry: every key written")
                .isGreaterThanOrEqualTo(200_000);
        assertThat(Double.parseDouble(keys[2].trim().replace(",", ""))).as("fences with expiry").isLessThan(200_000);
        List<Path> csv;
        try (var files = Files.list(out)) {
            csv = files.filter(f -> f.getFileName().toString().endsWith("-quick-partial-churn.csv")).toList();
        }
        assertThat(csv).hasSize(1);
        List<String> samples = Files.readAllLines(csv.get(0));
        assertThat(samples.get(0)).isEqualTo(ChurnBench.CSV_HEADER);
        assertThat(samples).anyMatch(l -> l.startsWith("off,")).anyMatch(l -> l.startsWith("on,"));
    }

    /** {@code fence bench} writing its table to {@code table}; its progress and errors to {@code errors} and the build log. */
    private static CommandLine bench(StringWriter table, StringWriter errors) {
        CommandLine line = new CommandLine(new BenchMain());
        line.setOut(new PrintWriter(table));
        // The progress and any error still reach the build log, and the failure message quotes them.
        line.setErr(new PrintWriter(new Writer() {
            @Override
            public void write(char[] chars, int offset, int length) {
                errors.write(chars, offset, length);
                System.err.print(new String(chars, offset, length));
            }

            @Override
            public void flush() {
                System.err.flush();
            }

            @Override
            public void close() {
            }
        }, true));
        return line;
    }

    /** The token verification rows of one shape, in the bench's order. */
    private static List<String> verificationRows(String shape) {
        String guarantee = ", exactly_once_v2";
        List<String> rows = new ArrayList<>(List.of(
                "enforcer with vs without token verification, its verifier started after the writers acquired (a backlog: "
                        + "tokens older than its index are read from etcd, ahead), " + shape + guarantee + ", medians of 3",
                "etcd reads/s of token verification, " + shape + guarantee,
                "etcd reads per acquisition (per key's first token), " + shape,
                "acquisitions verified from the index of lock holders (share), " + shape,
                "etcd CPU per 1,000 acquisitions: verification reads (its CPU in a verifying run less in one without), " + shape,
                "etcd CPU per 1,000 acquisitions: lock transactions (put + oldest key; three verifiers' watches open), " + shape,
                "enforcer with token verification, its verifier running while the writers acquired (the index of lock holders "
                        + "answers each acquisition) vs without verification, " + shape + guarantee + ", medians of 3",
                "acquisitions verified from the index of lock holders (share), its verifier running while the writers "
                        + "acquired, " + shape));
        if (shape.startsWith("one acquisition")) {
            rows.add("enforcer with a verifier answering from memory (the ceiling of a local index) vs without verification, "
                    + shape + guarantee + ", medians of 3");
        }
        return rows;
    }

    /**
     * The sections after the table: one cost line per throughput row and topology (wall and CPU time per record positive),
     * and the state cost taken apart under each guarantee (every subject measured, every part a number).
     */
    private static void assertCostSections(String sections) {
        List<String> costs = sections.lines().filter(l -> l.matches("\\| (100 B|1 KB) values, .*")).toList();
        assertThat(costs).as("one cost line per row, guarantee and topology in:%n%s", sections).hasSize(4 * 2 * 3);
        for (String line : costs) {
            String[] cells = line.split("\\|");
            for (int column : new int[]{4, 5, 6}) {
                assertThat(Double.parseDouble(cells[column].trim())).as("%s, column %d", line, column).isPositive().isFinite();
            }
        }
        for (String guarantee : List.of("exactly_once_v2", "at_least_once")) {
            int at = sections.indexOf("State cost decomposed, 100 B values, 20k keys, " + guarantee);
            assertThat(at).as("the state cost under %s in:%n%s", guarantee, sections).isNotNegative();
            int end = sections.indexOf("State cost decomposed", at + 1);
            List<String> lines = sections.substring(at, end < 0 ? sections.length() : end).lines()
                    .filter(l -> l.startsWith("| ") && !l.startsWith("| topology") && !l.startsWith("| part")).toList();
            assertThat(lines.stream().filter(l -> l.startsWith("| stateful baseline, "))).hasSize(12);
            assertThat(lines).anyMatch(l -> l.startsWith("| pass-through |")).anyMatch(l -> l.startsWith("| enforcer |"));
            assertThat(
                    lines.stream().filter(l -> l.startsWith("| the ") || l.startsWith("| RocksDB") || l.startsWith("| a store")))
                    .hasSize(9).allSatisfy(l -> assertThat(Double.parseDouble(l.split("\\|")[2].trim().split(" ")[0]))
                            .isFinite());
        }
    }
}
