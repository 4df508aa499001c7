package dev.fencedwrites.services;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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
     * A plain single-node broker of another Kafka version on {@code classPath} (its own jars and a log4j2 binding, e.g.
     * compat/kafka-broker's class path file), for compatibility tests: KRaft combined mode with a static
     * {@code controller.quorum.voters} and storage formatted without {@code --standalone}, as Kafka 3.x takes them
     * (dynamic quorums, KIP-853, came in 3.9).
     */
    public static Service startOnClassPath(Path dir, Path log4j2, String classPath) throws Exception {
        Files.createDirectories(dir);
        int port = FreePorts.pick();
        int controllerPort = FreePorts.pick();
        String bootstrap = "127.0.0.1:" + port;
        Map<String, String> settings = KafkaNodes.settings(1, "PLAINTEXT", port, controllerPort, dir.resolve("data"), 1);
        settings.keySet().removeIf(key -> key.startsWith("share.")); // no share groups before Kafka 4.0 (KIP-932)
        settings.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
        settings.put("advertised.listeners", "PLAINTEXT://" + bootstrap); // 3.x refuses a controller listener there
        Path config = PropertiesFiles.write(dir.resolve("server.properties"), settings);
        KafkaNodes.format(dir, log4j2, classPath, config, Uuid.randomUuid().toString(), List.of());
        ChildProcess process = KafkaNodes.launch("kafka", dir, log4j2, classPath, config, "768m");
        return process.awaitReady(bootstrap, Duration.ofSeconds(90), () -> !KafkaNodes.nodes(bootstrap, Map.of()).isEmpty());
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
        Map<String, String> settings = KafkaNodes.settings(1, security == null ? "PLAINTEXT" : "SASL_SSL", port,
                controllerPort, dir.resolve("data"), 1);
        settings.put("controller.quorum.bootstrap.servers", "127.0.0.1:" + controllerPort);
        if (security != null) {
            settings.putAll(security.brokerProperties());
        }
        Path config = PropertiesFiles.write(dir.resolve("server.properties"), settings);
        List<String> format = new ArrayList<>(List.of("--standalone"));
        if (security != null) {
            format.addAll(security.formatArguments());
        }
        KafkaNodes.format(dir, log4j2, config, Uuid.randomUuid().toString(), format);
        ChildProcess process = KafkaNodes.launch("kafka", dir, log4j2, config, "768m");
        Map<String, String> client = security == null ? Map.of() : security.client(KafkaSecurity.ADMIN);
        return process.awaitReady(bootstrap, Duration.ofSeconds(security == null ? 90 : 150),
                () -> !KafkaNodes.nodes(bootstrap, client).isEmpty());
    }

}
