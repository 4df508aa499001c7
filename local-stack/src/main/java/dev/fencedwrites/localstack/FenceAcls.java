package dev.fencedwrites.localstack;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;

/**
 * The least ACLs each principal of the pipeline needs on a cluster with an authorizer and
 * {@code allow.everyone.if.no.acl.found=false}: what docs/operate/security.md lists, one method per role, so a
 * test can run each role with exactly these. READ and WRITE imply DESCRIBE (Kafka docs, "Authorization and
 * ACLs", operations and resources); since KIP-679 WRITE on a topic also allows an idempotent producer.
 */
public final class FenceAcls {
    private FenceAcls() {
    }

    /**
     * The enforcer (Kafka Streams, {@code exactly_once_v2}) with {@code applicationId}: READ the input; WRITE the outputs;
     * DESCRIBE_CONFIGS on those topics and the cluster (it reads their {@code max.message.bytes} and the broker's
     * {@code message.max.bytes} at start); its internal topics ({@code <application.id>-*}: the fence store's changelog and
     * the repartition topic of misrouted records): CREATE, READ, WRITE, DESCRIBE_CONFIGS, and DELETE (Kafka
     * Streams purges the repartition topic's committed records with {@code deleteRecords}); its consumer group
     * ({@code application.id}): READ; its transactional ids ({@code <application.id>-<process id>-<thread>}): WRITE.
     *
     * @param outputs the accepted, rejected and (if used) markers topics
     */
    public static List<AclBinding> enforcer(String principal, String applicationId, String input, Collection<String> outputs) {
        List<AclBinding> acls = new ArrayList<>();
        acls.add(allow(principal, ResourceType.TOPIC, input, PatternType.LITERAL, AclOperation.READ));
        acls.add(allow(principal, ResourceType.TOPIC, input, PatternType.LITERAL, AclOperation.DESCRIBE_CONFIGS));
        for (String output : outputs) {
            acls.add(allow(principal, ResourceType.TOPIC, output, PatternType.LITERAL, AclOperation.WRITE));
            acls.add(allow(principal, ResourceType.TOPIC, output, PatternType.LITERAL, AclOperation.DESCRIBE_CONFIGS));
        }
        String internal = applicationId + "-";
        for (AclOperation operation : List.of(AclOperation.CREATE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE,
                AclOperation.DESCRIBE_CONFIGS)) {
            acls.add(allow(principal, ResourceType.TOPIC, internal, PatternType.PREFIXED, operation));
        }
        acls.add(allow(principal, ResourceType.GROUP, applicationId, PatternType.LITERAL, AclOperation.READ));
        acls.add(allow(principal, ResourceType.TRANSACTIONAL_ID, internal, PatternType.PREFIXED, AclOperation.WRITE));
        acls.add(allow(principal, ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, AclOperation.DESCRIBE_CONFIGS));
        return acls;
    }

    /**
     * A sink connector {@code connector} in a standalone Connect worker: READ its topics and its consumer group
     * ({@code connect-<connector name>}); WRITE and CREATE its dead-letter topic (Connect creates it at task start when
     * it is missing). A distributed worker also needs {@link #connectWorker}.
     */
    public static List<AclBinding> sinkConnector(String principal, String connector, Collection<String> topics,
            String deadLetterTopic) {
        List<AclBinding> acls = new ArrayList<>();
        for (String topic : topics) {
            acls.add(allow(principal, ResourceType.TOPIC, topic, PatternType.LITERAL, AclOperation.READ));
        }
        acls.add(allow(principal, ResourceType.GROUP, "connect-" + connector, PatternType.LITERAL, AclOperation.READ));
        if (deadLetterTopic != null && !deadLetterTopic.isBlank()) {
            acls.add(allow(principal, ResourceType.TOPIC, deadLetterTopic, PatternType.LITERAL, AclOperation.WRITE));
            acls.add(allow(principal, ResourceType.TOPIC, deadLetterTopic, PatternType.LITERAL, AclOperation.CREATE));
        }
        return acls;
    }

    /**
     * A Connect worker in distributed mode with {@code groupId}: READ its group (the workers' group, where they elect a
     * leader and get assignments); on its internal topics ({@code config.storage.topic}, {@code offset.storage.topic},
     * {@code status.storage.topic}): CREATE (the first worker creates them), READ, WRITE and DESCRIBE_CONFIGS (a worker
     * checks that they are compacted). Needed beyond {@link #sinkConnector}, which covers the tasks' consumers and
     * the dead-letter producer; source connectors and exactly-once source support (KIP-618) would need more.
     */
    public static List<AclBinding> connectWorker(String principal, String groupId, Collection<String> internalTopics) {
        List<AclBinding> acls = new ArrayList<>();
        acls.add(allow(principal, ResourceType.GROUP, groupId, PatternType.LITERAL, AclOperation.READ));
        for (String topic : internalTopics) {
            for (AclOperation operation : List.of(AclOperation.CREATE, AclOperation.READ, AclOperation.WRITE,
                    AclOperation.DESCRIBE_CONFIGS)) {
                acls.add(allow(principal, ResourceType.TOPIC, topic, PatternType.LITERAL, operation));
            }
        }
        return acls;
    }

    /** A writer (producer-lib's {@code FencedProducer}, idempotent): WRITE the input topic. */
    public static List<AclBinding> writer(String principal, String input) {
        return List.of(allow(principal, ResourceType.TOPIC, input, PatternType.LITERAL, AclOperation.WRITE));
    }

    /**
     * An operator running the CLI ({@code produce}, {@code rejected}, {@code consume}): a writer's ACLs and READ on
     * {@code topics} (the commands assign partitions and join no group).
     */
    public static List<AclBinding> operator(String principal, String input, Collection<String> topics) {
        List<AclBinding> acls = new ArrayList<>(writer(principal, input));
        for (String topic : topics) {
            acls.add(allow(principal, ResourceType.TOPIC, topic, PatternType.LITERAL, AclOperation.READ));
        }
        return acls;
    }

    private static AclBinding allow(String principal, ResourceType type, String name, PatternType pattern,
            AclOperation operation) {
        return new AclBinding(new ResourcePattern(type, name, pattern),
                new AccessControlEntry("User:" + principal, "*", operation, AclPermissionType.ALLOW));
    }
}
