package dev.fencedwrites.bench;

import dev.fencedwrites.enforcer.FenceEnforcerConfig;
import dev.fencedwrites.services.ChildProcess;
import dev.fencedwrites.services.EtcdNode;
import dev.fencedwrites.services.KafkaBroker;
import dev.fencedwrites.services.Log4j2Config;
import dev.fencedwrites.services.Service;
import io.etcd.jetcd.Client;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.apache.kafka.streams.StreamsConfig;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code ./fence bench}: each cost of fencing measured beside its unfenced baseline in the same run,
 * printed as one table and written to {@code bench/results/} as Markdown.
 */
@Command(name = "fence bench", usageHelpWidth = 130, mixinStandardHelpOptions = true, sortOptions = false, description = {
        "Measures what fencing costs, each figure beside its unfenced baseline in the same run on this machine, and prints",
        "one table (figure, baseline, ratio, goal). Also writes it as Markdown with the machine's cores, memory and versions.",
        "Measured: token acquisition (lease grant + lock) against a raw etcd put, p50 and p99, and acquisitions/s of one",
        "resource under contention; the sink's guarded upsert against the plain upsert, 0 %% and 20 %% stale; the enforcer's",
        "throughput against a minimal stateful topology and a pass-through (100 B and 1 KB values, 10k and 1M keys,",
        "exactly_once_v2 and at_least_once; medians of three runs), beside a plain producer's and consumer's rates, with",
        "where each run's time went (CPU per record of this JVM, its stream thread, GC and the broker); the state cost taken",
        "apart (the stateful baseline's store as RocksDB, RocksDB tuned for misses and a hash map, the record cache and the",
        "changelog each on and off, in us per record); the enforcer with 2 stream threads and as 2 instances against 1",
        "(6 partitions); 20 %% stale writes against none;",
        "end-to-end latency p50/p99; the enforcer over a CRC32-partitioning writer's records (librdkafka's",
        "default: most re-routed through the repartition topic) against a murmur2 writer's; the fence state's",
        "bytes per key at 1M keys (state store and changelog) and the time to restore it from the changelog;",
        "the enforcer with token verification against etcd on vs off (writes under long leases, one acquisition per key) and",
        "the etcd reads/s it adds; the decision rule's per-record work (JMH) against a pass-through's.",
        "Starts its own etcd, Kafka broker and PostgreSQL on loopback; needs about 4 GB of free disk for the full run.",
        ""},
        footer = {"", "Examples:",
                "  ./fence bench --quick     a reduced run (1k and 20k keys, short runs; about five minutes): checks that "
                        + "everything",
                "                            runs; its figures are not comparable to the full run's",
                "  ./fence bench             the full run (about 50 minutes on 2 cores)",
                "  ./fence bench --only enforcer --keys 1000000 --value-bytes 100 --guarantee exactly_once_v2 --runs 1 \\",
                "      --enforcer-setting partition.mismatch.policy=reject",
                "                            one throughput row, with one enforcer setting tried; written as a -partial run",
                "",
                "Figures only: nothing here passes or fails on time. Exit status: 0 when every figure was measured "
                        + "(a goal missed",
                "is reported, not an error), 1 with a one-line reason when a measurement could not run (the figures measured",
                "until then are written to bench/results/ as an incomplete run), 2 for a wrong option."})
