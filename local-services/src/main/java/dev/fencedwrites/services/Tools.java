package dev.fencedwrites.services;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/** The external programs the services and tests run, found on {@code PATH}. */
public final class Tools {
    private Tools() {
    }

    /** {@code program} as an executable in a directory of {@code PATH}, if there is one. */
    public static Optional<Path> onPath(String program) {
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(File.pathSeparator)) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, program))) {
                return Optional.of(Path.of(dir, program));
            }
        }
        return Optional.empty();
    }

    /**
     * {@code program} on {@code PATH}.
     *
     * @param install the command that installs it, for the message
     * @throws MissingToolException naming the program and {@code install} when it is not there
     */
    public static Path require(String program, String install) {
        return onPath(program).orElseThrow(() -> new MissingToolException(program, install));
    }

    /**
     * A file a tool installs (a library, a package's module): {@code file} itself.
     *
     * @throws MissingToolException naming {@code tool} and {@code install} when {@code file} does not exist
     */
    public static Path requireFile(Path file, String tool, String install) {
        if (!Files.exists(file)) {
            throw new MissingToolException(tool, install);
        }
        return file;
    }
}
