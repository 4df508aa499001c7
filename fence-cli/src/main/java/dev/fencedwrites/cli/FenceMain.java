package dev.fencedwrites.cli;

import java.io.PrintWriter;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.Spec;

/**
 * {@code fence}: the one entry point of the operator commands, in the shape of jetcd-ctl's {@code Main}: a picocli root
 * command whose subcommands share the stack options ({@link StackOptions}) declared here once.
 *
 * <p>Exit status: {@value #USAGE_ERROR} for every wrong option or argument (picocli's default for a parameter
 * exception, and what {@code ./fence bench} returns), printed as one line; each subcommand documents its own runtime codes.
 */
@Command(name = "fence", usageHelpWidth = 130, mixinStandardHelpOptions = true, versionProvider = BuildVersion.class,
        subcommands = {
                DemoCommand.class, UpCommand.class, DownCommand.class, EnforcerCommand.class, RejectedCommand.class,
                ConsumeCommand.class,
                ProduceCommand.class, InspectCommand.class, VerifyCommand.class, ChaosCommand.class,
                HelpCommand.class},
        description = "Fencing tokens from etcd, enforced in Kafka Streams and at PostgreSQL by a Connect "
                + "sink.",
        footer = {
                "", "Launcher commands (./fence runs them itself, not through this class):",
                "  test     Install what the tests need (docs/dev/setup.md lists it), check docker/compose.yaml, then",
                "           run every unit and integration test (./mvnw verify); ./fence test --help says more.",
                "  test-failover  The clustered and fault tests: ClusterFailoverIT, ClusterUpIT, ChaosClusterIT, ChaosIT",
                "           (about 15 minutes); ./fence test-failover --help says more.",
                "  kafka-configs  Kafka's kafka-configs.sh (ConfigCommand), for a checkout without Kafka's tools.",
                "  bench    Measure what fencing costs beside its unfenced baseline; one table, also written to "
                        + "bench/results/;",
                "           ./fence bench --help says more.",
                "",
                "The first run of ./fence downloads dependencies from Maven Central and builds (a few minutes); later runs "
                        + "rebuild",
                "only when sources changed. Needs JDK 17+ (./mvnw brings Maven).",
                "Exit status: " + FenceMain.USAGE_ERROR
                        + " for a wrong option or argument; otherwise each command's own (see its --help)."})
public final class FenceMain implements Callable<Integer> {
    /** The exit status of every usage error: picocli's {@code ExitCode.USAGE}. */
    public static final int USAGE_ERROR = CommandLine.ExitCode.USAGE;

    /** The shared options each subcommand takes; the rest are taken off its command line (and refused before it). */
    private static final Map<String, Set<String>> TAKES = Map.ofEntries(
            Map.entry("demo", Set.of(StackOptions.ENV_FILE)),
            Map.entry("up", Set.of(StackOptions.ENV_FILE)),
            Map.entry("down", Set.of(StackOptions.ENV_FILE)),
            Map.entry("enforcer", Set.of()),
            Map.entry("rejected", Set.of(StackOptions.ENV_FILE, StackOptions.BOOTSTRAP, StackOptions.COMMAND_CONFIG,
                    StackOptions.CLIENT_SETTING)),
            Map.entry("consume", Set.of(StackOptions.ENV_FILE, StackOptions.BOOTSTRAP, StackOptions.SCHEMA_REGISTRY,
                    StackOptions.COMMAND_CONFIG, StackOptions.CLIENT_SETTING)),
            Map.entry("produce",
                    Set.of(StackOptions.ENV_FILE, StackOptions.BOOTSTRAP, StackOptions.ETCD, StackOptions.SCHEMA_REGISTRY,
                            StackOptions.COMMAND_CONFIG, StackOptions.CLIENT_SETTING)),
            Map.entry("inspect", Set.of(StackOptions.ENV_FILE)),
            Map.entry("verify", Set.of(StackOptions.ENV_FILE, StackOptions.BOOTSTRAP, StackOptions.SCHEMA_REGISTRY,
                    StackOptions.COMMAND_CONFIG, StackOptions.CLIENT_SETTING)),
            Map.entry("chaos",
                    Set.of(StackOptions.ENV_FILE, StackOptions.BOOTSTRAP, StackOptions.ETCD, StackOptions.SCHEMA_REGISTRY)),
            Map.entry("help", Set.of()));

