package dev.fencedwrites.services;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Stream;

/**
 * A Confluent-compatible schema registry: Apicurio Registry's distribution from Maven Central,
 * in-memory storage, bound to 127.0.0.1; the Confluent API is served at {@code /apis/ccompat/v7}.
 */
public final class SchemaRegistryServer {
    /** The environment variable that overrides where the distribution is ({@link #defaultHome()}). */
    public static final String HOME_VARIABLE = "FENCE_APICURIO_HOME";

    private SchemaRegistryServer() {
    }

    /**
     * Where the build unpacked Apicurio Registry ({@code local-services/target/apicurio}), unless
     * {@value #HOME_VARIABLE} names another directory.
     */
    public static Path defaultHome() {
        String configured = System.getenv(HOME_VARIABLE);
        if (configured != null && !configured.isBlank()) {
            return Path.of(configured);
        }
        Properties locations = new Properties();
        try (InputStream in = SchemaRegistryServer.class.getResourceAsStream("locations.properties")) {
            if (in != null) {
                locations.load(in);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read local-services' locations.properties", e);
        }
        String home = locations.getProperty("apicurio.home");
        if (home == null) {
            throw new IllegalStateException(
                    "no schema registry distribution known; set " + HOME_VARIABLE + " or run the build (mvn package)");
        }
        return Path.of(home);
    }

    /** Starts the registry from {@link #defaultHome()}, with its log in {@code dir}; see {@link #start(Path, Path)}. */
    public static Service start(Path dir) throws Exception {
        return start(defaultHome(), dir);
    }

    /**
     * Starts the registry on a free loopback port and waits (up to 120 s) until {@code /health/ready} answers 200.
     *
     * @param home the unpacked distribution (holds {@code *-runner.jar} and {@code lib/})
     * @param dir  where its log ({@code schema-registry.log}) goes; created if missing
     * @return the service; its address is the Confluent-compatible base URL for {@code schema.registry.url}
     * @throws IllegalStateException if the distribution is missing, or the registry exits or is not ready in time
     */
    public static Service start(Path home, Path dir) throws Exception {
        Files.createDirectories(dir);
        Path runner;
        try (Stream<Path> files = Files.list(home)) {
            runner = files.filter(p -> p.getFileName().toString().endsWith("-runner.jar")).findFirst()
                    .orElseThrow(() -> new IllegalStateException(
                            "no *-runner.jar in " + home + "; run the build (mvn package) first"));
        } catch (NoSuchFileException e) {
            throw new IllegalStateException(
                    "schema registry distribution not found at " + home + "; run the build (mvn package) first", e);
        }
        int port = FreePorts.pick();
        List<String> command = new ArrayList<>(List.of(Jvm.java()));
        command.addAll(Jvm.childOptions());
        command.addAll(List.of("-Xmx384m", "-Dquarkus.http.host=127.0.0.1", "-Dquarkus.http.port=" + port,
                "-Dquarkus.banner.enabled=false", "-Dquarkus.log.level=WARN", "-jar", runner.toString()));
        ChildProcess process = ChildProcess.start("schema-registry", command, dir, dir.resolve("schema-registry.log"), Map.of());
        String base = "http://127.0.0.1:" + port;
        // 300 s: Apicurio (Quarkus) starts in ~20 s on a quiet machine but takes minutes while a cluster starts beside it.
        return process.awaitReady(base + "/apis/ccompat/v7", Duration.ofSeconds(300), () -> Http.ok(base + "/health/ready"));
    }

}
