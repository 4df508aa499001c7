package dev.fencedwrites.bench;

import com.sun.management.OperatingSystemMXBean;
import dev.fencedwrites.services.EtcdNode;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import org.apache.kafka.common.utils.AppInfoParser;

/** The bench's Markdown: the table of figures, the machine, the versions, how each figure is taken, and the run's log. */
final class BenchReport {
    /** How each figure is taken, below the table in the Markdown. */
    static final String NOTES = String.join("\n",
            "How the figures are taken:",
            "- Enforcer throughput: the enforcer's topology, a pass-through topology (input to output, no state) and the "
                    + "minimal stateful baseline (issue 19: per record one read and one write of an 8-byte number per key "
                    + "in a store built as the fence store is, RocksDB with the record cache and a changelog, every record "
                    + "forwarded) read the same input topic from the beginning, with the enforcer's Kafka Streams settings "
                    + "(one stream thread, 3 partitions, the guarantee's default commit interval: 100 ms for "
                    + "exactly_once_v2, 30 s for at_least_once). Records/s from the first processed record (Kafka Streams' "
                    + "process-total) to the end of close() after the last, which flushes the fence store's cache to "
                    + "RocksDB and the changelog and commits, after a warm-up run of each under each guarantee; the "
                    + "enforcer must have accepted every record. The full run measures each topology three times, in rounds "
                    + "whose order rotates (each topology runs first, second and third once), and gives the median, with "
                    + "the spread (half the range, as a percentage of the median) of each side; the progress lines on "
                    + "stderr show each run. Every write is in order, so the enforcer accepts all of them: the figure is "
                    + "the cost of the check and of the fence state. The ceilings: the same input produced by a plain "
                    + "producer (acks=all, linger.ms 20, batch.size 256 KB) and read by a plain consumer (read_committed, "
                    + "no group), records/s, as kafka-producer-perf-test and kafka-consumer-perf-test measure them.",
            "- Scale (issue 19): the enforcer over 1,000,000 in-order writes on an input of 6 partitions (10k keys, 100 B "
                    + "values) as one instance with one stream thread, one instance with two, and two instances (one "
                    + "application.id, each its own state directory, in this JVM) with one each; records/s of the group, one "
                    + "run each. On 2 cores that also run the broker, the rows show what a second thread or instance wins on "
                    + "busy cores, not how far the enforcer scales.",
            "- Stale mix (issue 19): the enforcer over 1,000,000 writes (10k keys, 100 B values) all in order, against the "
                    + "same writes with every fifth write of each key stale (20 %, each rejected STALE_TOKEN with a copy on the "
                    + "rejected topic); one run each; the run fails unless exactly the stale writes were rejected.",
            "- End-to-end latency: records produced at a fixed rate while the topology runs; the time each is read "
                    + "(read_committed) from the accepted (or pass-through output) topic minus its produce timestamp; the first "
                    + "second is left out.",
            "- Fence state: after the enforcer's exactly_once_v2 run at the most keys, the changelog's log segments on the "
                    + "broker (not compacted yet), then a new instance restores the whole changelog into an empty state "
                    + "directory (timed from the first partition's restore start to the last one's end) and its store's "
                    + "RocksDB files are measured after close; sizes divided by the key count.",
            "- Acquisition: FencingLeaseClient.acquire (lease grant + lock) against one etcd put, interleaved; the release is "
                    + "not timed. Contention: 4 clients each acquiring and releasing one resource in a loop, against one client "
                    + "doing the same alone.",
            "- Token verification (issue 14): the enforcer with token verification on (etcd.endpoints set, the enforcer's "
                    + "defaults) and off over the same input, exactly_once_v2, runs in the order off, on, on, off, each figure "
                    + "the mean of two. Every token is real: before the timed part each key's lock is taken in etcd with one "
                    + "transaction (put the lock key under a lease, read the oldest key under the lock; the revision is the "
                    + "token), all keys under one long lease. Writes under long leases: each key's token is read from etcd "
                    + "once, the later writes at its fence are compared with the lease the fence store keeps. One acquisition "
                    + "per key: one write per key, so every record's token is verified with one etcd range read. etcd reads/s: "
                    + "the verifier's fence_enforcer_token_verification_etcd_reads_total over the same timed part. "
                    + "The run fails unless every record was accepted and etcd was read exactly once per key.",
            "- Sink: the same batches written with the guarded upsert and with a plain upsert, in the order plain, guarded, "
                    + "guarded, plain.")
            + "\n";

    private BenchReport() {
    }

    static String table(List<Figure> figures) {
        StringBuilder text = new StringBuilder();
        text.append("| measure | fenced | baseline | unit | ratio | goal | met |\n|---|---:|---:|---|---:|---|---|\n");
        for (Figure figure : figures) {
            Boolean met = figure.met();
            text.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s |%n", figure.measure(),
                    number(figure.fenced()),
                    number(figure.baseline()), figure.unit(),
                    Double.isNaN(figure.ratio()) ? "-" : String.format(Locale.ROOT, "%.2f", figure.ratio()),
                    figure.goal().isEmpty() ? "-" : figure.goal(),
                    met == null ? "-" : met ? "yes" : "NO"));
        }
        return text.toString();
    }

    private static String number(double value) {
        if (Double.isNaN(value)) {
            return "-";
        }
        return value >= 100 ? String.format(Locale.ROOT, "%,.0f", value) : String.format(Locale.ROOT, "%.2f", value);
    }

    /**
     * The whole Markdown of one run; {@code failure} non-null marks an incomplete run.
     */
    static String markdown(ZonedDateTime now, String table, List<String> log, String failure, String reproduce) {
        long memory = ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getTotalMemorySize();
        return "# fenced-writes bench, " + now.format(DateTimeFormatter.ISO_LOCAL_DATE_TIME).substring(0, 16) + " UTC"
                + (reproduce.equals("./fence bench") ? "" : " (" + reproduce.substring("./fence bench ".length()) + ")")
                + "\n\n"
                + (failure != null ? "**Incomplete: the run stopped with: " + failure + "**\n\n" : "")
                + table + "\n"
                + "Ratios are fenced / baseline (for latencies, lower is better); a goal is met when the ratio as printed "
                + "meets it. Runs vary: on a shared or small machine by 10 % or more, and the exactly_once_v2 pass-through "
                + "by up to a factor of two between its two runs; the log below shows each run.\n\n"
                + "Machine: " + Runtime.getRuntime().availableProcessors() + " cores, " + memory / (1L << 30) + " GiB, "
                + System.getProperty("os.name") + " " + System.getProperty("os.arch") + "; Java "
                + System.getProperty("java.version") + "; "
                + versions() + "\n\nReproduce: `" + reproduce + "`.\n\n" + NOTES
                + "\nThe run, as it went (each throughput run's own figure):\n\n```\n" + String.join("\n", log) + "\n```\n";
    }

    private static String versions() {
        String etcd;
        try {
            Process process = new ProcessBuilder(EtcdNode.binary().toString(), "--version").redirectErrorStream(true).start();
            etcd = new String(process.getInputStream().readAllBytes()).lines().findFirst().orElse("etcd ?")
                    .replace("etcd Version: ", "etcd ");
            process.waitFor();
        } catch (IOException | RuntimeException e) {
            etcd = "etcd ?";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            etcd = "etcd ?";
        }
        return etcd + "; Kafka " + AppInfoParser.getVersion()
                + "; PostgreSQL, jetcd and JMH at the versions the parent pom pins";
    }
}
