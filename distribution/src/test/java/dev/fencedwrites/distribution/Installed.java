package dev.fencedwrites.distribution;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The distribution archive the build made ({@code target/fenced-writes-<version>.tar.gz}, passed in by failsafe), unpacked
 * with {@code tar} into a directory outside the repository, and its launchers run as a user would.
 */
final class Installed {
    /**
     * The settings of the environment the launchers must not inherit (with every FENCE_ENFORCER_* and FENCE_ETCD_*
     * variable): the command line and the enforcer would take them over their files.
     */
    private static final List<String> STACK_VARIABLES = List.of("KAFKA_BOOTSTRAP", "ETCD_ENDPOINTS", "SCHEMA_REGISTRY_URL",
            "POSTGRES_URL", "ENFORCER_URL", "LOG4J2_CONFIG", "FENCE_OPTS", "FENCE_HEAP_OPTS");

    final Path home;
    final String version;

    private Installed(Path home, String version) {
        this.home = home;
        this.version = version;
    }

    /** Unpacks the archive into {@code into} (which must be empty) and returns its top directory. */
    static Installed unpack(Path into) throws Exception {
        String version = System.getProperty("distribution.version");
        Path archive = Path.of(System.getProperty("distribution.archive", "target/missing.tar.gz"));
        assertThat(archive).as("the archive `mvn package` builds (run the ITs through Maven)").isRegularFile();
        assertThat(archive.getFileName().toString()).isEqualTo("fenced-writes-" + version + ".tar.gz");
        Run untar = run(new ProcessBuilder("tar", "-xzf", archive.toString(), "-C", into.toString()), Map.of());
        assertThat(untar.exit()).as(untar.output()).isZero();
        try (var top = Files.list(into)) {
            assertThat(top.map(p -> p.getFileName().toString())).containsExactly("fenced-writes-" + version);
        }
        return new Installed(into.resolve("fenced-writes-" + version), version);
    }

    /** Runs {@code bin/<launcher> args...} in {@code workDir} with the environment's stack settings removed, plus {@code env}. */
    Run launch(Path workDir, Map<String, String> env, String launcher, String... args) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(home.resolve("bin").resolve(launcher).toString());
        command.addAll(List.of(args));
        return run(new ProcessBuilder(command).directory(workDir.toFile()), env);
    }

    /** A process with the environment's stack settings removed and {@code env} added ({@code null} values remove). */
    static ProcessBuilder withEnvironment(ProcessBuilder builder, Map<String, String> env) {
        STACK_VARIABLES.forEach(builder.environment()::remove);
        builder.environment().keySet().removeIf(name -> name.startsWith("FENCE_ENFORCER_") || name.startsWith("FENCE_ETCD_"));
        env.forEach((name, value) -> {
            if (value == null) {
                builder.environment().remove(name);
            } else {
                builder.environment().put(name, value);
            }
        });
        return builder;
    }

    /** Runs {@code builder}'s command to its end (at most 3 minutes) with {@link #withEnvironment}. */
    static Run run(ProcessBuilder builder, Map<String, String> env) throws Exception {
        Path out = Files.createTempFile("fenced-writes-run-", ".out");
        Path err = Files.createTempFile("fenced-writes-run-", ".err");
        try {
            Process process = withEnvironment(builder, env).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            assertThat(process.waitFor(3, TimeUnit.MINUTES)).as("%s finished", builder.command()).isTrue();
            return new Run(process.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
                    Files.readString(err, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    /** What a finished command printed, and its exit status. */
    record Run(int exit, String out, String err) {
        String output() {
            return "exit " + exit + "\n--- stdout ---\n" + out + "--- stderr ---\n" + err;
        }
    }

    /** A file's text, UTF-8. */
    static String read(Path file) {
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
