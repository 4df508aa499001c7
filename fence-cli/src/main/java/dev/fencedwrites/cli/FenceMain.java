package dev.fencedwrites.cli;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.HashMap;
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
 * command whose subcommands share the stack options ({@link StackOptions}) declared here once. This is what the
 * distribution's {@code bin/fence} runs; a checkout's {@code ./fence} runs the same root with the local stack's commands
 * added ({@link #commandLine(List, List)}, from dev-tools).
 *
 * <p>Exit status: {@value #USAGE_ERROR} for every wrong option or argument (picocli's default for a parameter
 * exception, and what {@code ./fence bench} returns), printed as one line; each subcommand documents its own runtime codes.
 */
@Command(name = "fence", usageHelpWidth = 130, mixinStandardHelpOptions = true, versionProvider = BuildVersion.class,
        subcommands = {EnforcerCommand.class, RejectedCommand.class, ConsumeCommand.class, ProduceCommand.class,
                InspectCommand.class, VerifyCommand.class},
        description = "Fencing tokens from etcd, enforced in Kafka Streams and at PostgreSQL by a Connect sink.")
public final class FenceMain implements Callable<Integer> {
    /** The exit status of every usage error: picocli's {@code ExitCode.USAGE}. */
    public static final int USAGE_ERROR = CommandLine.ExitCode.USAGE;
    /** The last line of the root's help, after any footer a caller adds. */
    private static final String EXIT_STATUS = "Exit status: " + USAGE_ERROR
            + " for a wrong option or argument; otherwise each command's own (see its --help).";

    /** The shared options each subcommand takes; the rest are taken off its command line (and refused before it). */
    private static final Map<String, Set<String>> TAKES = Map.ofEntries(
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
            Map.entry("help", Set.of()));

    /**
     * A subcommand another module adds to {@code fence}: a picocli {@code @Command} object, and the names of the shared
     * options ({@link StackOptions}'s constants) it takes; the others are refused on its command line.
     */
    public record Subcommand(Object command, Set<String> sharedOptions) {
        public Subcommand {
            sharedOptions = Set.copyOf(sharedOptions);
        }
    }

    @Mixin
    StackOptions stack;
    @Spec
    CommandSpec spec;

    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }

    /** The operator commands' {@code fence}, ready to {@code execute}: see {@link #commandLine(List, List)}. */
    public static CommandLine commandLine() {
        return commandLine(List.of(), List.of());
    }

    /**
     * The {@code fence} command line with {@code more} subcommands after the operator commands and {@code footer} lines
     * at the end of the root's help, ready to {@code execute}: a parameter error anywhere prints
     * {@code "<command>: <what is wrong> (see ./<command> --help)"} on one line and returns {@link #USAGE_ERROR}.
     */
    public static CommandLine commandLine(List<Subcommand> more, List<String> footer) {
        Map<String, Set<String>> takes = new HashMap<>(TAKES);
        CommandLine line = new CommandLine(new FenceMain());
        for (Subcommand sub : more) {
            CommandLine added = new CommandLine(sub.command());
            line.addSubcommand(added);
            takes.put(added.getCommandName(), sub.sharedOptions());
        }
        line.addSubcommand(new HelpCommand());
        List<String> lines = new ArrayList<>(footer);
        lines.addAll(List.of("", EXIT_STATUS));
        line.getCommandSpec().usageMessage().footer(lines.toArray(String[]::new));
        line.getSubcommands().forEach((name, sub) -> keepSharedOptions(sub.getCommandSpec(), takes.getOrDefault(name, Set.of())));
        CommandLine enforcer = line.getSubcommands().get("enforcer");
        enforcer.getCommandSpec().remove(enforcer.getCommandSpec().findOption("--help"));
        enforcer.setUnmatchedOptionsArePositionalParams(true);
        line.setExecutionStrategy(parsed -> new CommandLine.RunLast().execute(checkSharedOptions(parsed, takes)));
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
    public StackOptions stack() {
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
    private static ParseResult checkSharedOptions(ParseResult parsed, Map<String, Set<String>> takes) {
        if (!parsed.hasSubcommand()) {
            return parsed;
        }
        ParseResult sub = parsed.subcommand();
        Set<String> taken = takes.getOrDefault(sub.commandSpec().name(), Set.of());
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
