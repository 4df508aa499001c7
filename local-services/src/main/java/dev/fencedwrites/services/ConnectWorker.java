package dev.fencedwrites.services;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.jar.JarFile;

/**
 * A Kafka Connect standalone worker as a child JVM, loading connector plugins from
 * {@code plugin.path} with {@code plugin.discovery=service_load} (or as {@link Plugins} says). Keys are strings, values and
 * headers raw bytes, so records reach the sink and the dead-letter topic byte for byte.
 */
public final class ConnectWorker {
    private static final ObjectMapper JSON = new ObjectMapper();

    private ConnectWorker() {
    }

    /**
     * The Prometheus JMX exporter java agent for the worker: its jar, its rules file and the
     * loopback port it serves {@code /metrics} on.
     */
    public record MetricsAgent(Path jar, Path rules, int port) {
        /** {@code http://127.0.0.1:PORT/metrics}. */
        public String url() {
            return "http://127.0.0.1:" + port + "/metrics";
        }

        String jvmArgument() {
            for (Path file : List.of(jar, rules)) {
                if (!Files.isRegularFile(file)) {
                    throw new IllegalStateException(
                            "JMX exporter file " + file + " not found; run the build (mvn package) first");
                }
            }
            return "-javaagent:" + jar + "=127.0.0.1:" + port + ":" + rules;
        }
    }

    /**
     * Where the worker finds its plugins ({@code plugin.path}, {@code plugin.discovery}) and the class path it runs
     * on.
     *
     * @param path      a directory whose sub-directories are plugins
     * @param discovery {@code plugin.discovery} (KIP-898): {@code only_scan}, {@code hybrid_warn}, {@code hybrid_fail}
     *                  or {@code service_load}
     * @param classPath the worker JVM's class path
     */
    public record Plugins(Path path, String discovery, String classPath) {
        /**
         * Plugins from {@code path} found by their ServiceLoader manifests, the worker on this JVM's class path minus
         * every entry that is itself a connector plugin (it declares a {@value #CONNECTOR_SERVICES}* service): a plugin on
         * the worker's class path is loaded from there, without its own dependencies, instead of from its plugin
         * directory (Connect's user guide: plugins go in {@code plugin.path}). {@code fence verify} has the sink's jar on
         * its class path for the sink's column mapping.
         */
        public static Plugins serviceLoad(Path path) {
            StringBuilder classPath = new StringBuilder();
            for (String entry : Jvm.classPath().split(File.pathSeparator)) {
                if (!declaresConnector(Path.of(entry))) {
                    classPath.append(classPath.length() == 0 ? "" : File.pathSeparator).append(entry);
                }
            }
            return new Plugins(path, "service_load", classPath.toString());
        }

        /** The ServiceLoader manifests of Connect's connector interfaces. */
        static final String CONNECTOR_SERVICES = "META-INF/services/org.apache.kafka.connect.";

        private static boolean declaresConnector(Path entry) {
            for (String kind : List.of("sink.SinkConnector", "source.SourceConnector")) {
                if (Files.isDirectory(entry) && Files.exists(entry.resolve(CONNECTOR_SERVICES + kind))) {
                    return true;
                }
                if (Files.isRegularFile(entry) && entry.toString().endsWith(".jar")) {
                    try (JarFile jar = new JarFile(entry.toFile())) {
                        if (jar.getEntry(CONNECTOR_SERVICES + kind) != null) {
                            return true;
                        }
                    } catch (IOException e) {
                        return false;
                    }
                }
            }
            return false;
        }
    }

    /**
     * Starts the worker with {@code connectors} (name → connector config) and waits (up to 150 s) until its
     * REST API answers and every connector's tasks are RUNNING.
     *
     * @param pluginPath a directory whose sub-directories are plugins
     * @param metrics    the JMX exporter agent to run in the worker, or {@code null} for none
     * @return the service; its address is the REST URL
     * @throws IllegalStateException if the plugin directory is missing, a connector's task FAILED (with its trace),
     *                               or the worker exits or is not ready in time (with its log's tail)
     */
    public static Service start(Path dir, Path log4j2, String bootstrap, Path pluginPath,
            Map<String, Map<String, String>> connectors,
            MetricsAgent metrics) throws Exception {
        return start(dir, log4j2, bootstrap, pluginPath, connectors, metrics, Map.of());
    }

