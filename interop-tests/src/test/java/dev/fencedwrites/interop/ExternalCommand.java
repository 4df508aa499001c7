package dev.fencedwrites.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.services.MissingToolException;
import dev.fencedwrites.services.Tools;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs a third-party program (node with one of the scripts in {@code examples/node}, or kcat) to
 * completion and hands back what it printed. A program that is missing, fails or outlives its
 * timeout fails the test with its command line, exit code and standard error.
 */
final class ExternalCommand {
    static final ObjectMapper JSON = new ObjectMapper();

    /** Where the Node.js scripts and their {@code node_modules} are (set by the failsafe configuration). */
    static Path nodeDir() {
        String dir = System.getProperty("interop.node.dir");
        if (dir == null) {
            throw new IllegalStateException(
                    "system property interop.node.dir is not set: run the interop tests through Maven (mvn verify -pl "
                            + "interop-tests)");
        }
        return Path.of(dir);
    }

    /**
     * Checks that node, the npm packages, kcat and etcdctl are installed, so a machine without them skips the test at
     * once, naming what to install, rather than failing with a timeout.
     *
     * @throws MissingToolException naming the first that is missing
     */
    static void checkInstalled() {
        Path dir = nodeDir();
        Tools.require("node", "Node.js 20 or newer from nodejs.org or NodeSource (docs/dev/setup.md)");
        Tools.require("kcat", "apt-get install -y kcat");
        Tools.require("etcdctl", "apt-get install -y etcd-client");
        for (String module : List.of("kafkajs", "@confluentinc/schemaregistry", "avsc", "etcd3")) {
            Tools.requireFile(dir.resolve("node_modules").resolve(module), "the npm package " + module,
                    "(cd examples/node && npm ci)");
        }
    }

    /**
     * Runs {@code node script} in the node directory with {@code env} added and {@code stdin} as input; returns its stdout's JSON
     * lines.
     */
    static List<JsonNode> node(String script, Map<String, String> env, String stdin, Duration timeout) {
        String out = run(List.of("node", script), nodeDir(), env, stdin.getBytes(StandardCharsets.UTF_8), timeout);
        List<JsonNode> lines = new ArrayList<>();
        for (String line : out.split("\n")) {
            if (!line.isBlank()) {
                try {
                    lines.add(JSON.readTree(line));
                } catch (IOException e) {
                    throw new AssertionError("node " + script + " printed a line that is not JSON: " + line, e);
                }
            }
        }
        return lines;
    }

    /** Runs kcat with {@code args}; returns its standard output. */
    static String kcat(List<String> args, Duration timeout) {
        List<String> command = new ArrayList<>();
        command.add("kcat");
        command.addAll(args);
        return run(command, Path.of("."), Map.of(), new byte[0], timeout);
    }

    /**
     * Runs {@code etcdctl lock <name> bash -c <script>}: etcdctl takes the lock (the Go client's
     * {@code concurrency.Mutex}, on {@code <name>/<lease hex>}), runs the script with
     * {@code ETCD_LOCK_KEY} (its lock key) and {@code ETCD_LOCK_REV} (the header revision at which
     * it found that key the oldest: the fencing token) in its environment, then releases the lock.
     * Returns the script's standard output.
     */
    static String etcdctlLock(String endpoints, String name, String script, Duration timeout) {
        return run(List.of("etcdctl", "--endpoints=" + endpoints, "lock", name, "--", "bash", "-c", script), Path.of("."),
                Map.of("ETCDCTL_API", "3"), new byte[0], timeout);
    }

    static String run(List<String> command, Path dir, Map<String, String> env, byte[] stdin, Duration timeout) {
        ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile());
        builder.environment().putAll(env);
        Process process;
        try {
            process = builder.start();
        } catch (IOException e) {
            throw new IllegalStateException("could not start " + String.join(" ", command) + ": " + e.getMessage(), e);
        }
        CompletableFuture<byte[]> stdout = CompletableFuture.supplyAsync(() -> readAll(process.getInputStream()));
        CompletableFuture<byte[]> stderr = CompletableFuture.supplyAsync(() -> readAll(process.getErrorStream()));
        try (OutputStream in = process.getOutputStream()) {
            in.write(stdin);
        } catch (IOException e) {
            // the program exited without reading its input: its exit code and stderr tell why
        }
        try {
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
                throw new AssertionError(
                        String.join(" ", command) + " did not finish within " + timeout.toSeconds() + " s; stderr:\n"
                                + text(stderr.getNow(new byte[0])));
            }
            String err = text(stderr.get(10, TimeUnit.SECONDS));
            String out = text(stdout.get(10, TimeUnit.SECONDS));
            if (process.exitValue() != 0) {
                throw new AssertionError(String.join(" ", command) + " exited with " + process.exitValue() + "; stderr:\n" + err
                        + (out.isEmpty() ? "" : "\nstdout:\n" + out));
            }
            if (!err.isBlank()) {
                System.err.println(
                        "[" + command.get(command.size() > 1 && command.get(0).equals("node") ? 1 : 0) + "] " + err.strip());
            }
            return out;
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while running " + String.join(" ", command), e);
        } catch (ExecutionException | TimeoutException e) {
            throw new AssertionError("could not read the output of " + String.join(" ", command), e);
        }
    }

    private static byte[] readAll(InputStream in) {
        try (in; ByteArrayOutputStream out = new ByteArrayOutputStream()) {
            in.transferTo(out);
            return out.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String text(byte[] bytes) {
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private ExternalCommand() {
    }
}
