package dev.fencedwrites.bench;

import com.sun.management.OperatingSystemMXBean;
import dev.fencedwrites.services.EtcdNode;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.apache.kafka.common.utils.AppInfoParser;

/** The bench's Markdown: the table of figures, the machine, the versions, how each figure is taken, and the run's log. */
final class BenchReport {
    /**
     * How each part's figures are taken, below the table in the Markdown: only the parts that ran are explained (a new
     * user found a one-row run's file explaining seven parts it did not run).
     *
     * @param parts the parts that ran (re-routing left out when it was skipped)
     * @param runs  runs of each topology per throughput row
     * @param quick whether the run was {@code --quick} (smaller inputs)
     * @param eos   whether exactly_once_v2 was among the guarantees (the fence state is measured after its run)
     */
    static String notes(Set<BenchMain.Part> parts, int runs, boolean quick, boolean eos) {
        String writes = quick ? "20,000" : "1,000,000";
        String keys = quick ? "1k" : "10k";
        List<String> lines = new ArrayList<>();
        lines.add("How the figures are taken:");
        if (parts.contains(BenchMain.Part.enforcer)) {
            lines.add(enforcerNote(runs, quick));
        }
        lines.addAll(stateNotes(parts, eos));
        if (parts.contains(BenchMain.Part.scale)) {
            lines.add("- Scale: the enforcer over " + writes + " in-order writes on an input of 6 partitions ("
                    + keys + " keys, 100 B values) as one instance with one stream thread, one instance with two, and two "
                    + "instances (one application.id, each its own state directory, in this JVM) with one each; records/s of "
                    + "the group, one run each. On 2 cores that also run the broker, the rows show what a second thread or "
                    + "instance wins on busy cores, not how far the enforcer scales.");
        }
        if (parts.contains(BenchMain.Part.stale)) {
            lines.add("- Stale mix: the enforcer over " + writes + " writes (" + keys + " keys, 100 B values) all in "
                    + "order, "
                    + "against the same writes with every fifth write of each key stale (20 %, each rejected STALE_TOKEN with "
                    + "a copy on the rejected topic); one run each; the run fails unless exactly the stale writes were "
                    + "rejected.");
        }
        if (parts.contains(BenchMain.Part.latency)) {
            lines.add("- End-to-end latency: records produced at a fixed rate while the topology runs; the time each is read "
                    + "(read_committed) from the accepted (or pass-through output) topic minus its produce timestamp; the "
                    + "first second is left out.");
        }
        if (parts.contains(BenchMain.Part.rerouting)) {
            lines.add("- Re-routing: the enforcer over " + (quick ? "20,000 writes (1k" : "200,000 writes (10k")
                    + " keys, 100 B values) from a writer that "
                    + "partitions by CRC32 (librdkafka's default: about two thirds of them land on another partition than "
                    + "murmur2 assigns and go through the repartition topic) against the same writes partitioned by murmur2; "
                    + "one run each, under each guarantee.");
        }
        if (parts.contains(BenchMain.Part.acquisition)) {
            lines.add("- Acquisition: FencingLeaseClient.acquire (lease grant + lock) against one etcd put, interleaved; the "
                    + "release is not timed. Contention: 4 clients each acquiring and releasing one resource in a loop, "
                    + "against one client doing the same alone.");
        }
        if (parts.contains(BenchMain.Part.verification)) {
            lines.add(VERIFICATION_NOTE);
        }
        if (parts.contains(BenchMain.Part.sink)) {
            lines.add("- Sink: the same batches written with the guarded upsert and with a plain upsert, in the order plain, "
                    + "guarded, guarded, plain.");
        }
        if (parts.contains(BenchMain.Part.churn)) {
            lines.add(churnNote(quick));
        }
        if (parts.contains(BenchMain.Part.rule)) {
            lines.add("- Decision rule (JMH): per record, FenceStamp.parse over the four headers FencedProducer writes, "
                    + "FenceRule.decide against a map-held fence and FenceRule.raise into the map, against reading the token "
                    + "header and storing a constant fence; ns per record.");
        }
        return String.join("\n", lines) + "\n";
    }

    /** The fence state's, the cost tables' and the state decomposition's notes, as far as their parts ran. */
    private static List<String> stateNotes(Set<BenchMain.Part> parts, boolean eos) {
        List<String> lines = new ArrayList<>();
        if (parts.contains(BenchMain.Part.enforcer) && eos) {
            lines.add(FENCE_STATE_NOTE);
        }
        if (parts.contains(BenchMain.Part.enforcer) || parts.contains(BenchMain.Part.state)) {
            lines.add(COST_NOTE);
        }
        if (parts.contains(BenchMain.Part.state)) {
            lines.add(STATE_NOTE);
        }
        return lines;
    }

