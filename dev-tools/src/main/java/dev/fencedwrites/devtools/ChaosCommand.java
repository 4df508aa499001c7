package dev.fencedwrites.devtools;

import dev.fencedwrites.cli.BuildVersion;
import dev.fencedwrites.cli.DurationConverter;
import dev.fencedwrites.cli.EnvFile;
import dev.fencedwrites.cli.FenceMain;
import dev.fencedwrites.cli.StackOptions;
import dev.fencedwrites.cli.VerifyCommand;
import dev.fencedwrites.devtools.chaos.ChaosReport;
import dev.fencedwrites.devtools.chaos.ChaosRun;
import dev.fencedwrites.devtools.chaos.Fault;
import dev.fencedwrites.devtools.chaos.WriterFleet;
import dev.fencedwrites.devtools.chaos.WriterLedger;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code fence chaos}: a Jepsen-style fault run against a stack of its own or a running one, checked by {@code fence verify}.
 */
@Command(name = "chaos", header = "Run real writers and a nemesis against a stack, then check the history with verify.",
        usageHelpWidth = 130, mixinStandardHelpOptions = true, versionProvider = BuildVersion.class, sortOptions = false,
        description = {
                "Starts the stack ./fence up starts (with --cluster, ./fence up --cluster's), then WORKERS writer processes",
                "built on producer-lib that contend for KEYS keys' etcd locks with lease TTL; now and then a writer's process",
                "is stopped (SIGSTOP) after producer-lib's lease check and before its write leaves the process, until another",
                "writer has taken the key over, so real stale writes reach the broker. Meanwhile a fault scheduler, on a",
                "schedule drawn from --seed, injects the --faults:",
                "  worker-pause    SIGSTOP of a writer process past its lease TTL",
                "  worker-kill     SIGKILL of a writer process (started again)",
                "  enforcer-kill   SIGKILL of the enforcer, then a restart",
                "  enforcer-pause  SIGSTOP of the enforcer for 2-8 s",
                "  connect-kill    SIGKILL of the Connect worker, then a restart",
                "  etcd-pause      SIGSTOP of etcd (with --cluster, of one member) for 1-5 s",
                "  broker-kill     SIGKILL of a Kafka broker, then a restart (--cluster only)",
                "  clock-jump      a jump of a skewed writer's wall clock (libfaketime, from Debian's faketime)",
                "  inject          forged, borrowed, stale and duplicate records sent with kcat",
                "and, on a schedule of their own that overlaps the rest, the network faults (iptables rules on each process's",
                "group id; they need root, and a stack chaos starts; without them, one line says they were skipped):",
                "  writer-etcd-cut     a writer cut from etcd past its lease TTL, still reaching Kafka",
                "  enforcer-etcd-cut   an enforcer cut from etcd for 2-8 s",
                "  enforcer-kafka-cut  an enforcer cut from the brokers for 3-12 s",
                "  connect-kafka-cut   a Connect worker cut from the brokers for 5-12 s, still reaching PostgreSQL",
                "  etcd-member-cut     an etcd member (the leader half the time) cut from the others for 2-8 s (--cluster only)",
                "  broker-cut          a broker cut from the other brokers for 3-10 s (--cluster only)",
                "  slow-link           a writer's, enforcer's or Connect worker's link to Kafka or etcd losing 1 in 4 packets",
                "When the time is up the writers stop, the enforcer and the sink catch up, and verify's checks run on the",
                "topics and the table. The report (report.txt, report.html: a timeline per key, verify.json) goes to --dir.",
                ""},
        footer = {"", "Examples:",
                "  ./fence chaos --duration 2m",
                "  ./fence chaos --duration 30m --workers 6 --stall-chance 0.05 --seed 42",
                "  ./fence chaos --faults enforcer-kill,worker-pause --seed 7",
                "  ./fence chaos --cluster --duration 10m        # the production shape, broker kills included",
                "  ./fence chaos --stack --duration 5m           # against the stack ./fence up runs in another terminal",
                "",
                "The same --seed (and options) draws the same schedule of faults; what the writers do in between depends on",
                "timing. Exit status: 0 when verify found no violation, every stale write was rejected, no write made",
                "under a held lock was rejected as stale and no writer cut from etcd had a write acknowledged under a lease it",
                "still believed it held past the TTL; 3 otherwise (the report names the seed); 1 with a one-line reason when",
                "the run could not be made or tested nothing (INCONCLUSIVE)."})
