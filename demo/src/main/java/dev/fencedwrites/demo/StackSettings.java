package dev.fencedwrites.demo;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** The KEY=value settings that {@code ./fence up} and {@code ./fence demo} write for the operator commands. */
final class StackSettings {
    private StackSettings() {
    }

    /**
     * A setting from the environment, else from {@code envFile}, else from {@code .fence/stack.env}
     * ({@code ./fence up}) or {@code .fence/demo.env} ({@code ./fence demo}); with {@code wait}, waits for either.
     *
     * @throws IllegalStateException naming what to start or pass, when there is none
     */
    static String get(String name, Path envFile, boolean wait, PrintWriter err) throws IOException {
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
                throw new IllegalStateException("no " + name + ": start the stack with ./fence up (it writes .fence/stack.env), or pass --bootstrap");
            }
        } else if (!Files.isRegularFile(file)) {
            throw new IllegalStateException(file + " does not exist; start the stack with ./fence up, or pass --bootstrap");
        }
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            if (line.startsWith(name + "=")) {
                String raw = line.substring(name.length() + 1);
                if (raw.length() >= 2 && raw.startsWith("'") && raw.endsWith("'")) {
                    raw = raw.substring(1, raw.length() - 1).replace("'\\''", "'");
                }
                return raw;
            }
        }
        throw new IllegalStateException(file + " has no " + name + "; pass --bootstrap");
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
