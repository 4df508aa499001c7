package dev.fencedwrites.services;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Uuid;

/**
 * A single-node Kafka broker in KRaft combined mode (broker + controller), as a child JVM: with a {@code PLAINTEXT}
 * listener, or secured by a {@link KafkaSecurity} ({@code SASL_SSL}, SCRAM users, ACLs).
 */
public final class KafkaBroker {
    private KafkaBroker() {
    }

    /**
     * Formats the storage, starts the broker and waits until it answers an Admin describeCluster; the address is the bootstrap
     * host:port.
     */
    public static Service start(Path dir, Path log4j2) throws Exception {
        return start(dir, log4j2, null);
    }

    /**
     * Like {@link #start(Path, Path)}, secured by {@code security} when it is not {@code null}: the client listener is
     * {@code SASL_SSL}, every user of {@code security} is created (SCRAM) when the storage is formatted, and only
     * {@link KafkaSecurity#ADMIN} may do anything without ACLs. The readiness check connects as that super user.
     */
    public static Service start(Path dir, Path log4j2, KafkaSecurity security) throws Exception {
        Files.createDirectories(dir);
        int port = FreePorts.pick();
        int controllerPort = FreePorts.pick();
        String bootstrap = "127.0.0.1:" + port;
        String listener = security == null ? "PLAINTEXT" : "SASL_SSL";
        Map<String, String> settings = new LinkedHashMap<>(Map.ofEntries(
                Map.entry("process.roles", "broker,controller"),
                Map.entry("node.id", "1"),
                Map.entry("controller.quorum.bootstrap.servers", "127.0.0.1:" + controllerPort),
                Map.entry("listeners", listener + "://" + bootstrap + ",CONTROLLER://127.0.0.1:" + controllerPort),
                Map.entry("advertised.listeners", listener + "://" + bootstrap + ",CONTROLLER://127.0.0.1:" + controllerPort),
                Map.entry("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"),
                Map.entry("controller.listener.names", "CONTROLLER"),
                Map.entry("inter.broker.listener.name", "PLAINTEXT"),
                Map.entry("log.dirs", dir.resolve("data").toString()),
                Map.entry("num.partitions", "1"),
                Map.entry("default.replication.factor", "1"),
                Map.entry("min.insync.replicas", "1"),
                Map.entry("offsets.topic.replication.factor", "1"),
                Map.entry("offsets.topic.num.partitions", "1"),
                Map.entry("transaction.state.log.replication.factor", "1"),
                Map.entry("transaction.state.log.min.isr", "1"),
                Map.entry("transaction.state.log.num.partitions", "1"),
                Map.entry("share.coordinator.state.topic.replication.factor", "1"),
                Map.entry("share.coordinator.state.topic.min.isr", "1"),
                Map.entry("group.initial.rebalance.delay.ms", "0"),
                Map.entry("auto.create.topics.enable", "false")));
        if (security != null) {
            settings.putAll(security.brokerProperties());
        }
        Path config = PropertiesFiles.write(dir.resolve("server.properties"), settings);
        List<String> format = new ArrayList<>(List.of("format", "--config", config.toString(), "--cluster-id",
                Uuid.randomUuid().toString(), "--standalone", "--ignore-formatted"));
        if (security != null) {
            format.addAll(security.formatArguments());
        }
        ChildProcess.run("kafka storage format",
                Jvm.command(List.of("-Xmx256m", "-XX:TieredStopAtLevel=1"), log4j2, "kafka.tools.StorageTool", format),
                dir, dir.resolve("format.log"), Duration.ofSeconds(60));
        ChildProcess process = ChildProcess.start("kafka",
                Jvm.command(List.of("-Xmx768m"), log4j2, "kafka.Kafka", List.of(config.toString())),
                dir, dir.resolve("kafka.log"), Map.of());
        Map<String, String> client = security == null ? Map.of() : security.client(KafkaSecurity.ADMIN);
        return process.awaitReady(bootstrap, Duration.ofSeconds(security == null ? 90 : 150), () -> ready(bootstrap, client));
    }

    private static boolean ready(String bootstrap, Map<String, String> client) throws Exception {
        Properties props = new Properties();
        props.putAll(client);
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "local-stack-ready-" + UUID.randomUUID());
        // A secured attempt also pays a TLS handshake and SCRAM's key stretching: on a loaded machine 3 s is not enough.
        long seconds = client.isEmpty() ? 3 : 15;
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, Long.toString(seconds * 1000 - 1000));
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Long.toString(seconds * 1000));
        try (Admin admin = Admin.create(props)) {
            return !admin.describeCluster().nodes().get(seconds, TimeUnit.SECONDS).isEmpty();
        }
    }

}