    /**
     * Like {@link #start(Path, Path, String, Path, Map, MetricsAgent)}, with {@code clientSettings} (e.g.
     * {@link KafkaSecurity#client(String)}) for every Kafka client of the worker: its own (top level) and, with Connect's
     * prefixes, its sink tasks' consumers ({@code consumer.}), the dead-letter queue's producer ({@code producer.}) and
     * admin client ({@code admin.}); Connect does not pass top-level client settings to those (Kafka docs, "Kafka Connect
     * Configs": worker configs and "producer." / "consumer." / "admin." overrides).
     */
    public static Service start(Path dir, Path log4j2, String bootstrap, Path pluginPath,
            Map<String, Map<String, String>> connectors,
            MetricsAgent metrics, Map<String, String> clientSettings) throws Exception {
        return start(dir, log4j2, bootstrap, Plugins.serviceLoad(pluginPath), connectors, metrics, clientSettings);
    }

    /**
     * Starts the worker as {@link #start(Path, Path, String, Path, Map, MetricsAgent, Map)} does, with its plugins and
     * class path from {@code plugins}.
     */
    public static Service start(Path dir, Path log4j2, String bootstrap, Plugins plugins,
            Map<String, Map<String, String>> connectors,
            MetricsAgent metrics, Map<String, String> clientSettings) throws Exception {
        Files.createDirectories(dir);
        int port = FreePorts.pick();
        String url = "http://127.0.0.1:" + port;
        Map<String, String> worker = settings(bootstrap, plugins, url, clientSettings);
        worker.put("offset.storage.file.filename", dir.resolve("connect.offsets").toString());
        List<String> args = new ArrayList<>();
        args.add(PropertiesFiles.write(dir.resolve("worker.properties"), worker).toString());
        for (Map.Entry<String, Map<String, String>> connector : connectors.entrySet()) {
            Map<String, String> config = new LinkedHashMap<>(connector.getValue());
            config.put("name", connector.getKey());
            args.add(PropertiesFiles.write(dir.resolve(connector.getKey() + ".properties"), config).toString());
        }
        ChildProcess process = ChildProcess.start("connect", Jvm.command(
                metrics == null ? List.of("-Xmx512m") : List.of("-Xmx512m", metrics.jvmArgument()), plugins.classPath(),
                log4j2, "org.apache.kafka.connect.cli.ConnectStandalone", args), dir, dir.resolve("connect.log"), Map.of());
        return process.awaitReady(url, Duration.ofSeconds(150), () -> {
            if (!Http.ok(url + "/")) {
                return false;
            }
            for (String name : connectors.keySet()) {
                if (!running(url, name)) {
                    return false;
                }
            }
            return true;
        });
    }

    /**
     * The settings a standalone and a distributed worker share: converters (string keys, raw-byte values and headers), the
     * REST listener, the plugins, {@code offset.flush.interval.ms=1000}, and the sink tasks' consumers reading from the
     * earliest offset with {@code read_committed}; {@code clientSettings} go to the worker's own clients and, with
     * Connect's prefixes, to its tasks' consumers, the dead-letter queue's producer and admin client.
     */
    static Map<String, String> settings(String bootstrap, Plugins plugins, String url, Map<String, String> clientSettings) {
        Path pluginPath = plugins.path();
        if (!Files.isDirectory(pluginPath)) {
            throw new IllegalStateException(
                    "Connect plugin directory " + pluginPath + " not found; run the build (mvn package) first");
        }
        Map<String, String> worker = new LinkedHashMap<>();
        worker.put("bootstrap.servers", bootstrap);
        worker.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
        worker.put("value.converter", "org.apache.kafka.connect.converters.ByteArrayConverter");
        worker.put("header.converter", "org.apache.kafka.connect.converters.ByteArrayConverter");
        worker.put("offset.flush.interval.ms", "1000");
        worker.put("listeners", url);
        worker.put("plugin.path", pluginPath.toString());
        worker.put("plugin.discovery", plugins.discovery());
        worker.put("consumer.auto.offset.reset", "earliest");
        // Sinks read only what the enforcer committed.
        worker.put("consumer.isolation.level", "read_committed");
        for (String prefix : List.of("", "consumer.", "producer.", "admin.")) {
            clientSettings.forEach((key, value) -> worker.put(prefix + key, value));
        }
        return worker;
    }

    static boolean running(String url, String name) throws Exception {
        HttpResponse<String> response = Http.get(url + "/connectors/" + name + "/status");
        if (response.statusCode() != 200) {
            return false;
        }
        JsonNode status = JSON.readTree(response.body());
        JsonNode tasks = status.path("tasks");
        for (JsonNode task : tasks) {
            if ("FAILED".equals(task.path("state").asText())) {
                throw new Await.GiveUp("connector " + name + " task failed: " + task.path("trace").asText());
            }
        }
        return tasks.size() > 0 && "RUNNING".equals(tasks.get(0).path("state").asText());
    }

}
