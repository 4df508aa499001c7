package dev.fencedwrites.localstack;

import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.contract.NewTopics;
import dev.fencedwrites.services.KafkaSecurity;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.acl.AclBinding;

/** The stack's Kafka set-up, as the super user: the pipeline's topics and, on a secured stack, every role's ACLs. */
final class StackKafka {
    /** The stack's enforcer application.id. */
    static final String ENFORCER_APPLICATION_ID = "fence-enforcer";

    private StackKafka() {
    }

    /**
     * Creates the input, accepted, markers and rejected topics ({@code partitions} each) and waits until they take writes;
     * with {@code security}, grants each {@link StackUsers} role its {@link FenceAcls}.
     *
     * @param brokers    the replication factor (every broker holds a replica)
     * @param connectors each connector's name and configuration ({@code topics}, {@code errors.deadletterqueue.topic.name})
     */
    static void prepare(String bootstrap, KafkaSecurity security, int partitions, int brokers,
            Map<String, Map<String, String>> connectors) throws Exception {
        Properties props = new Properties();
        if (security != null) {
            props.putAll(security.client(KafkaSecurity.ADMIN));
        }
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        short replication = (short) brokers;
        try (Admin admin = Admin.create(props)) {
            List<NewTopic> topics = List.of(
                    new NewTopic(FenceTopics.INPUT, partitions, replication),
                    new NewTopic(FenceTopics.ACCEPTED, partitions, replication),
                    new NewTopic(FenceTopics.MARKERS, partitions, replication),
                    // Room for the rejection headers on top of the largest input record (the broker default, 1048588).
                    new NewTopic(FenceTopics.REJECTED, partitions, replication)
                            .configs(Map.of("max.message.bytes", Integer.toString(1048588 + 64 * 1024))));
            admin.createTopics(topics).all().get(60, TimeUnit.SECONDS);
            NewTopics.awaitWritable(admin, topics.stream().map(NewTopic::name).toList(), Duration.ofSeconds(60));
            if (security != null) {
                admin.createAcls(acls(connectors)).all().get(60, TimeUnit.SECONDS);
            }
        }
    }

    private static List<AclBinding> acls(Map<String, Map<String, String>> connectors) {
        List<AclBinding> acls = new ArrayList<>(FenceAcls.enforcer(StackUsers.ENFORCER, ENFORCER_APPLICATION_ID,
                FenceTopics.INPUT, List.of(FenceTopics.ACCEPTED, FenceTopics.REJECTED, FenceTopics.MARKERS)));
        connectors.forEach((name, config) -> acls.addAll(FenceAcls.sinkConnector(StackUsers.CONNECT, name,
                List.of(config.getOrDefault("topics", "").split(",")), config.get("errors.deadletterqueue.topic.name"))));
        acls.addAll(FenceAcls.connectWorker(StackUsers.CONNECT, StackConnect.GROUP_ID,
                List.of(StackConnect.GROUP_ID + "-configs", StackConnect.GROUP_ID + "-offsets",
                        StackConnect.GROUP_ID + "-status")));
        acls.addAll(FenceAcls.writer(StackUsers.WRITER, FenceTopics.INPUT));
        acls.addAll(FenceAcls.operator(StackUsers.OPERATOR, FenceTopics.INPUT,
                List.of(FenceTopics.INPUT, FenceTopics.ACCEPTED, FenceTopics.REJECTED, FenceTopics.MARKERS)));
        return acls;
    }

    /** {@code settings} with each key prefixed, e.g. the enforcer's {@code streams.} passthrough. */
    static Map<String, String> prefixed(String prefix, Map<String, String> settings) {
        Map<String, String> out = new LinkedHashMap<>();
        settings.forEach((key, value) -> out.put(prefix + key, value));
        return out;
    }
}
