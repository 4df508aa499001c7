package dev.fencedwrites.services;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;

/**
 * A KRaft cluster of several nodes on loopback, each a child JVM in combined mode (broker + controller), for tests that
 * kill and restart brokers.
 *
 * <p>Node {@code i} has node id {@code i + 1}, its own client and controller ports, data dir
 * ({@code <dir>/node-<i + 1>/data}, named after the node id that messages name) and log
 * ({@code <dir>/node-<i + 1>/kafka.log}, appended across restarts), all kept for the cluster's life, so
 * {@link #bootstrap()} stays valid across {@link #kill}/{@link #restart}. The quorum is static
 * ({@code controller.quorum.voters}, every node a voter): with a fixed set of nodes nothing needs the dynamic quorum's
 * membership changes (KIP-853), and a static voter restarts from its data dir with the same command. Every topic has the
 * replication factor {@code nodes} by default and {@code min.insync.replicas = nodes - 1}; so do the offsets,
 * transaction-state and share-state topics. Not thread-safe: drive it from one thread.
 */
public final class KafkaCluster implements AutoCloseable {
    private static final Duration START_TIMEOUT = Duration.ofSeconds(300);
    private static final Duration REJOIN_TIMEOUT = Duration.ofSeconds(300);
    private static final Duration EXIT_TIMEOUT = Duration.ofSeconds(30);

    private final List<Path> dirs;
    private final List<Path> configs;
    private final List<Integer> ports;
    private final Path log4j2;
    private final String heap;
    private final Map<String, String> client;
    private final ChildProcess[] processes;

    private KafkaCluster(List<Path> dirs, List<Path> configs, List<Integer> ports, Path log4j2, String heap,
            Map<String, String> client) {
        this.dirs = dirs;
        this.client = client;
        this.configs = configs;
        this.ports = ports;
        this.log4j2 = log4j2;
        this.heap = heap;
        this.processes = new ChildProcess[dirs.size()];
    }

    /**
     * Formats and starts {@code nodes} nodes under {@code dir} and waits (up to 300 s: minutes on a loaded machine) until every
     * broker is registered.
     *
     * @param heap each node's maximum heap ({@code -Xmx}), e.g. {@code 512m}
     * @throws IllegalArgumentException if {@code nodes < 1}
     * @throws IllegalStateException    if a node exits or the cluster is not ready in time (with that node's log tail);
     *                                  every started node is stopped then
     */
    public static KafkaCluster start(Path dir, Path log4j2, int nodes, String heap) throws Exception {
        return start(dir, log4j2, nodes, heap, null);
    }

    /**
     * Like {@link #start(Path, Path, int, String)}, secured by {@code security} when it is not {@code null}, as
     * {@link KafkaBroker} secures its node: a {@code SASL_SSL} listener for clients and between brokers, every user of
     * {@code security} created (SCRAM) when the storage is formatted, ACLs with only {@link KafkaSecurity#ADMIN} as super
     * user. Readiness checks connect as that super user.
     */
    public static KafkaCluster start(Path dir, Path log4j2, int nodes, String heap, KafkaSecurity security)
            throws Exception {
        if (nodes < 1) {
            throw new IllegalArgumentException("a Kafka cluster needs at least 1 node, got " + nodes);
        }
        List<Integer> clientPorts = new ArrayList<>();
        List<Integer> controllerPorts = new ArrayList<>();
        while (clientPorts.size() < nodes) {
            int client = FreePorts.pick();
            int controller = FreePorts.pick();
            if (client != controller && !clientPorts.contains(client) && !clientPorts.contains(controller)
                    && !controllerPorts.contains(client) && !controllerPorts.contains(controller)) {
                clientPorts.add(client);
                controllerPorts.add(controller);
            }
        }
        String voters = IntStream.range(0, nodes).mapToObj(i -> (i + 1) + "@127.0.0.1:" + controllerPorts.get(i))
                .collect(Collectors.joining(","));
        String clusterId = Uuid.randomUuid().toString();
        List<Path> dirs = new ArrayList<>();
        List<Path> configs = new ArrayList<>();
        for (int i = 0; i < nodes; i++) {
            Path nodeDir = Files.createDirectories(dir.resolve("node-" + (i + 1)));
            Map<String, String> settings = KafkaNodes.settings(i + 1, security == null ? "PLAINTEXT" : "SASL_SSL",
                    clientPorts.get(i), controllerPorts.get(i), nodeDir.resolve("data"), nodes);
            settings.put("controller.quorum.voters", voters);
            if (security != null) {
                settings.putAll(security.brokerProperties());
            }
            Path config = PropertiesFiles.write(nodeDir.resolve("server.properties"), settings);
            // A static quorum is formatted with neither --standalone nor --initial-controllers.
            KafkaNodes.format(nodeDir, log4j2, config, clusterId, security == null ? List.of() : security.formatArguments());
            dirs.add(nodeDir);
            configs.add(config);
        }
        KafkaCluster cluster = new KafkaCluster(List.copyOf(dirs), List.copyOf(configs), List.copyOf(clientPorts), log4j2,
                heap, security == null ? Map.of() : security.client(KafkaSecurity.ADMIN));
        try {
            for (int i = 0; i < nodes; i++) {
                cluster.launch(i);
            }
            for (int i = 0; i < nodes; i++) {
                cluster.awaitRegistered(i, START_TIMEOUT);
            }
            return cluster;
        } catch (Exception | Error e) {
            cluster.close();
            throw e;
        }
    }

