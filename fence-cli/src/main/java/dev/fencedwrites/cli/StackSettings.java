package dev.fencedwrites.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** The KEY=value settings that {@code ./fence up} and {@code ./fence demo} write for the operator commands. */
public final class StackSettings {
    private StackSettings() {
    }

    /**
     * A setting from the environment, else from {@code envFile}, else from {@code .fence/stack.env}
     * ({@code ./fence up}) or {@code .fence/demo.env} ({@code ./fence demo}); with {@code wait}, waits for either.
     *
     * @param option the command's option that gives the setting directly, named in the error
     * @throws IllegalStateException naming what to start or pass, when there is none
     */
    public static String get(String name, String option, Path envFile, boolean wait, PrintWriter err) throws IOException {
        String value = System.getenv(name);
        if (value != null && !value.isBlank()) {
            return value;
        }
        Path file = envFile;
        if (file == null) {
            file = findEnvFile();
            if (file == null && wait) {
                err.println("[fence] waiting for ./fence up or ./fence demo to start"
                        + " (no .fence/stack.env or .fence/demo.env yet) ...");
                err.flush();
                while ((file = findEnvFile()) == null) {
                    try {
                        Thread.sleep(1_000);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException("interrupted while waiting for a stack");
                    }
                }
            }
            if (file == null) {
                throw new IllegalStateException(
                        "no " + name + ": start the stack with ./fence up (it writes .fence/stack.env), or pass " + option);
            }
        } else if (!Files.isRegularFile(file)) {
            throw new IllegalStateException(file + " does not exist; start the stack with ./fence up, or pass " + option);
        }
        String written = fromFile(file, name);
        if (written == null) {
            throw new IllegalStateException(file + " has no " + name + "; pass " + option);
        }
        return written;
    }

    /**
     * The setting {@code name} of the env file {@code file} only (not the environment: a shell that sourced an older file
     * still has its values), or {@code null} when the file has none.
     */
    public static String fromFile(Path file, String name) throws IOException {
        for (String written : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            // Lines are "export KEY=value"; files written by older versions have "KEY=value".
            String line = written.startsWith(EnvFile.EXPORT) ? written.substring(EnvFile.EXPORT.length()) : written;
            if (line.startsWith(name + "=")) {
                String raw = line.substring(name.length() + 1);
                if (raw.length() >= 2 && raw.startsWith("'") && raw.endsWith("'")) {
                    raw = raw.substring(1, raw.length() - 1).replace("'\\''", "'");
                }
                return raw;
            }
        }
        return null;
    }

    /**
     * An optional setting: from the environment, else from {@code envFile}, else from the stack's env file if there is one;
     * {@code null} when none has it (or a file cannot be read).
     */
    public static String find(String name, Path envFile) {
        String value = System.getenv(name);
        if (value != null && !value.isBlank()) {
            return value;
        }
        Path file = envFile != null ? envFile : findEnvFile();
        if (file == null || !Files.isRegularFile(file)) {
            return null;
        }
        try {
            return get(name, name, file, false, null);
        } catch (IllegalStateException | IOException e) {
            return null;
        }
    }

    /**
     * The env file the settings come from when neither options nor the environment give them, and
     * its contents then: a running {@code ./fence up} or {@code ./fence demo} removes its file when it stops.
     */
    record Source(Path file, String contents) {
        /** The file found now, or {@code null} when the environment gives the settings or there is no file. */
        static Source current() {
            if (System.getenv("KAFKA_BOOTSTRAP") != null) {
                return null;
            }
            Path file = findEnvFile();
            String contents = file == null ? null : read(file);
            return contents == null ? null : new Source(file, contents);
        }

        /** Whether the file still exists with the same contents (the same stack). */
        boolean unchanged() {
            return contents.equals(read(file));
        }

        private static String read(Path file) {
            try {
                return Files.readString(file, StandardCharsets.UTF_8);
            } catch (IOException e) {
                return null;
            }
        }
    }

    private static Path findEnvFile() {
        for (Path candidate : List.of(Path.of(".fence/stack.env"), Path.of(".fence/demo.env"))) {
            if (Files.isRegularFile(candidate)) {
                return candidate;
            }
        }
        return null;
    }
}