public final class BenchMain implements Callable<Integer> {
    @Option(names = "--quick", description = "A reduced run: fewer operations and shorter JMH iterations, same figures.")
    boolean quick;
    @Option(names = "--only", split = ",", paramLabel = "PART", description = "Run only these parts, comma-separated: "
            + "${COMPLETION-CANDIDATES} (default: all but churn; enforcer is the throughput rows, state the stateful baseline "
            + "with its store built each way (RocksDB, RocksDB tuned for misses, a hash map; cache and changelog on and off) "
            + "at the most keys and the first value size, scale the 1 and 2 threads and instances on 6 partitions, stale the "
            + "20 %% stale mix, churn 10M keys written once each under short leases with fence expiry off and on, its "
            + "samples also written as a CSV). The Markdown then holds only their figures, written as a -partial run.")
    EnumSet<Part> only = EnumSet.copyOf(DEFAULT_PARTS);
    @Option(names = "--out", paramLabel = "DIR", defaultValue = "bench/results", description = "Where the Markdown goes "
            + "(default: ${DEFAULT-VALUE}).")
    Path out;
    @Option(names = "--pin-cpus", description = "While a Kafka broker runs, pin it to the lower half of the CPUs this process "
            + "may run on and this JVM to the rest (Linux taskset; at least 2 CPUs; on 2 cores one each), so that the broker's "
            + "threads and the topology's do not take each other's core; both start on every CPU and are moved once the broker "
            + "is up. Stated in the report, written as a -partial run. Default: every process shares every core.")
    boolean pinCpus;
    @Mixin
    ThroughputOptions rows = new ThroughputOptions();
    /** The CPU split of {@link #pinCpus}, or {@code null}. */
    private CpuPinning pinning;
    @Spec
    CommandSpec spec;
    /** Markdown sections after the table: the throughput rows' costs, the state cost decomposed. */
    private final List<String> sections = new ArrayList<>();
    /** The churn part's samples as CSV lines, written beside the Markdown; empty when it did not run. */
    private List<String> churnSamples = List.of();

    public static void main(String[] args) {
        CommandLine line = new CommandLine(new BenchMain());
        // A wrong option: one line and a pointer to --help, not the whole usage.
        line.setParameterExceptionHandler((e, arguments) -> {
            e.getCommandLine().getErr().println("fence bench: " + e.getMessage() + " (see ./fence bench --help)");
            return 2;
        });
        System.exit(line.execute(args));
    }

    @Override
    public Integer call() {
        PrintWriter err = spec.commandLine().getErr();
        PrintWriter stdout = spec.commandLine().getOut();
        List<String> log = new ArrayList<>();
        List<Figure> figures = new ArrayList<>();
        try {
            rows.validate(quick);
            pinning = pinCpus ? CpuPinning.split() : null;
        } catch (IllegalArgumentException | IOException e) {
            err.println("fence bench: " + e.getMessage() + " (see ./fence bench --help)");
            err.flush();
            return 2;
        }
        try {
            measureAll(figures, line -> {
                log.add(line);
                err.println("[bench] " + line);
                err.flush();
            });
            String table = tables(figures);
            stdout.print(table);
            stdout.flush();
            Path written = write(table, log, null);
            err.println("[bench] written to " + written);
            err.flush();
            return 0;
        } catch (Exception e) {
            err.println("fence bench: " + e.getMessage());
            if (!figures.isEmpty()) {
                try {
                    err.println(
                            "fence bench: the figures measured until then are in "
                                    + write(tables(figures), log, e.getMessage()));
                } catch (IOException writeError) {
                    err.println("fence bench: could not write them: " + writeError.getMessage());
                }
            }
            err.flush();
            return 1;
        }
    }

    /** The table of figures, then each non-empty section. */
    private String tables(List<Figure> figures) {
        StringBuilder text = new StringBuilder(BenchReport.table(figures, quick));
        sections.stream().filter(section -> !section.isEmpty()).forEach(section -> text.append('\n').append(section));
        return text.toString();
    }

    /** The parts of the suite, in the order they run. */
    enum Part {
        acquisition, sink, enforcer, state, scale, stale, latency, rerouting, verification, rule, churn
    }

    /** What a run without {@code --only} measures: every part but churn, which takes about 30 minutes of its own. */
    static final Set<Part> DEFAULT_PARTS = Collections.unmodifiableSet(EnumSet.complementOf(EnumSet.of(Part.churn)));

