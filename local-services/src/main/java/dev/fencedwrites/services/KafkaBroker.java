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
