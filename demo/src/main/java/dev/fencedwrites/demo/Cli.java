package dev.fencedwrites.demo;

import java.io.PrintWriter;
import picocli.CommandLine;

/** How the operator commands run from {@code ./fence}: a wrong option or argument is one line and exit status 1, like any other failure. */
final class Cli {
    private Cli() {
    }

    /**
     * {@code command} ready to {@code execute}, with picocli's usage dump on a parameter error
     * replaced by {@code "<name>: <what is wrong> (see ./<name> --help)"}.
     *
     * @param name how the user typed the command, e.g. {@code fence produce}
     */
    static CommandLine commandLine(String name, Object command) {
        CommandLine line = new CommandLine(command);
        line.setParameterExceptionHandler((e, args) -> {
            PrintWriter err = e.getCommandLine().getErr();
            err.println(name + ": " + e.getMessage() + " (see ./" + name + " --help)");
            err.flush();
            return 1;
        });
        return line;
    }
}