    /** Every node's {@code 127.0.0.1:PORT}, comma-separated, in node order: a {@code bootstrap.servers} value. */
    public String bootstrap() {
        return ports.stream().map(port -> "127.0.0.1:" + port).collect(Collectors.joining(","));
    }

    /** How many nodes the cluster has, running or not. */
    public int size() {
        return dirs.size();
    }

    /** Node {@code node}'s id ({@code node.id}): {@code node + 1}. */
    public int nodeId(int node) {
        return check(node) + 1;
    }

    /** Whether node {@code node}'s process is running. */
    public boolean isRunning(int node) {
        ChildProcess process = processes[check(node)];
        return process != null && process.isAlive();
    }

    /** Node {@code node}'s current process (signals, pid, log), or {@code null} before its first start. */
    public ChildProcess process(int node) {
        return processes[check(node)];
    }

    /**
     * SIGKILLs node {@code node} and waits (up to 30 s) until its process has exited; its ports and data dir are kept for
     * {@link #restart}.
     *
     * @throws IllegalStateException if the node is not running or does not exit
     */
    public void kill(int node) throws InterruptedException {
        ChildProcess process = processes[check(node)];
        if (process == null || !process.isAlive()) {
            throw new IllegalStateException("Kafka node " + nodeId(node) + " is not running");
        }
        process.signal("KILL");
        if (process.waitFor(EXIT_TIMEOUT) == -1) {
            throw new IllegalStateException("Kafka node " + nodeId(node) + " (pid " + process.pid() + ") still running "
                    + EXIT_TIMEOUT.toSeconds() + " s after SIGKILL");
        }
    }

    /**
     * Starts a stopped node again with the same node id, ports and data dir, and returns once it has rejoined: its broker
     * is registered and no partition of any topic (internal ones included) is under-replicated, i.e. every replica it
     * holds is back in sync (waits up to 300 s).
     *
     * @throws IllegalStateException if the node is still running, exits, or has not rejoined in time (the new process is
     *                               stopped then)
     */
    public void restart(int node) throws InterruptedException {
        if (isRunning(node)) {
            throw new IllegalStateException("Kafka node " + nodeId(node) + " is still running; kill it first");
        }
        launch(node);
        try {
            awaitRegistered(node, REJOIN_TIMEOUT);
            Await.until("no under-replicated partition after Kafka node " + nodeId(node) + " restarted", REJOIN_TIMEOUT,
                    processes[node], this::fullyReplicated);
        } catch (InterruptedException | RuntimeException e) {
            processes[node].close();
            throw e;
        }
    }

    private void launch(int node) {
        processes[node] = KafkaNodes.launch("kafka node " + nodeId(node), dirs.get(node), log4j2, configs.get(node), heap);
    }

    private void awaitRegistered(int node, Duration timeout) throws InterruptedException {
        int id = nodeId(node);
        String address = "127.0.0.1:" + ports.get(node);
        Await.until("Kafka node " + id + " at " + address + " registered", timeout, processes[node],
                () -> KafkaNodes.nodes(address, client).stream().map(Node::id).anyMatch(n -> n == id));
    }

    private boolean fullyReplicated() throws Exception {
        try (Admin admin = KafkaNodes.admin(bootstrap(), client)) {
            long seconds = client.isEmpty() ? 3 : 15;
            List<String> topics = List.copyOf(admin.listTopics(new ListTopicsOptions().listInternal(true)).names()
                    .get(seconds, TimeUnit.SECONDS));
            Map<String, TopicDescription> descriptions = admin.describeTopics(topics).allTopicNames()
                    .get(seconds, TimeUnit.SECONDS);
            for (TopicDescription description : descriptions.values()) {
                for (TopicPartitionInfo partition : description.partitions()) {
                    if (partition.isr().size() < partition.replicas().size()) {
                        return false;
                    }
                }
            }
            return true;
        }
    }

    private int check(int node) {
        return Objects.checkIndex(node, dirs.size());
    }

    /** Stops every running node (SIGTERM, SIGKILL for any still running 20 s later), all at once. */
    @Override
    public void close() {
        ChildProcess.stopAll(Arrays.asList(processes), Duration.ofSeconds(20));
    }
}
