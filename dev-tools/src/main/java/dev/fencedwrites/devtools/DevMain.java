package dev.fencedwrites.devtools;

import dev.fencedwrites.cli.FenceMain;
import dev.fencedwrites.cli.FenceMain.Subcommand;
import dev.fencedwrites.cli.StackOptions;
import java.util.List;
import java.util.Set;
import picocli.CommandLine;

/**
 * A checkout's {@code fence} (what {@code ./fence} runs): fence-cli's operator commands ({@link FenceMain}) plus the
 * commands that start a local stack on this machine ({@code demo}, {@code up}, {@code down}, {@code chaos}), which the
 * distribution leaves out with everything they run (a broker, an embedded PostgreSQL, a Connect runtime).
 */
public final class DevMain {
    /** The launcher's own commands, which {@code ./fence} runs without this class: the end of the root's help. */
    private static final List<String> LAUNCHER_COMMANDS = List.of(
            "", "Launcher commands (the ./fence script runs them itself; the distribution's fence has none of them):",
            "  test     Install what the tests need (dev/setup test), then run every unit test and every integration",
            "           test not tagged failover or slow (./mvnw verify); ./fence test --help says more.",
            "  test-failover  The clustered and fault tests: ClusterFailoverIT, ClusterPartitionIT, ClusterUpIT,",
            "           ChaosClusterIT, ChaosIT (about 26 minutes); ./fence test-failover --help says more.",
            "  kafka-configs  Kafka's kafka-configs.sh (ConfigCommand), for a checkout without Kafka's tools.",
            "  bench    Measure what fencing costs beside its unfenced baseline; one table, also written to bench/results/;",
            "           ./fence bench --help says more.",
            "",
            "The first run of ./fence downloads dependencies from Maven Central and builds (a few minutes); later runs rebuild",
            "only when sources changed. Needs JDK 17+ (./mvnw brings Maven).");

    private DevMain() {
    }

    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }

    /** The checkout's {@code fence} command line, ready to {@code execute} (see {@link FenceMain#commandLine(List, List)}). */
    public static CommandLine commandLine() {
        return FenceMain.commandLine(List.of(
                new Subcommand(new DemoCommand(), Set.of(StackOptions.ENV_FILE)),
                new Subcommand(new UpCommand(), Set.of(StackOptions.ENV_FILE)),
                new Subcommand(new DownCommand(), Set.of(StackOptions.ENV_FILE)),
                new Subcommand(new ChaosCommand(), Set.of(StackOptions.ENV_FILE, StackOptions.BOOTSTRAP, StackOptions.ETCD,
                        StackOptions.SCHEMA_REGISTRY))),
                LAUNCHER_COMMANDS);
    }
}
