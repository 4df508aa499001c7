package dev.fencedwrites.services;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Node;

/**
 * What {@link KafkaBroker} and {@link KafkaCluster} share: one KRaft node's settings in combined mode (broker +
 * controller), its storage format and launch as a child JVM, and the readiness check through Admin.
 */
final class KafkaNodes {
    private KafkaNodes() {
    }

    /**
     * One node's {@code server.properties} without its quorum entry ({@code controller.quorum.voters} or
     * {@code controller.quorum.bootstrap.servers}, which the caller adds).
     *
     * @param replication the replication factor of every topic by default and of the offsets, transaction-state and
     *                    share-state topics; {@code min.insync.replicas} is {@code replication - 1} (at least 1), so one
     *                    node may be down while {@code acks=all} writes go on (Kafka docs, "Replication")
     */
    static Map<String, String> settings(int nodeId, String listener, int port, int controllerPort, Path dataDir,
            int replication) {
        String client = listener + "://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort;
        String factor = Integer.toString(replication);
        String minIsr = Integer.toString(Math.max(1, replication - 1));
        return new LinkedHashMap<>(Map.ofEntries(
                Map.entry("process.roles", "broker,controller"),
                Map.entry("node.id", Integer.toString(nodeId)),
                Map.entry("listeners", client),
                Map.entry("advertised.listeners", client),
                Map.entry("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"),
                Map.entry("controller.listener.names", "CONTROLLER"),
                Map.entry("inter.broker.listener.name", "PLAINTEXT"),
                Map.entry("log.dirs", dataDir.toString()),
                Map.entry("num.partitions", "1"),
                Map.entry("default.replication.factor", factor),
                Map.entry("min.insync.replicas", minIsr),
                Map.entry("offsets.topic.replication.factor", factor),
                Map.entry("offsets.topic.num.partitions", "1"),
                Map.entry("transaction.state.log.replication.factor", factor),
                Map.entry("transaction.state.log.min.isr", minIsr),
                Map.entry("transaction.state.log.num.partitions", "1"),
                Map.entry("share.coordinator.state.topic.replication.factor", factor),
                Map.entry("share.coordinator.state.topic.min.isr", minIsr),
                Map.entry("group.initial.rebalance.delay.ms", "0"),
                Map.entry("auto.create.topics.enable", "false")));
    }

    /** Formats a node's storage ({@code kafka-storage format}) with {@code extraArguments}; fails with the log's tail. */
    static void format(Path dir, Path log4j2, Path config, String clusterId, Collection<String> extraArguments)
            throws InterruptedException {
        format(dir, log4j2, Jvm.classPath(), config, clusterId, extraArguments);
    }

    /** As {@link #format(Path, Path, Path, String, Collection)}, with the broker's jars on {@code classPath}. */
    static void format(Path dir, Path log4j2, String classPath, Path config, String clusterId,
            Collection<String> extraArguments) throws InterruptedException {
        List<String> format = new ArrayList<>(List.of("format", "--config", config.toString(), "--cluster-id", clusterId,
                "--ignore-formatted"));
        format.addAll(extraArguments);
        ChildProcess.run("kafka storage format",
                Jvm.command(List.of("-Xmx256m", "-XX:TieredStopAtLevel=1"), classPath, log4j2, "kafka.tools.StorageTool",
                        format),
                dir, dir.resolve("format.log"), Duration.ofSeconds(180));
    }

    /** Starts {@code kafka.Kafka} on {@code config} with a {@code heap} ({@code -Xmx}), appending to {@code dir/kafka.log}. */
    static ChildProcess launch(String name, Path dir, Path log4j2, Path config, String heap) {
        return launch(name, dir, log4j2, Jvm.classPath(), config, heap);
    }

    /** As {@link #launch(String, Path, Path, Path, String)}, with the broker's jars on {@code classPath}. */
    static ChildProcess launch(String name, Path dir, Path log4j2, String classPath, Path config, String heap) {
        return ChildProcess.start(name, Jvm.command(List.of("-Xmx" + heap), classPath, log4j2, "kafka.Kafka",
                List.of(config.toString())), dir, dir.resolve("kafka.log"), Map.of());
    }

    /** The nodes an Admin describeCluster through {@code bootstrap} lists (brokers registered and unfenced). */
    static Collection<Node> nodes(String bootstrap, Map<String, String> client) throws Exception {
        try (Admin admin = admin(bootstrap, client)) {
            long seconds = timeoutSeconds(client);
            return admin.describeCluster().nodes().get(seconds, TimeUnit.SECONDS);
        }
    }

    /** An Admin client for readiness checks: short timeouts (3 s; 15 s secured, for TLS and SCRAM on a loaded machine). */
    static Admin admin(String bootstrap, Map<String, String> client) {
        Properties props = new Properties();
        props.putAll(client);
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "local-stack-ready-" + UUID.randomUUID());
        long seconds = timeoutSeconds(client);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, Long.toString(seconds * 1000 - 1000));
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Long.toString(seconds * 1000));
        return Admin.create(props);
    }

    private static long timeoutSeconds(Map<String, String> client) {
        // A secured attempt also pays a TLS handshake and SCRAM's key stretching: on a loaded machine 3 s is not enough.
        return client.isEmpty() ? 3 : 15;
    }
}
