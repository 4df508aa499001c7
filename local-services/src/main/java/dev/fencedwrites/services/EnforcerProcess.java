package dev.fencedwrites.services;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The fence enforcer ({@code FenceEnforcerApp}) as a child JVM, ready when {@code /health/ready} says RUNNING (or, with
 * {@link #startServing}, as soon as its HTTP server answers).
 */
public final class EnforcerProcess {
    static final String MAIN_CLASS = "dev.fencedwrites.enforcer.FenceEnforcerApp";
    /** The application.id given unless the overrides name one. */
    public static final String APPLICATION_ID = "fence-enforcer";

    private EnforcerProcess() {
    }

    /** Starts the enforcer; the service's address is its HTTP base URL. */
    public static Service start(Path dir, Path log4j2, String bootstrap) throws Exception {
        return start(dir, log4j2, bootstrap, Map.of());
    }

    /**
     * Starts the enforcer with {@code overrides} on top of the local defaults (e.g.
     * {@code streams.session.timeout.ms}); restarting with the same {@code dir} reuses its state directory, and with the
     * same {@code http.port} among the overrides keeps its URL. The defaults choose what the enforcer requires to be
     * chosen: {@value #APPLICATION_ID}, and {@code token.verification.enable=false} unless the overrides name
     * {@code etcd.endpoints} or that setting.
     */
    public static Service start(Path dir, Path log4j2, String bootstrap, Map<String, String> overrides) throws Exception {
        return start(dir, log4j2, bootstrap, overrides, url -> Http.ok(url + "/health/ready"));
    }

    /**
     * Starts the enforcer and returns as soon as its HTTP server answers {@code /health/live}, whatever the status, before
     * Kafka Streams is RUNNING: for watching what it does meanwhile (joining the group, restoring its state store).
     */
    public static Service startServing(Path dir, Path log4j2, String bootstrap, Map<String, String> overrides)
            throws Exception {
        return start(dir, log4j2, bootstrap, overrides, url -> Http.get(url + "/health/live").statusCode() > 0);
    }

    /** Whether the enforcer at a base URL is up in some sense; exceptions count as not yet. */
    private interface Check {
        boolean passes(String url) throws Exception;
    }

    private static Service start(Path dir, Path log4j2, String bootstrap, Map<String, String> overrides, Check check)
            throws Exception {
        Files.createDirectories(dir);
        // A caller that restarts an enforcer passes its old http.port, so its URL stays the same.
        int port = overrides.containsKey("http.port") ? Integer.parseInt(overrides.get("http.port")) : FreePorts.pick();
        Map<String, String> config = new LinkedHashMap<>();
        config.put("bootstrap.servers", bootstrap);
        config.put("state.dir", dir.resolve("state").toString());
        config.put("http.host", "127.0.0.1");
        config.put("http.port", Integer.toString(port));
        config.put("streams.commit.interval.ms", "100");
        config.put("application.id", APPLICATION_ID);
        if (!overrides.containsKey("etcd.endpoints")) {
            config.put("token.verification.enable", "false");
        }
        config.putAll(overrides);
        Path file = PropertiesFiles.write(dir.resolve("enforcer.properties"), config);
        // Every setting is in the file: a shell's FENCE_ETCD_ENDPOINTS (which producer-lib's docs export for a worker) or
        // FENCE_ENFORCER_* would override it, and point this enforcer at another stack's etcd.
        ChildProcess process = ChildProcess.start("enforcer", Jvm.command(List.of("-Xmx512m"), log4j2, MAIN_CLASS,
                List.of("--config", file.toString())), dir, dir.resolve("enforcer.log"), Map.of(),
                List.of("FENCE_ENFORCER_", "FENCE_ETCD_"));
        String url = "http://127.0.0.1:" + port;
        // 240 s: a clustered stack starts two enforcers next to two Connect workers, on a loaded machine.
        return process.awaitReady(url, Duration.ofSeconds(240), () -> check.passes(url));
    }

}