    /** Measures the parts in {@link #only} into {@code figures}, which keeps what was measured when a later part fails. */
    void measureAll(List<Figure> figures, Consumer<String> progress) throws Exception {
        Path dir = Files.createTempDirectory("fence-bench");
        // On Ctrl-C too: stop the etcd, Kafka and PostgreSQL child processes, then remove their
        // files (the full run leaves gigabytes of Kafka logs here).
        Thread cleanUp = new Thread(() -> {
            ChildProcess.terminateAll(ProcessHandle.current().descendants().toList(), Duration.ofSeconds(20));
            try {
                deleteRecursively(dir);
            } catch (IOException | RuntimeException e) {
                System.err.println("[bench] could not remove " + dir + ": " + e);
            }
        }, "fence-bench-clean-up");
        Runtime.getRuntime().addShutdownHook(cleanUp);
        try {
            if (only.contains(Part.acquisition)) {
                try (Service etcd = EtcdNode.start(dir.resolve("etcd"))) {
                    figures.addAll(AcquisitionBench.measure(etcd.address(), quick ? 100 : 1000,
                            Duration.ofSeconds(quick ? 5 : 30), 4, progress));
                }
            }
            if (only.contains(Part.sink)) {
                figures.addAll(sink(progress));
            }
            if (!Collections.disjoint(only, EnumSet.of(Part.enforcer, Part.state, Part.scale, Part.stale, Part.latency,
                    Part.rerouting))) {
                figures.addAll(enforcer(dir, progress));
            }
            if (only.contains(Part.verification)) {
                progress.accept("verification: starting etcd and a local Kafka broker");
                try (Service etcd = EtcdNode.start(dir.resolve("etcd-verification"));
                        Service kafka = KafkaBroker.start(dir.resolve("kafka-verification"),
                                Log4j2Config.write(dir.resolve("log4j2.properties"), "WARN"));
                        AutoCloseable pinned = pin(kafka, progress);
                        Client client = Client.builder().endpoints(etcd.address()).build()) {
                    EnforcerBench enforcer = new EnforcerBench(kafka, dir.resolve("streams-state"), progress,
                            etcd.address(), rows.enforcerSettings, rows.streamsSettings);
                    VerificationBench verification = new VerificationBench(enforcer, client, etcd.address(), progress);
                    figures.addAll(quick
                            ? verification.measure(1_000, 20, 5_000, 500, Duration.ofSeconds(4))
                            : verification.measure(30_000, 100, 50_000, 1_000, Duration.ofSeconds(20)));
                }
            }
            if (only.contains(Part.churn)) {
                figures.addAll(churn(dir, progress));
            }
            if (only.contains(Part.rule)) {
                Path jmhLog = Files.createTempFile("fence-bench-jmh", ".log");
                progress.accept("JMH: the decision rule's per-record work (JMH's report: " + jmhLog + ")");
                figures.add(jmh(jmhLog));
            }
        } finally {
            Runtime.getRuntime().removeShutdownHook(cleanUp);
            deleteRecursively(dir);
        }
    }

    /** The enforcer's throughput rows, stale mix, latency and re-routing, as {@link #only} asks, on one local broker. */
    private List<Figure> enforcer(Path dir, Consumer<String> progress) throws Exception {
        List<Figure> figures = new ArrayList<>();
        progress.accept("Kafka: starting a local broker");
        try (Service kafka = KafkaBroker.start(dir.resolve("kafka"), Log4j2Config.write(dir.resolve("log4j2.properties"),
                "WARN")); AutoCloseable pinned = pin(kafka, progress)) {
            EnforcerBench enforcer = new EnforcerBench(kafka, dir.resolve("streams-state"), progress, null,
                    rows.enforcerSettings, rows.streamsSettings);
            if (only.contains(Part.enforcer)) {
                figures.addAll(enforcer.throughput(rows.valueBytes(), rows.keys(quick), quick ? 20_000 : 1_000_000,
                        rows.runs(quick), rows.guarantees()));
            }
            sections.add(enforcer.costTable().isEmpty()
                    ? ""
                    : "Where each throughput row's time went (per record, medians "
                            + "of its runs):\n\n" + enforcer.costTable());
            if (only.contains(Part.state)) {
                int keys = Arrays.stream(rows.keys(quick)).max().orElseThrow();
                sections.add(enforcer.stateCost(Math.max(keys, quick ? 20_000 : 1_000_000), keys, rows.valueBytes()[0],
                        rows.runs(quick), rows.guarantees()));
            }
            if (only.contains(Part.scale)) {
                figures.addAll(quick
                        ? enforcer.scale(20_000, 1_000, 100, rows.guarantees())
                        : enforcer.scale(1_000_000, 10_000, 100, rows.guarantees()));
            }
            if (only.contains(Part.stale)) {
                figures.addAll(quick
                        ? enforcer.staleMix(20_000, 1_000, 100, rows.guarantees())
                        : enforcer.staleMix(1_000_000, 10_000, 100, rows.guarantees()));
            }
            if (only.contains(Part.latency)) {
                figures.addAll(
                        quick ? enforcer.latency(500, Duration.ofSeconds(4)) : enforcer.latency(1000, Duration.ofSeconds(20)));
            }
            if (only.contains(Part.rerouting) && reroutingSkipped()) {
                progress.accept("rerouting: skipped: with partition.mismatch.policy=reject the enforcer rejects what it would "
                        + "re-route");
            } else if (only.contains(Part.rerouting)) {
                figures.addAll(quick ? enforcer.rerouting(20_000, 1_000, 100) : enforcer.rerouting(200_000, 10_000, 100));
            }
        }
        return figures;
    }

