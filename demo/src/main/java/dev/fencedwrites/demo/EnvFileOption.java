package dev.fencedwrites.demo;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** {@code --env-file} of the operator commands, and how they resolve a setting with it (see {@link StackSettings}). */
final class EnvFileOption {
    @Option(names = "--env-file", paramLabel = "FILE",
            description = "Settings of a running stack (default: .fence/stack.env from ./fence up, else .fence/demo.env from ./fence demo).")
    Path file;

    /**
     * {@code explicit} when given, else {@code name} from the environment or the stack's env file.
     *
     * @param option the command's option for this setting, named when there is none
     * @param wait   wait for a stack to write its env file (when following)
     */
    String setting(String name, String option, String explicit, boolean wait, PrintWriter err) throws IOException {
        return explicit != null ? explicit : StackSettings.get(name, option, file, wait, err);
    }
}
