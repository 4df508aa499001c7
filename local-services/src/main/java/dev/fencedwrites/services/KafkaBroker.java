package dev.fencedwrites.services;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Uuid;

/** A single-node Kafka broker in KRaft combined mode (broker + controller), as a child JVM. */
public final class KafkaBroker {
    private KafkaBroker() {
    }

    /**
     * Formats the storage, starts the broker and waits until it answers an Admin describeCluster; the address is the bootstrap
     * host:port.
     */
    public static Service start(Path dir, Path log4j2) throws Exception {
        Files.createDirectories(dir);
        int port = FreePorts.pick();
        int controllerPort = FreePorts.pick();
        String bootstrap = "127.0.0.1:" + port;
        Path config = PropertiesFiles.write(dir.resolve("server.properties"), Map.ofEntries(
                Map.entry("process.roles", "broker,controller"),
                Map.entry("node.id", "1"),
                Map.entry("controller.quorum.bootstrap.servers", "127.0.0.1:" + controllerPort),
                Map.entry("listeners", "PLAINTEXT://" + bootstrap + ",CONTROLLER://127.0.0.1:" + controllerPort),
                Map.entry("advertised.listeners", "PLAINTEXT://" + bootstrap + ",CONTROLLER://127.0.0.1:" + controllerPort),
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
        ChildProcess.run("kafka storage format",
                Jvm.command(List.of("-Xmx256m", "-XX:TieredStopAtLevel=1"), log4j2, "kafka.tools.StorageTool",
                        List.of("format", "--config", config.toString(), "--cluster-id", Uuid.randomUuid().toString(),
                                "--standalone", "--ignore-formatted")),
                dir, dir.resolve("format.log"), Duration.ofSeconds(60));
        ChildProcess process = ChildProcess.start("kafka",
                Jvm.command(List.of("-Xmx768m"), log4j2, "kafka.Kafka", List.of(config.toString())),
                dir, dir.resolve("kafka.log"), Map.of());
        return process.awaitReady(bootstrap, Duration.ofSeconds(90), () -> ready(bootstrap));
    }

    private static boolean ready(String bootstrap) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "local-stack-ready-" + UUID.randomUUID());
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "2000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "3000");
        try (Admin admin = Admin.create(props)) {
            return !admin.describeCluster().nodes().get(3, TimeUnit.SECONDS).isEmpty();
        }
    }

}
