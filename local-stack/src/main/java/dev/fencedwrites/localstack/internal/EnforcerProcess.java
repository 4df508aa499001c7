package dev.fencedwrites.localstack.internal;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The fence enforcer ({@code FenceEnforcerApp}) as a child JVM, ready when {@code /health} says RUNNING. */
public final class EnforcerProcess implements AutoCloseable {
    static final String MAIN_CLASS = "dev.fencedwrites.enforcer.FenceEnforcerApp";

    private final ChildProcess process;
    private final String url;

    private EnforcerProcess(ChildProcess process, String url) {
        this.process = process;
        this.url = url;
    }

    public static EnforcerProcess start(Path dir, Path log4j2, String bootstrap) throws Exception {
        Files.createDirectories(dir);
        int port = FreePorts.pick();
        Map<String, String> config = new LinkedHashMap<>();
        config.put("bootstrap.servers", bootstrap);
        config.put("state.dir", dir.resolve("state").toString());
        config.put("http.host", "127.0.0.1");
        config.put("http.port", Integer.toString(port));
        config.put("streams.commit.interval.ms", "100");
        Path file = PropertiesFiles.write(dir.resolve("enforcer.properties"), config);
        ChildProcess process = ChildProcess.start("enforcer", Jvm.command(List.of("-Xmx512m"), log4j2, MAIN_CLASS,
                List.of("--config", file.toString())), dir, dir.resolve("enforcer.log"), Map.of());
        String url = "http://127.0.0.1:" + port;
        EnforcerProcess enforcer = new EnforcerProcess(process, url);
        try {
            Await.until("the enforcer at " + url, Duration.ofSeconds(120), process, () -> Http.ok(url + "/health"));
        } catch (Exception e) {
            enforcer.close();
            throw e;
        }
        return enforcer;
    }

    public String url() {
        return url;
    }

    public ChildProcess process() {
        return process;
    }

    @Override
    public void close() {
        process.close();
    }
}