public final class ChaosCommand implements Callable<Integer> {
    @Option(names = "--duration", defaultValue = "2m", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "Load and faults for this long, "
                    + "e.g. 2m, 30m (default: ${DEFAULT-VALUE}).")
    Duration duration;
    @Option(names = "--seed", paramLabel = "N", description = "The nemesis schedule's seed (default: a random one, printed).")
    Long seed;
    @Option(names = "--workers", defaultValue = "4", description = "Writer processes (default: ${DEFAULT-VALUE}).")
    int workers;
    @Option(names = "--threads", defaultValue = "2", description = "Writers per process, each with its own lease client and "
            + "producer (default: ${DEFAULT-VALUE}).")
    int threads;
    @Option(names = "--keys", defaultValue = "8", description = "Keys they contend for (default: ${DEFAULT-VALUE}).")
    int keys;
    @Option(names = "--ttl", defaultValue = "3s", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "The writers' lease TTL, at least 1s; a fraction of a second is rounded up, as etcd grants whole "
                    + "seconds "
                    + "(default: ${DEFAULT-VALUE}).")
    Duration ttl;
    @Option(names = "--stall-chance", defaultValue = "0.02", paramLabel = "P", description = "Per write, the chance that its "
            + "process is stopped between the lease check and the send (default: ${DEFAULT-VALUE}).")
    double stallChance;
    @Option(names = "--skewed", defaultValue = "1", paramLabel = "N", description = "Writer processes on a skewed wall clock "
            + "(libfaketime), the clock-jump fault's targets (default: ${DEFAULT-VALUE}).")
    int skewed;
    @Option(names = "--faults", paramLabel = "LIST", description = "Comma-separated (default: all of them).")
    String faults;
    @Option(names = "--control", description = "The control run: the writers' records also go straight from the input topic "
            + "through a sink with the fence guard off (billing_summary_unfenced), and verify checks the input topic and that "
            + "table as if they were the accepted topic and the sink's: the stale writes land, and verify must report them "
            + "(exit 3).")
    boolean control;
    @Option(names = "--cluster", description = "Run against the clustered stack ./fence up --cluster starts (3 brokers, 3 etcd "
            + "members, 2 enforcers, 2 Connect workers; about 5 GiB of heap): the kills and pauses then hit one instance or "
            + "member at a time, and broker-kill is among the faults.")
    boolean cluster;
    @Option(names = "--processing-guarantee", defaultValue = "exactly_once_v2", paramLabel = "exactly_once_v2|at_least_once",
            description = "The enforcers' processing.guarantee (with --stack: what the running ones use; ./fence up runs "
                    + "exactly_once_v2). at_least_once: "
                    + "after a kill an enforcer decides the records since its last commit again, and verify checks the first "
                    + "copy of each decision; with --cluster, the two-instance at_least_once shape, e.g. --faults "
                    + "enforcer-kill,enforcer-pause,etcd-pause (default: ${DEFAULT-VALUE}).")
    String guarantee;
    /** The shortest run: long enough for a few lock rounds and faults. */
    static final Duration MIN_DURATION = Duration.ofSeconds(10);
    /** The prefix of the settings that give a fault's command: {@code FENCE_FAULT_ENFORCER_KILL}. */
    static final String FAULT_SETTING = "FENCE_FAULT_";