    private static String churnNote(boolean quick) {
        return "- Churn: the enforcer process as shipped (token verification on, exactly_once_v2, its default 3 "
                + "partitions) runs while one writer takes each key's lock in etcd, 128 locks per transaction under the "
                + "current lease (a new lease every second, each revoked " + (quick ? "5" : "20") + " s after it was "
                + "granted), and writes each key once with the transaction's revision as its token; the writer stays "
                + "at most " + (quick ? "10,000" : "20,000") + " records ahead of the enforcer's committed offsets, so each run "
                + "goes at what its enforcer sustains, and etcd's history is compacted a minute behind. The same "
                + (quick ? "200,000" : "10,000,000") + " writes go through an enforcer with fence expiry off, then one "
                + "with it on (fence.expiry.interval.ms " + (quick ? "2000" : "5000") + "). Every 5 s: RocksDB's "
                + "estimate of the fence store's keys and its SST and memtable bytes (Kafka Streams' state metrics on "
                + "the enforcer's /metrics), etcd's count of live locks, fences expired, and the enforcer process's "
                + "CPU time; every sample is in the CSV of this file's name ending -churn.csv. A live lock's footprint is the "
                + "run without expiry's store bytes per key at its end; the ratios leave out the first lease hold and "
                + "two intervals, before which nothing can expire. The run fails unless every write was accepted.";
    }

    private static String enforcerNote(int runs, boolean quick) {
        return "- Enforcer throughput: the enforcer's topology, a pass-through topology (input to output, no state) and the "
                + "minimal stateful baseline (per record one read and one write of an 8-byte number per key "
                + "in a store built as the fence store is, RocksDB with the record cache (none when a --streams-setting "
                + "sizes it 0, as for every topology) and a changelog, every record forwarded) read the same input topic "
                + "from the beginning, with the enforcer's Kafka Streams settings "
                + "(one stream thread, 3 partitions, the guarantee's default commit interval: 100 ms for "
                + "exactly_once_v2, 30 s for at_least_once). Records/s from the first processed record (Kafka Streams' "
                + "process-total) to the end of close() after the last, which flushes the fence store's cache to "
                + "RocksDB and the changelog and commits, after a warm-up run of each under each guarantee; the "
                + "enforcer must have accepted every record. "
                + (runs == 1
                        ? "Each topology ran once (" + (quick ? "--quick" : "--runs 1") + "), so each ratio is of two single "
                                + "runs. "
                        : "Each topology ran " + runs + " times, in rounds whose order rotates (each topology runs first, "
                                + "second and third in turn), and the figure is the median, with the spread (half the "
                                + "range, as a percentage of the median) of each side; the progress lines on stderr show "
                                + "each run. ")
                + "Every write is in order, so the enforcer accepts all of them: the figure is "
                + "the cost of the check and of the fence state. The ceilings: the same input produced by a plain "
                + "producer (acks=all, linger.ms 20, batch.size 256 KB) and read by a plain consumer (read_committed, "
                + "no group), records/s, as kafka-producer-perf-test and kafka-consumer-perf-test measure them.";
    }

    private static final String FENCE_STATE_NOTE = "- Fence state: after the enforcer's exactly_once_v2 run at "
            + "the most keys, the changelog's log segments on the broker (not compacted yet), then a new instance "
            + "restores the whole changelog into an empty state directory (timed from the first partition's restore "
            + "start to the last one's end) and its store's RocksDB files are measured after close; sizes divided by "
            + "the key count.";

    private static final String COST_NOTE = "- Where the time goes (the cost tables): over the same span as each run's rate, "
            + "this JVM's CPU time (every thread: the stream thread, the clients' network threads, RocksDB's background "
            + "threads, the JIT and the garbage collector) and, of it, the stream thread's until the last record; the garbage "
            + "collectors' collection time; the broker process's CPU time; all per record, in us. The stream thread's "
            + "process-ratio, commit-ratio and poll-ratio (Kafka Streams' thread metrics, over a 1 s metrics window, sampled "
            + "each second and averaged; '-' when a run was shorter than a second) and the producers' txn-commit-time-ns-total "
            + "per record until the last record (the commit inside close() is in the CPU times, not in this one). The bench "
            + "JVM and the broker share the machine's cores unless the CPUs line says otherwise.";

