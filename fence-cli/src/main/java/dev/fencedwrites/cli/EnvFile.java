package dev.fencedwrites.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * The KEY=value file {@code fence up} and {@code fence demo} write for the other commands (and for {@code source} in a shell).
 */
final class EnvFile {
    private EnvFile() {
    }

    /** One {@code KEY=value} line per entry, each value quoted for the shell when needed. */
    static String lines(Map<String, String> settings) {
        StringBuilder lines = new StringBuilder();
        settings.forEach((key, value) -> lines.append(key).append('=').append(shellQuoted(value)).append('\n'));
        return lines.toString();
    }

    /** Writes {@code lines} to {@code file}, creating its directory. */
    static void write(Path file, String lines) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Files.writeString(file, lines);
    }

    /** Removes {@code file} if it is there; best effort, since a stale file only names ports nothing listens on. */
    static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            // best effort: a stale file names ports nothing listens on
        }
    }

    /** Single-quotes values the shell would split or interpret (the JDBC URL's {@code &}), so {@code source} works. */
    static String shellQuoted(String value) {
        return value.matches("[A-Za-z0-9_./:@%+,=-]*") ? value : "'" + value.replace("'", "'\\''") + "'";
    }
}
