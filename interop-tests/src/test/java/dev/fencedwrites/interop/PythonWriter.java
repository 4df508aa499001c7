package dev.fencedwrites.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.fencedwrites.services.MissingToolException;
import dev.fencedwrites.services.Tools;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * Drives {@code examples/python/fenced_writer.py} under Debian's {@code /usr/bin/python3} (the
 * pyenv {@code python3} first on some PATHs cannot see Debian's packages) as a running process:
 * one JSON command a line in, JSON lines out as the writer acts, so a test can interleave it with
 * other writers (a Java holder releasing while the Python writer waits for its lock). A writer
 * that exits early, prints something that is not JSON or does not answer in time fails the test
 * with its standard error.
 */
final class PythonWriter implements AutoCloseable {
    static final Path PYTHON = Path.of("/usr/bin/python3");
    private static final JsonNode EOF = ExternalCommand.JSON.nullNode();

    private final Process process;
    private final OutputStream stdin;
    private final BlockingQueue<JsonNode> lines = new LinkedBlockingQueue<>();
    private final List<JsonNode> read = Collections.synchronizedList(new ArrayList<>());
    private final ByteArrayOutputStream stderr = new ByteArrayOutputStream();
    private final Thread stderrReader;

    private PythonWriter(Process process) {
        this.process = process;
        this.stdin = process.getOutputStream();
        Thread stdoutReader = new Thread(this::readStdout, "python-writer-stdout");
        stdoutReader.setDaemon(true);
        stdoutReader.start();
        stderrReader = new Thread(() -> {
            try {
                process.getErrorStream().transferTo(stderr);
            } catch (IOException e) {
                // the process is gone; what was read is reported
            }
        }, "python-writer-stderr");
        stderrReader.setDaemon(true);
        stderrReader.start();
    }

    /** Where the Python scripts are (set by the failsafe configuration). */
    static Path scriptDir() {
        String dir = System.getProperty("interop.python.dir");
        if (dir == null) {
            throw new IllegalStateException("system property interop.python.dir is not set: run the interop tests through Maven");
        }
        return Path.of(dir);
    }

    /**
     * Checks that Debian's Python has the packages the writer imports, so a machine without them skips the test at once,
     * naming what to install, rather than failing with a timeout.
     *
     * @throws MissingToolException naming Debian's python3 or the packages
     */
    static void checkInstalled() {
        String packages = "apt-get install -y python3-confluent-kafka python3-avro python3-etcd3 python3-requests";
        Tools.requireFile(PYTHON, "Debian's python3 (" + PYTHON + ")", "apt-get install -y python3");
        try {
            ExternalCommand.run(List.of(PYTHON.toString(), "-c", "import confluent_kafka, avro, etcd3, requests"), scriptDir(),
                    Map.of(), new byte[0], Duration.ofSeconds(60));
        } catch (AssertionError e) {
            throw new MissingToolException("the Python writer's packages (" + e.getMessage().strip() + ")", packages);
        }
    }

    /** Runs {@code script} (in the script directory) with {@code env} added, to completion; returns its stdout. */
    static String run(String script, Map<String, String> env, String stdin, Duration timeout) {
        return ExternalCommand.run(List.of(PYTHON.toString(), "-B", script), scriptDir(), env,
                stdin.getBytes(StandardCharsets.UTF_8), timeout);
    }

    /** Starts fenced_writer.py with {@code env} added (KAFKA_BOOTSTRAP, SCHEMA_REGISTRY_URL, TOPIC, ...). */
    static PythonWriter start(Map<String, String> env) {
        ProcessBuilder builder = new ProcessBuilder(PYTHON.toString(), "fenced_writer.py").directory(scriptDir().toFile());
        builder.environment().putAll(env);
        builder.environment().put("PYTHONDONTWRITEBYTECODE", "1"); // no __pycache__ in the source tree
        try {
            return new PythonWriter(builder.start());
        } catch (IOException e) {
            throw new IllegalStateException("could not start " + PYTHON + " fenced_writer.py: " + e.getMessage(), e);
        }
    }

    /** Sends one command; the writer runs commands in order. */
    void send(ObjectNode command) {
        try {
            stdin.write((command.toString() + "\n").getBytes(StandardCharsets.UTF_8));
            stdin.flush();
        } catch (IOException e) {
            throw new AssertionError("the Python writer stopped reading commands; stderr:\n" + stderr(), e);
        }
    }

    /** Reads the writer's lines until one matches {@code wanted} (earlier ones are kept in {@link #lines()}); returns it. */
    JsonNode until(Predicate<JsonNode> wanted, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            JsonNode line;
            try {
                line = lines.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting for the Python writer", e);
            }
            if (line == null) {
                throw new AssertionError(
                        "the Python writer printed no wanted line within " + timeout.toSeconds() + " s; it printed "
                                + lines() + "; stderr:\n" + stderr());
            }
            if (line == EOF) {
                lines.add(EOF);
                throw new AssertionError(
                        "the Python writer exited (" + exitCode() + ") before printing the wanted line; it printed " + lines()
                                + "; stderr:\n" + stderr());
            }
            if (line.has("notJson")) {
                throw new AssertionError("the Python writer printed a line that is not JSON: " + line.get("notJson").asText());
            }
            if (wanted.test(line)) {
                return line;
            }
        }
    }

    /** Every line the writer printed so far, in order. */
    List<JsonNode> lines() {
        synchronized (read) {
            return List.copyOf(read);
        }
    }

    /** Closes the writer's input (it flushes, revokes the leases it holds and exits) and checks it exited with 0. */
    @Override
    public void close() {
        try {
            stdin.close();
        } catch (IOException e) {
            // it exited already: the exit code tells how
        }
        try {
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("the Python writer did not exit within 60 s of its input's end; stderr:\n" + stderr());
            }
            stderrReader.join(TimeUnit.SECONDS.toMillis(10));
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while stopping the Python writer", e);
        }
        if (process.exitValue() != 0) {
            throw new AssertionError("the Python writer exited with " + process.exitValue() + "; stderr:\n" + stderr());
        }
    }

    private void readStdout() {
        try (BufferedReader reader = new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                JsonNode json;
                try {
                    json = ExternalCommand.JSON.readTree(line);
                } catch (IOException e) {
                    json = ExternalCommand.JSON.createObjectNode().put("notJson", line);
                }
                read.add(json);
                lines.add(json);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            lines.add(EOF);
        }
    }

    private String exitCode() {
        try {
            return process.waitFor(10, TimeUnit.SECONDS) ? "exit code " + process.exitValue() : "still running";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "unknown exit code";
        }
    }

    private String stderr() {
        synchronized (stderr) {
            return stderr.toString(StandardCharsets.UTF_8);
        }
    }
}
