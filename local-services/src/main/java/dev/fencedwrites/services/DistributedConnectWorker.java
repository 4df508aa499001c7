package dev.fencedwrites.services;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A Kafka Connect worker in distributed mode ({@code ConnectDistributed}) as a child JVM: workers with one
 * {@code group.id} form a Connect cluster that keeps connector configs, source offsets and statuses in Kafka topics and
 * balances connectors and tasks over its members (incremental cooperative rebalancing, KIP-415). Connectors are created
 * through the REST API ({@link #putConnector}), as in production. Keys are strings, values and headers raw bytes, as
 * {@link ConnectWorker}'s.
 *
 * <p>Settings (each may be overridden by the caller's {@code workerSettings}):
 * <ul>
 * <li>{@code config.storage.topic}, {@code offset.storage.topic}, {@code status.storage.topic}: {@code <group.id>-configs},
 * {@code -offsets}, {@code -status}, each with {@code replication.factor=-1}, i.e. the brokers'
 * {@code default.replication.factor} (KIP-464) and {@code min.insync.replicas}; 5 offset partitions (sinks keep their
 * offsets in their consumer group, no source connector runs here) and 3 status partitions.</li>
 * <li>{@code session.timeout.ms=10000}, {@code heartbeat.interval.ms=3000}: Connect's defaults; a worker killed without
 * leaving the group is noticed after 10 s.</li>
 * <li>{@code scheduled.rebalance.max.delay.ms=2000} instead of Connect's 5 minutes (KIP-415): a departed worker's
 * connectors and tasks wait 2 s for it to come back, then move to the others, so a dead worker's tasks move within
 * seconds (about 10 s to notice it, 2 s of delay, then the tasks start).</li>
 * <li>{@code consumer.session.timeout.ms=10000} for the sink tasks' consumers (Kafka's default before 3.0 raised it to
 * 45 s in KIP-735): a killed worker's task consumers leave their group after 10 s, so the moved tasks get their
 * partitions without waiting 45 s.</li>
 * </ul>
 */
public final class DistributedConnectWorker {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient CLIENT = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    private DistributedConnectWorker() {
    }

    /**
     * Starts one worker of the Connect cluster {@code groupId} on {@code port} and waits (up to 150 s) until its
     * {@code GET /health} answers 200 (KIP-1017: the worker has started and joined its group).
     *
     * @param port           the REST port; pass the same one to restart a worker under its old worker id
     * @param metrics        the JMX exporter agent to run in the worker, or {@code null} for none
     * @param clientSettings settings for every Kafka client of the worker (see {@link ConnectWorker})
     * @param workerSettings further worker settings, applied last
     * @return the service; its address is the REST URL
     * @throws IllegalStateException if the plugin directory is missing, or the worker exits or is not ready in time (with
     *                               its log's tail)
     */
    public static Service start(Path dir, Path log4j2, String bootstrap, ConnectWorker.Plugins plugins, String groupId,
            int port, ConnectWorker.MetricsAgent metrics, Map<String, String> clientSettings,
            Map<String, String> workerSettings) throws Exception {
        Files.createDirectories(dir);
        String url = "http://127.0.0.1:" + port;
        Map<String, String> worker = ConnectWorker.settings(bootstrap, plugins, url, clientSettings);
        worker.put("group.id", groupId);
        worker.put("config.storage.topic", groupId + "-configs");
        worker.put("offset.storage.topic", groupId + "-offsets");
        worker.put("status.storage.topic", groupId + "-status");
        worker.put("config.storage.replication.factor", "-1");
        worker.put("offset.storage.replication.factor", "-1");
        worker.put("status.storage.replication.factor", "-1");
        worker.put("offset.storage.partitions", "5");
        worker.put("status.storage.partitions", "3");
        worker.put("session.timeout.ms", "10000");
        worker.put("heartbeat.interval.ms", "3000");
        worker.put("scheduled.rebalance.max.delay.ms", "2000");
        worker.put("consumer.session.timeout.ms", "10000");
        worker.putAll(workerSettings);
        Path file = PropertiesFiles.write(dir.resolve("worker.properties"), worker);
        List<String> jvm = new ArrayList<>(List.of("-Xmx512m"));
        if (metrics != null) {
            jvm.add(metrics.jvmArgument());
        }
        ChildProcess process = ChildProcess.start("connect worker " + port, Jvm.command(jvm, plugins.classPath(), log4j2,
                "org.apache.kafka.connect.cli.ConnectDistributed", List.of(file.toString())), dir, dir.resolve("connect.log"),
                Map.of());
        return process.awaitReady(url, Duration.ofSeconds(150), () -> Http.ok(url + "/health"));
    }

    /**
     * Creates or updates connector {@code name} with {@code config} ({@code PUT /connectors/NAME/config}), retrying while
     * the worker answers 400 (the connector's validation could not reach a service yet), 409 (a rebalance is under way) or
     * 5xx, for up to 60 s; a PUT of the same config is idempotent.
     *
     * @throws IllegalStateException if the worker refuses the config (another 4xx) or keeps failing for 60 s (the message
     *                               carries its last answer)
     */
    public static void putConnector(String url, String name, Map<String, String> config) throws InterruptedException {
        String body;
        try {
            body = JSON.writeValueAsString(config);
        } catch (Exception e) {
            throw new IllegalArgumentException("connector " + name + " config is not serializable: " + e.getMessage(), e);
        }
        HttpRequest request = HttpRequest.newBuilder(
                URI.create(url + "/connectors/" + URLEncoder.encode(name, StandardCharsets.UTF_8) + "/config"))
                .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
                .PUT(HttpRequest.BodyPublishers.ofString(body)).build();
        Await.until("connector " + name + " created at " + url, Duration.ofSeconds(60), null, () -> {
            HttpResponse<String> response = CLIENT.send(request, HttpResponse.BodyHandlers.ofString());
            int status = response.statusCode();
            if (status >= 400 && status < 500 && status != 409 && status != 400) {
                throw new Await.GiveUp("PUT " + request.uri() + " answered " + status + ": " + response.body());
            }
            if (status >= 400) {
                // 400 too: the connector's validation may need a service that is slow to answer on a loaded machine.
                throw new IllegalStateException("PUT " + request.uri() + " answered " + status + ": " + response.body());
            }
            return status == 200 || status == 201;
        });
    }

    /**
     * Connector {@code name}'s status ({@code GET /connectors/NAME/status}) as JSON: {@code connector.state},
     * {@code tasks[].id}, {@code .state}, {@code .worker_id}, {@code .trace}.
     *
     * @throws IllegalStateException if the worker does not answer 200
     */
    public static JsonNode status(String url, String name) throws Exception {
        HttpResponse<String> response = Http.get(url + "/connectors/" + URLEncoder.encode(name, StandardCharsets.UTF_8)
                + "/status");
        if (response.statusCode() != 200) {
            throw new IllegalStateException("status of connector " + name + " answered " + response.statusCode() + ": "
                    + response.body());
        }
        return JSON.readTree(response.body());
    }
}