    /** With {@code --pin-cpus}, {@code kafka} and this JVM on their own CPUs until the answer is closed; else nothing. */
    private AutoCloseable pin(Service kafka, Consumer<String> progress) throws Exception {
        if (pinning == null) {
            return () -> {
            };
        }
        AutoCloseable pinned = pinning.pin(ProcessHandle.of(kafka.process().pid()).orElseThrow());
        progress.accept("CPUs: the broker on " + pinning.broker() + ", this JVM on " + pinning.bench() + " (--pin-cpus)");
        return pinned;
    }

    /** Key churn with fence expiry off and on ({@link ChurnBench}), on its own etcd and broker; keeps the samples. */
    private List<Figure> churn(Path dir, Consumer<String> progress) throws Exception {
        progress.accept("churn: starting etcd and a local Kafka broker");
        Path log4j2 = Log4j2Config.write(dir.resolve("log4j2-churn.properties"), "WARN");
        try (Service etcd = EtcdNode.start(dir.resolve("etcd-churn"));
                Service kafka = KafkaBroker.start(dir.resolve("kafka-churn"), log4j2);
                AutoCloseable pinned = pin(kafka, progress);
                Client client = Client.builder().endpoints(etcd.address()).build()) {
            ChurnBench churn = new ChurnBench(kafka.address(), etcd.address(), client, dir, log4j2, progress);
            ChurnBench.Result result = churn.measure(quick
                    ? new ChurnBench.Shape(200_000, Duration.ofSeconds(5), Duration.ofSeconds(2), 10_000)
                    : new ChurnBench.Shape(10_000_000, Duration.ofSeconds(20), Duration.ofSeconds(5), 20_000));
            churnSamples = result.csv();
            return result.figures();
        }
    }

    /** The sink's guarded upsert against the plain one, 0 % and 20 % stale, on embedded PostgreSQL. */
    private List<Figure> sink(Consumer<String> progress) throws Exception {
        List<Figure> figures = new ArrayList<>();
        int rows = quick ? 20_000 : 200_000;
        int keys = quick ? 2_000 : 10_000;
        progress.accept("sink: " + rows + " rows over " + keys
                + " keys, batches of 500, guarded and plain, on embedded PostgreSQL");
        for (GuardedUpsertBenchmark.Result result : GuardedUpsertBenchmark.measure(rows, keys, 500, new int[]{0, 20})) {
            figures.add(new Figure(
                    String.format(Locale.ROOT, "sink guarded upsert vs plain upsert, %d %% stale", result.stalePercent()),
                    result.guardedRowsPerSecond(), result.plainRowsPerSecond(), "rows/s", ">= 0.9", true));
        }
        return figures;
    }

