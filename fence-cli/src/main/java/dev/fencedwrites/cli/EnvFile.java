package dev.fencedwrites.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * The {@code export KEY=value} file {@code fence up} and {@code fence demo} write for the other commands, and for
 * {@code source} in a shell: the {@code export} puts each setting into the environment of programs started from that
 * shell afterwards (a worker, {@code kcat}), not only into the shell's own variables.
 */
public final class EnvFile {
    private EnvFile() {
    }

    /** The prefix of each line. */
    public static final String EXPORT = "export ";

    /** One {@code export KEY=value} line per entry, each value quoted for the shell when needed. */
    public static String lines(Map<String, String> settings) {
        StringBuilder lines = new StringBuilder();
        settings.forEach((key, value) -> lines.append(EXPORT).append(key).append('=').append(shellQuoted(value)).append('\n'));
        return lines.toString();
    }

    /** Writes {@code lines} to {@code file}, creating its directory. */
    public static void write(Path file, String lines) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Files.writeString(file, lines);
    }

    /** Removes {@code file} if it is there; best effort, since a stale file only names ports nothing listens on. */
    public static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            // best effort: a stale file names ports nothing listens on
        }
    }

    /** Single-quotes values the shell would split or interpret (the JDBC URL's {@code &}), so {@code source} works. */
    public static String shellQuoted(String value) {
        return value.matches("[A-Za-z0-9_./:@%+,=-]*") ? value : "'" + value.replace("'", "'\\''") + "'";
    }
}