    @Mixin
    StackOptions stack;
    @Spec
    CommandSpec spec;

    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }

    /**
     * The {@code fence} command line, ready to {@code execute}: a parameter error anywhere prints
     * {@code "<command>: <what is wrong> (see ./<command> --help)"} on one line and returns {@link #USAGE_ERROR}.
     */
    public static CommandLine commandLine() {
        CommandLine line = new CommandLine(new FenceMain());
        line.getSubcommands().forEach((name, sub) -> keepSharedOptions(sub.getCommandSpec(), TAKES.getOrDefault(name, Set.of())));
        CommandLine enforcer = line.getSubcommands().get("enforcer");
        enforcer.getCommandSpec().remove(enforcer.getCommandSpec().findOption("--help"));
        enforcer.setUnmatchedOptionsArePositionalParams(true);
        line.setExecutionStrategy(parsed -> new CommandLine.RunLast().execute(checkSharedOptions(parsed)));
        line.setParameterExceptionHandler((e, args) -> {
            PrintWriter err = e.getCommandLine().getErr();
            String name = e.getCommandLine().getCommandSpec().qualifiedName();
            err.println(name + ": " + e.getMessage() + " (see ./" + name + " --help)");
            err.flush();
            return USAGE_ERROR;
        });
        return line;
    }

    /** The stack options given on this command line (before or after the subcommand). */
    StackOptions stack() {
        return stack;
    }

    @Override
    public Integer call() {
        spec.commandLine().usage(spec.commandLine().getOut());
        return 0;
    }

    /** Removes the inherited shared options a subcommand does not take, so giving one there is an unknown option. */
    private static void keepSharedOptions(CommandSpec sub, Set<String> taken) {
        for (OptionSpec option : List.copyOf(sub.options())) {
            if (option.inherited() && !taken.contains(sharedName(option))) {
                sub.remove(option);
            }
        }
    }

    /** Refuses a shared option given before a subcommand that does not take it ({@code fence --bootstrap X up}). */
    private static ParseResult checkSharedOptions(ParseResult parsed) {
        if (!parsed.hasSubcommand()) {
            return parsed;
        }
        ParseResult sub = parsed.subcommand();
        Set<String> taken = TAKES.getOrDefault(sub.commandSpec().name(), Set.of());
        for (OptionSpec option : parsed.matchedOptions()) {
            if (StackOptions.NAMES.contains(sharedName(option)) && !taken.contains(sharedName(option))) {
                throw new ParameterException(sub.commandSpec().commandLine(), typedName(option, parsed.originalArgs())
                        + " does not apply to " + sub.commandSpec().qualifiedName());
            }
        }
        return parsed;
    }

    /** The name a shared option is known by in {@link #TAKES} ({@code --bootstrap} for both aliases); else its longest. */
    private static String sharedName(OptionSpec option) {
        for (String name : option.names()) {
            if (StackOptions.NAMES.contains(name)) {
                return name;
            }
        }
        return option.longestName();
    }

    /** The name of {@code option} as the user typed it ({@code --bootstrap-server} or {@code --bootstrap}). */
    private static String typedName(OptionSpec option, List<String> args) {
        for (String arg : args) {
            for (String name : option.names()) {
                if (arg.equals(name) || arg.startsWith(name + "=") || (name.length() == 2 && arg.startsWith(name))) {
                    return name;
                }
            }
        }
        return sharedName(option);
    }
}