    /** The command line that measures the same figures again. */
    private String reproduce() {
        List<String> arguments = new ArrayList<>(List.of("./fence bench"));
        if (quick) {
            arguments.add("--quick");
        }
        if (!only.equals(DEFAULT_PARTS)) {
            arguments.add("--only " + String.join(",", only.stream().map(Part::name).toList()));
        }
        if (pinCpus) {
            arguments.add("--pin-cpus");
        }
        arguments.addAll(rows.arguments());
        return String.join(" ", arguments);
    }

    /** Removes the run's etcd, Kafka and Kafka Streams files (the full run leaves gigabytes). */
    private static void deleteRecursively(Path dir) throws IOException {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        }
    }

    private Figure jmh(Path log) throws Exception {
        Options options = new OptionsBuilder().include(DecisionRuleBenchmark.class.getName())
                .output(log.toString()) // JMH's own report, off the table's stdout
                .forks(quick ? 0 : 1)
                .warmupIterations(quick ? 1 : 3).warmupTime(TimeValue.seconds(1))
                .measurementIterations(quick ? 3 : 5).measurementTime(TimeValue.seconds(quick ? 1 : 2))
                .timeUnit(TimeUnit.NANOSECONDS).shouldFailOnError(true)
                .build();
        double decide = Double.NaN;
        double passThrough = Double.NaN;
        for (RunResult result : new Runner(options).run()) {
            String method = result.getParams().getBenchmark();
            double score = result.getPrimaryResult().getScore();
            if (method.endsWith(".parseDecideRaise")) {
                decide = score;
            } else if (method.endsWith(".readHeadersAndStore")) {
                passThrough = score;
            }
        }
        if (Double.isNaN(decide) || Double.isNaN(passThrough)) {
            throw new IllegalStateException("JMH did not report both DecisionRuleBenchmark methods");
        }
        return new Figure("decision rule per record (JMH): parse + decide + raise vs header read + store", decide, passThrough,
                "ns", "", false);
    }

    /** How the parts that ran were measured: re-routing is left out when {@link #enforcer} skipped it. */
    private String notes() {
        EnumSet<Part> ran = EnumSet.copyOf(only);
        if (reroutingSkipped()) {
            ran.remove(Part.rerouting);
        }
        return BenchReport.notes(ran, rows.runs(quick), quick, rows.guarantees().contains(StreamsConfig.EXACTLY_ONCE_V2))
                + "- CPUs: " + (pinning == null
                        ? "the broker, this JVM and every other service share every core."
                        : pinning.describe() + ".")
                + "\n";
    }

    /** Whether the re-routing part is skipped: partition.mismatch.policy=reject rejects what it would re-route. */
    private boolean reroutingSkipped() {
        return "reject".equalsIgnoreCase(
                rows.enforcerSettings.getOrDefault(FenceEnforcerConfig.PARTITION_MISMATCH_POLICY, "reroute").strip());
    }

    /**
     * Writes the Markdown; {@code failure} non-null marks an incomplete run, which is written
     * under its own name ({@code -incomplete}) and never as {@code latest}.
     */
    private Path write(String table, List<String> log, String failure) throws IOException {
        Files.createDirectories(out);
        ZonedDateTime now = ZonedDateTime.now(ZoneOffset.UTC);
        // Only the full run of every part is latest.md; a chosen part, row or setting is kept under its own name.
        boolean partial = rows.custom() || !only.equals(DEFAULT_PARTS) || pinCpus;
        Path file = out.resolve(now.format(DateTimeFormatter.ofPattern("yyyy-MM-dd-HHmm")) + (quick ? "-quick" : "")
                + (partial ? "-partial" : "") + (failure != null ? "-incomplete" : "") + ".md");
        String markdown = BenchReport.markdown(now, table, log, failure, reproduce(), notes(), quick);
        Files.writeString(file, markdown);
        if (!churnSamples.isEmpty()) {
            Files.write(out.resolve(file.getFileName().toString().replaceAll("\\.md$", "-churn.csv")), churnSamples);
        }
        if (failure == null && !partial) {
            Files.writeString(out.resolve("latest" + (quick ? "-quick" : "") + ".md"), markdown);
        }
        return file;
    }
}