    @Mixin
    EnforcerSettingOption enforcerSettings = new EnforcerSettingOption();
    @Option(names = "--stack", description = "Run against a running stack instead of starting one: the one --bootstrap, "
            + "--etcd, --schema-registry and --postgres name, else KAFKA_BOOTSTRAP, ETCD_ENDPOINTS, SCHEMA_REGISTRY_URL and "
            + "POSTGRES_URL from the environment or the env file (.fence/stack.env, which ./fence up writes). The writers' "
            + "faults and inject need nothing more; each service fault needs its command (--fault-command, or "
            + "FENCE_FAULT_<FAULT> in the environment or the env file, which ./fence up writes).")
    boolean stack;
    @Option(names = "--fault-command", paramLabel = "FAULT=COMMAND", description = "With --stack: the shell command that "
            + "injects FAULT (enforcer-kill, enforcer-pause, connect-kill, etcd-pause, broker-kill) and returns once the "
            + "service is back, run with sh -c and FENCE_FAULT_MILLIS and FENCE_FAULT_SECONDS (how long the pause or the "
            + "time down should last) in its environment; its output goes to faults.log. Repeatable. Default: "
            + "FENCE_FAULT_<FAULT> (FENCE_FAULT_ENFORCER_KILL) from the environment or the env file, which ./fence up writes "
            + "for its enforcer, Connect worker and etcd.")
    Map<String, String> faultCommands = new LinkedHashMap<>();
    @Option(names = "--postgres", paramLabel = "JDBC_URL", description = "With --stack: the sink's database (default: "
            + "POSTGRES_URL from the environment or the env file).")
    String postgresUrl;
    @ParentCommand
    FenceMain fence;
    @Option(names = "--dir", paramLabel = "DIR", description = "Where the stack's data and logs, the writers' ledgers and the "
            + "report go (default: chaos-runs/<time>-seed<seed>).")
    Path dir;
    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        Set<Fault> chosen;
        Map<Fault, String> commands;
        try {
            commands = commands();
            chosen = faults != null
                    ? Fault.parse(faults)
                    : stack ? RunningStack.defaultFaults(commands) : Fault.parse(Fault.all(cluster));
            if (duration.compareTo(MIN_DURATION) < 0) {
                throw new IllegalArgumentException("--duration must be at least " + MIN_DURATION.toSeconds() + "s, got "
                        + DurationConverter.format(duration));
            }
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage(), e);
        }
        checkOptions(chosen, commands);
        Map<String, String> enforcer = enforcer();

        if ((chosen.contains(Fault.CLOCK_JUMP) || skewed > 0) && !Files.exists(WriterFleet.LIBFAKETIME)) {
            System.err.println("fence chaos: " + WriterFleet.LIBFAKETIME + " not found: install Debian's faketime "
                    + "(apt-get install -y faketime), or pass --skewed 0 and --faults without clock-jump");
            return 1;
        }
        long runSeed = seed != null ? seed : ThreadLocalRandom.current().nextLong(1, 1_000_000);
        Path runDir = dir != null
                ? dir
                : Path.of("chaos-runs", LocalDateTime.now().format(
                        DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + "-seed" + runSeed);
        WriterFleet.Load load = new WriterFleet.Load(workers, threads, keys, ttl, stallChance, Duration.ofMillis(20));
        ChaosRun.Endpoints endpoints;
        try {
            endpoints = stack ? RunningStack.endpoints(fence.stack(), postgresUrl, spec.commandLine().getErr()) : null;
        } catch (IllegalStateException | IOException e) {
            System.err.println("fence chaos: " + e.getMessage());
            return 1;
        }
        boolean atLeastOnce = guarantee.equals("at_least_once");
        ChaosRun.Settings settings = new ChaosRun.Settings(runDir.toAbsolutePath(), runSeed, load, chosen, skewed, duration,
                control, cluster, endpoints, commands, atLeastOnce, enforcer);
        ChaosRun.Outcome outcome;
        try {
            outcome = ChaosRun.run(settings, line -> System.err.println("[chaos] " + line));
        } catch (Exception e) {
            System.err.println(
                    "fence chaos: the run failed: " + e.getMessage() + " (seed " + runSeed + "; logs in " + runDir + ")");
            return 1;
        }
        return report(outcome, runSeed, runDir);
    }

    /** Prints and writes the report; returns the exit status: 0 passed, 3 a violation, 1 a run that tested nothing. */
    private int report(ChaosRun.Outcome outcome, long runSeed, Path runDir) throws IOException {
        String replay = replay(runSeed);
        String text = ChaosReport.write(outcome, replay);
        spec.commandLine().getOut().print(text);
        spec.commandLine().getOut().println("report: " + runDir.resolve("report.html").toAbsolutePath());
        spec.commandLine().getOut().flush();
        if (outcome.ledger().acks().isEmpty()) {
            spec.commandLine().getOut().println("INCONCLUSIVE: no writer wrote anything, so the run tested nothing; the writers' "
                    + "logs are in " + runDir.resolve("writers"));
            spec.commandLine().getOut().flush();
            return 1;
        }
        long staleAccepted = ChaosReport.staleAccepted(outcome);
        if (staleAccepted > 0) {
            spec.commandLine().getOut()
                    .println("FAIL: " + staleAccepted + " stale writes (sent after another writer took the key) "
                            + "were not rejected; run the same schedule again with: " + replay);
        }
        List<WriterLedger.Ack> heldRejected = ChaosReport.heldRejected(outcome);
        if (!heldRejected.isEmpty()) {
            spec.commandLine().getOut().println("FAIL: " + heldRejected.size() + " writes acknowledged while their writer held "
                    + "the lock were rejected STALE_TOKEN or LOCK_NOT_HELD, e.g. " + heldRejected.get(0) + "; run the same "
                    + "schedule again with: " + replay);
        }
        long zombies = ChaosReport.zombieWrites(outcome);
        if (zombies > 0) {
            spec.commandLine().getOut().println("FAIL: " + zombies + " writes of a writer cut from etcd were acknowledged while "
                    + "it still believed it held its lease, more than the TTL after the cut; run the same schedule again with: "
                    + replay);
        }
        return outcome.verify().violations() == 0 && staleAccepted == 0 && heldRejected.isEmpty() && zombies == 0
                ? 0
                : VerifyCommand.VIOLATIONS;
    }

    /** A started stack's enforcer settings: the guarantee and {@code --enforcer-setting}, checked. */
    private Map<String, String> enforcer() {
        if (!guarantee.equals("exactly_once_v2") && !guarantee.equals("at_least_once")) {
            throw new ParameterException(spec.commandLine(),
                    "--processing-guarantee must be exactly_once_v2 or at_least_once, not '" + guarantee + "'");
        }
        try {
            if (enforcerSettings.settings.containsKey("processing.guarantee")) {
                throw new IllegalArgumentException("--enforcer-setting processing.guarantee: use --processing-guarantee, "
                        + "which verify reads too");
            }
            return enforcerSettings.over(ChaosRun.enforcerSettings(guarantee.equals("at_least_once")));
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage(), e);
        }
    }

    /** {@code --fault-command}'s map by fault. */
    private Map<Fault, String> commands() {
        Map<Fault, String> out = new EnumMap<>(Fault.class);
        faultCommands.forEach((name, command) -> {
            if (name.contains(",")) {
                throw new IllegalArgumentException("--fault-command " + name + "=...: one fault per --fault-command");
            }
            Fault fault = Fault.parse(name).iterator().next();
            if (!fault.service()) {
                throw new IllegalArgumentException("--fault-command " + name + ": only the service faults take a command "
                        + "(enforcer-kill, enforcer-pause, connect-kill, etcd-pause, broker-kill)");
            }
            out.put(fault, command);
        });
        if (stack) {
            for (Fault fault : Fault.values()) {
                String given = fault.service() && !out.containsKey(fault)
                        ? fence.stack().optional(FAULT_SETTING + fault.name())
                        : null;
                if (given != null) {
                    out.put(fault, given); // from the environment or the env file, e.g. the one ./fence up writes
                }
            }
        }
        return out;
    }

    private void checkOptions(Set<Fault> chosen, Map<Fault, String> commands) {
        for (Map.Entry<String, Integer> count : Map.of("--workers", workers, "--threads", threads, "--keys", keys).entrySet()) {
            if (count.getValue() < 1) {
                throw new ParameterException(spec.commandLine(), count.getKey() + " must be at least 1, got " + count.getValue());
            }
        }
        if (stallChance < 0 || stallChance > 1) {
            throw new ParameterException(spec.commandLine(), "--stall-chance must be between 0 and 1, got " + stallChance);
        }
        try {
            DurationConverter.leaseTtl("--ttl", ttl);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage(), e);
        }
        if (skewed < 0 || skewed > workers) {
            throw new ParameterException(spec.commandLine(), "--skewed must be between 0 and --workers (" + workers + "), got "
                    + skewed);
        }
        checkStack(chosen, commands);
        for (Fault fault : chosen) {
            if (fault.clusterOnly() && !cluster && !stack) {
                throw new ParameterException(spec.commandLine(), "--faults " + fault.option() + " needs --cluster: the default "
                        + "stack has one broker and one etcd member");
            }
        }
    }

    private void checkStack(Set<Fault> chosen, Map<Fault, String> commands) {
        if (!stack) {
            if (!commands.isEmpty() || postgresUrl != null) {
                throw new ParameterException(spec.commandLine(), "--fault-command and --postgres go with --stack");
            }
            return;
        }
        if (cluster || control || !enforcerSettings.isEmpty()) {
            throw new ParameterException(spec.commandLine(), "--stack runs against a stack that is already there: --cluster, "
                    + "--control and --enforcer-setting start their own");
        }
        for (Fault fault : chosen) {
            if (fault.network()) {
                throw new ParameterException(spec.commandLine(), "--faults " + fault.option() + " with --stack: network faults "
                        + "need a stack chaos starts itself, whose processes each run under a group id of their own");
            }
            if (fault.service() && !commands.containsKey(fault)) {
                throw new ParameterException(spec.commandLine(), "--faults " + fault.option() + " with --stack needs "
                        + "--fault-command " + fault.option() + "=COMMAND: chaos did not start that stack's services");
            }
        }
    }

    /**
     * The command line that draws the same schedule again: the options as given, not the fault commands taken from the
     * environment or the env file (they name that stack's processes).
     */
    private String replay(long runSeed) {
        StackOptions given = fence.stack();
        String stackOptions = !stack
                ? ""
                : " --stack" + given.given() + option("--postgres", postgresUrl);
        return "./fence chaos --seed " + runSeed + " --duration " + DurationConverter.format(duration) + " --workers " + workers
                + " --threads "
                + threads + " --keys " + keys + " --ttl " + DurationConverter.format(ttl) + " --stall-chance " + stallChance
                + " --skewed " + skewed
                + (faults == null ? "" : " --faults " + faults) + (control ? " --control" : "") + (cluster ? " --cluster" : "")
                + (guarantee.equals("exactly_once_v2") ? "" : " --processing-guarantee " + guarantee)
                + enforcerSettings.given() + stackOptions
                + faultCommands.entrySet().stream().map(c -> option("--fault-command", c.getKey() + "=" + c.getValue()))
                        .collect(Collectors.joining());
    }

    /** {@code " --name 'value'"}, quoted for the shell; empty when {@code value} is {@code null}. */
    private static String option(String name, Object value) {
        return value == null ? "" : " " + name + " " + EnvFile.shellQuoted(value.toString());
    }
}