    private static final String STATE_NOTE = "- State cost decomposed: the stateful baseline with its store built each way: "
            + "RocksDB as Kafka Streams builds it, RocksDB tuned for a store whose reads mostly miss (bloom filters on every "
            + "level and on the memtable's whole keys), and a hash map on the heap restored from the changelog on every "
            + "start; each with the record cache on and off and the changelog on and off; beside the pass-through and the "
            + "enforcer; over the same input (the throughput rows' at the most keys and the first value size), each run in "
            + "rounds whose order rotates, after a warm-up of each topology over the whole input. A part's cost is the "
            + "difference of two medians in us per record; one smaller than the two sides' spreads (half the range of their "
            + "runs) together is marked within the spread.";

    private static final String VERIFICATION_NOTE = "- Token verification: the enforcer with token verification "
            + "on (etcd.endpoints set, the enforcer's defaults: the index of lock holders and reading ahead) and off over "
            + "the same input, exactly_once_v2, after one warm-up run; three rounds of off, started after and running in "
            + "rotating order, each figure the median of three. Every token is real: before the timed part each key's lock is "
            + "taken in etcd with one transaction (put the lock key under a lease, read the oldest key under the lock; the "
            + "revision is the token), all keys under one long lease. Writes under long leases: each key's token is "
            + "verified once, the later writes at its fence are compared with the lease the fence store keeps. One "
            + "acquisition per key: one write per key, so every record's token is verified, from the index or with an etcd "
            + "range read. Two kinds of verifying run: a verifier started after the locks were taken (an enforcer catching "
            + "up on a backlog: its index starts at etcd's revision then, so each token is read from etcd, ahead), and a "
            + "verifier started before them (an enforcer running while the writers acquire: its index answers each "
            + "acquisition; the goal applies to it); the one-acquisition shape also runs a verifier answering from memory "
            + "(the ceiling); the latency runs' verifier also runs while their locks are taken. etcd reads/s: the "
            + "verifier's fence_enforcer_token_verification_etcd_reads_total over the same timed part. The run fails "
            + "unless every record was accepted and each key's token was verified exactly once.";

    private BenchReport() {
    }

    /**
     * The table; a {@code quick} run judges no goal (its figures are not comparable to the full run's), so its
     * {@code met} column is {@code -}.
     */
    static String table(List<Figure> figures, boolean quick) {
        StringBuilder text = new StringBuilder();
        text.append("| measure | fenced | baseline | unit | ratio | goal | met |\n|---|---:|---:|---|---:|---|---|\n");
        for (Figure figure : figures) {
            Boolean met = figure.met();
            text.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s |%n", figure.measure(),
                    number(figure.fenced()),
                    number(figure.baseline()), figure.unit(),
                    Double.isNaN(figure.ratio()) ? "-" : String.format(Locale.ROOT, "%.2f", figure.ratio()),
                    figure.goal().isEmpty() ? "-" : figure.goal(), verdict(figure, met, quick)));
        }
        return text.toString();
    }

    /** The met column: yes, NO or -, and whether the claimed difference lies within the row's spread. */
    static String verdict(Figure figure, Boolean met, boolean quick) {
        String verdict = met == null || quick ? "-" : met ? "yes" : "NO";
        if (!figure.withinSpread() || quick) {
            return verdict;
        }
        return verdict + (figure.goal().isEmpty() ? " (1.00 within the spread)" : " (within the spread)");
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
    static String markdown(ZonedDateTime now, String table, List<String> log, String failure, String reproduce,
            String notes, boolean quick) {
        long memory = ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getTotalMemorySize();
        return "# fenced-writes bench, " + now.format(DateTimeFormatter.ISO_LOCAL_DATE_TIME).substring(0, 16) + " UTC"
                + (reproduce.equals("./fence bench") ? "" : " (" + reproduce.substring("./fence bench ".length()) + ")")
                + "\n\n"
                + (failure != null ? "**Incomplete: the run stopped with: " + failure + "**\n\n" : "")
                + table + "\n"
                + "Ratios are fenced / baseline (for latencies, lower is better); a goal is met when the ratio as printed "
                + "meets it" + (quick
                        ? "; a --quick run judges no goal (met: -), its figures being too short to compare "
                                + "with the full run's"
                        : "")
                + ". Runs vary: on a shared or small machine by 10 % or more, and the exactly_once_v2 pass-through "
                + "by up to a factor of two between its two runs; the log below shows each run. A row of medians whose "
                + "ratio lies within its spread of the goal (of 1 when it has none) says so: the two sides' spreads added, "
                + "as a fraction of the ratio, are at least the distance, so another run could decide it the other way.\n\n"
                + "Machine: " + Runtime.getRuntime().availableProcessors() + " cores, " + memory / (1L << 30) + " GiB, "
                + System.getProperty("os.name") + " " + System.getProperty("os.arch") + "; Java "
                + System.getProperty("java.version") + "; "
                + versions() + "\n\nReproduce: `" + reproduce + "`.\n\n" + notes
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
