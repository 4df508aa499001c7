package dev.fencedwrites.localstack.internal;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * A Confluent-compatible schema registry: Apicurio Registry's distribution from Maven Central,
 * in-memory storage, bound to 127.0.0.1; the Confluent API is served at {@code /apis/ccompat/v7}.
 */
public final class SchemaRegistryServer {
    private SchemaRegistryServer() {
    }

    /**
     * @param home the unpacked distribution (holds {@code *-runner.jar} and {@code lib/})
     * @return the service; its address is the Confluent-compatible base URL for {@code schema.registry.url}
     */
    public static Service start(Path home, Path dir) throws Exception {
        Files.createDirectories(dir);
        Path runner;
        try (Stream<Path> files = Files.list(home)) {
            runner = files.filter(p -> p.getFileName().toString().endsWith("-runner.jar")).findFirst()
                    .orElseThrow(() -> new IllegalStateException("no *-runner.jar in " + home + "; run the build (mvn package) first"));
        } catch (java.nio.file.NoSuchFileException e) {
            throw new IllegalStateException("schema registry distribution not found at " + home + "; run the build (mvn package) first", e);
        }
        int port = FreePorts.pick();
        ChildProcess process = ChildProcess.start("schema-registry", List.of(Jvm.java(), "-Xmx384m",
                "-Dquarkus.http.host=127.0.0.1", "-Dquarkus.http.port=" + port,
                "-Dquarkus.banner.enabled=false", "-Dquarkus.log.level=WARN", "-jar", runner.toString()),
                dir, dir.resolve("schema-registry.log"), Map.of());
        String base = "http://127.0.0.1:" + port;
        return process.awaitReady(base + "/apis/ccompat/v7", Duration.ofSeconds(120), () -> Http.ok(base + "/health/ready"));
    }

}
