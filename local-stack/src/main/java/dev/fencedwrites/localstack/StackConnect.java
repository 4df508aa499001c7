package dev.fencedwrites.localstack;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fencedwrites.services.Await;
import dev.fencedwrites.services.ConnectWorker;
import dev.fencedwrites.services.DistributedConnectWorker;
import dev.fencedwrites.services.FreePorts;
import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.Service;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The stack's Connect cluster: {@code count} distributed workers of group {@value #GROUP_ID}, each with its own directory
 * ({@code connect} for the first, {@code connect-<i>} for the others), REST port and JMX exporter port, all kept across
 * {@link #restart}. Connectors are created through the REST API. Readiness of the connectors is judged from each live
 * worker's own metrics ({@code connector-running-task-count}): after a SIGKILL the status topic still says RUNNING for
 * the dead worker's tasks until they start elsewhere, while a worker's metrics count only the tasks it runs.
 */
final class StackConnect implements AutoCloseable {
    /** The Connect cluster's {@code group.id}; its internal topics are {@code <group.id>-configs}, -offsets, -status. */
    static final String GROUP_ID = "fence-connect";
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(180);
    private static final Duration EXIT_TIMEOUT = Duration.ofSeconds(30);

    private final Path dir;
    private final Path log4j2;
    private final String bootstrap;
    private final ConnectWorker.Plugins plugins;
    private final Map<String, String> clientSettings;
    private final Map<String, String> workerSettings;
    private final int[] ports;
    private final ConnectWorker.MetricsAgent[] agents;
    private final Service[] services;
    /** One start per worker at a time; after {@link #close} a worker whose start was under way is stopped once it is up. */
    private final InstanceStarts<Service> starts;
    private Map<String, Map<String, String>> connectors = Map.of();

    StackConnect(Path dir, Path log4j2, String bootstrap, ConnectWorker.Plugins plugins, Path agentJar, Path agentRules,
            int count, Map<String, String> clientSettings, Map<String, String> workerSettings) {
        this.dir = dir;
        this.log4j2 = log4j2;
        this.bootstrap = bootstrap;
        this.plugins = plugins;
        this.clientSettings = Map.copyOf(clientSettings);
        this.workerSettings = Map.copyOf(workerSettings);
        this.ports = new int[count];
        this.agents = new ConnectWorker.MetricsAgent[count];
        this.services = new Service[count];
        this.starts = new InstanceStarts<>("Connect worker", count);
        for (int i = 0; i < count; i++) {
            ports[i] = FreePorts.pick();
            agents[i] = new ConnectWorker.MetricsAgent(agentJar, agentRules, FreePorts.pick());
        }
    }

    /**
     * Starts worker {@code i} and returns once it has joined the Connect cluster ({@code /health} answers 200).
     *
     * @throws IllegalStateException when worker {@code i} runs or is starting already, or the workers were closed while it
     *                               started (a fault run stopping in the middle of a restart: the new worker is stopped)
     */
    Service start(int i) throws Exception {
        return starts
                .start(check(i), () -> alive(i),
                        () -> DistributedConnectWorker.start(dir.resolve(i == 0 ? "connect" : "connect-" + i),
                                log4j2, bootstrap, plugins, GROUP_ID, ports[i], agents[i], clientSettings, workerSettings),
                        started -> {
                            synchronized (this) {
                                services[i] = started;
                            }
                        });
    }

    /**
     * Creates {@code configs} (name → config) through a worker's REST API and waits until every task of each runs and every
     * live worker runs at least one task.
     */
    void createConnectors(Map<String, Map<String, String>> configs) throws InterruptedException {
        connectors = new LinkedHashMap<>(configs);
        for (Map.Entry<String, Map<String, String>> connector : configs.entrySet()) {
            DistributedConnectWorker.putConnector(liveUrls().get(0), connector.getKey(), connector.getValue());
        }
        awaitConnectors();
    }

    /** Whether worker {@code i}'s process is running. */
    synchronized boolean alive(int i) {
        return services[check(i)] != null && services[i].process().isAlive();
    }

    /** Worker {@code i}'s process id (a restart gives a new one). */
    synchronized long pid(int i) {
        if (!alive(i)) {
            throw new IllegalStateException("Connect worker " + i + " is not running");
        }
        return services[i].process().pid();
    }

    /** Sends worker {@code i} a signal ({@code STOP}, {@code CONT}). */
    synchronized void signal(int i, String signal) {
        if (!alive(i)) {
            throw new IllegalStateException("Connect worker " + i + " is not running");
        }
        services[i].process().signal(signal);
    }

    /** SIGKILLs worker {@code i}, as a crash would (no offset commit, no task stop, no leaving the group). */
    synchronized void kill(int i) throws InterruptedException {
        Service service = services[check(i)];
        if (service == null || !service.process().isAlive()) {
            throw new IllegalStateException("Connect worker " + i + " is not running");
        }
        service.process().signal("KILL");
        if (service.process().waitFor(EXIT_TIMEOUT) == -1) {
            throw new IllegalStateException("Connect worker " + i + " still running " + EXIT_TIMEOUT.toSeconds()
                    + " s after SIGKILL");
        }
    }

    /**
     * Starts a stopped worker again (same directory and ports) and waits as {@link #createConnectors} does; refused while it
     * runs or starts.
     */
    Service restart(int i) throws Exception {
        Service service = start(i);
        awaitConnectors();
        return service;
    }

    private void awaitConnectors() throws InterruptedException {
        Await.until("connectors " + connectors.keySet() + " running on the live Connect workers " + liveUrls(), READY_TIMEOUT,
                null, this::connectorsRunning);
    }

    private boolean connectorsRunning() throws Exception {
        List<Integer> live = live();
        if (live.isEmpty()) {
            throw new Await.GiveUp("no Connect worker is running");
        }
        int[] perWorker = new int[ports.length];
        int tasks = 0;
        for (String name : connectors.keySet()) {
            JsonNode status = DistributedConnectWorker.status(url(live.get(0)), name);
            int expected = status.path("tasks").size();
            for (JsonNode task : status.path("tasks")) {
                if ("FAILED".equals(task.path("state").asText())) {
                    throw new Await.GiveUp("connector " + name + " task " + task.path("id") + " failed: "
                            + task.path("trace").asText());
                }
            }
            int running = 0;
            for (int i : live) {
                int count = runningTasks(agents[i].url(), name);
                perWorker[i] += count;
                running += count;
            }
            if (expected == 0 || running != expected) {
                return false;
            }
            tasks += expected;
        }
        for (int i : live) {
            if (tasks >= live.size() && perWorker[i] == 0) {
                return false; // a rebalance still has to give this worker its share
            }
        }
        return true;
    }

    private static final Pattern RUNNING_TASKS = Pattern.compile(
            "^kafka_connect_worker_connector_running_task_count\\{([^}]*)\\}\\s+(\\S+)$", Pattern.MULTILINE);

    /** The tasks of {@code connector} a worker runs, from its {@code /metrics}; 0 when it runs none (no such series). */
    private static int runningTasks(String metricsUrl, String connector) throws Exception {
        Matcher matcher = RUNNING_TASKS.matcher(Http.get(metricsUrl).body());
        while (matcher.find()) {
            if (matcher.group(1).contains("connector=\"" + connector + "\"")) {
                return (int) Double.parseDouble(matcher.group(2));
            }
        }
        return 0;
    }

    private synchronized List<Integer> live() {
        List<Integer> live = new ArrayList<>();
        for (int i = 0; i < services.length; i++) {
            if (services[i] != null && services[i].process().isAlive()) {
                live.add(i);
            }
        }
        return live;
    }

    private List<String> liveUrls() {
        return live().stream().map(this::url).toList();
    }

    private String url(int i) {
        return "http://127.0.0.1:" + ports[i];
    }

    /** Every worker's REST URL, by index; the same across restarts. */
    List<String> urls() {
        List<String> urls = new ArrayList<>();
        for (int i = 0; i < ports.length; i++) {
            urls.add(url(i));
        }
        return urls;
    }

    /** Worker {@code i}'s Prometheus metrics URL. */
    String metricsUrl(int i) {
        return agents[check(i)].url();
    }

    /** How many workers the Connect cluster has. */
    int count() {
        return ports.length;
    }

    private int check(int i) {
        return Objects.checkIndex(i, ports.length);
    }

    /** Stops every worker still running, all at once (SIGTERM, SIGKILL 20 s later). */
    @Override
    public void close() {
        starts.close();
        InstanceStarts.stopRunning(this, services);
    }
}
