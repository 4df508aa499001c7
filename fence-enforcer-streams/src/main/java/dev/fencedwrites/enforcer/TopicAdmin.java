package dev.fencedwrites.enforcer;

import dev.fencedwrites.contract.NewTopics;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.streams.StreamsConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Admin client reads and writes {@link TopicCheck} needs: which topics exist, their
 * {@code max.message.bytes} and {@code cleanup.policy}, the broker's {@code message.max.bytes}, and
 * topic creation that waits until the new partitions' leaders serve them (KAFKA-15591). Each call is
 * bounded by {@code timeout}.
 */
final class TopicAdmin {
    private static final Logger LOG = LoggerFactory.getLogger(TopicCheck.class);
    /** The broker setting a new topic's max.message.bytes defaults to. */
    private static final String BROKER_MESSAGE_MAX_BYTES = "message.max.bytes";

    private TopicAdmin() {
    }

    /**
     * The settings of the enforcer's own Admin client: those Kafka Streams gives its admin client
     * ({@link StreamsConfig#getAdminConfigs}: bootstrap servers, {@code security.protocol}, {@code sasl.*}, {@code ssl.*} and
     * every other client setting, with {@code admin.}-prefixed ones winning), so it reaches a secured cluster exactly as
     * Streams does.
     */
    static Map<String, Object> adminProperties(Properties streamsProperties) {
        return FenceEnforcerConfig.quietStreamsConfig(streamsProperties)
                .getAdminConfigs(streamsProperties.getProperty(StreamsConfig.APPLICATION_ID_CONFIG) + "-topic-check");
    }

    /** Creates {@code topic} (one that exists already is fine) and waits until it takes writes. */
    static void create(Admin admin, NewTopic topic, Duration timeout)
            throws ExecutionException, InterruptedException, TimeoutException {
        try {
            admin.createTopics(List.of(topic)).all().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            LOG.info("created topic '{}' with {} partitions", topic.name(), topic.numPartitions());
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw e;
            }
        }
        // Created here or by a racing instance: the stream's first transaction must not meet a partition its leader does not
        // serve yet.
        NewTopics.awaitWritable(admin, List.of(topic.name()), timeout);
    }

    /** The descriptions of those of {@code topics} that exist, by name. */
    static Map<String, TopicDescription> describe(Admin admin, List<String> topics, Duration timeout)
            throws ExecutionException, InterruptedException, TimeoutException {
        Map<String, TopicDescription> found = new LinkedHashMap<>();
        for (var entry : admin.describeTopics(topics).topicNameValues().entrySet()) {
            try {
                found.put(entry.getKey(), entry.getValue().get(timeout.toMillis(), TimeUnit.MILLISECONDS));
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
                    throw e;
                }
            }
        }
        return found;
    }

    /** Whether {@code topic}'s cleanup.policy includes compact. */
    static boolean compacted(Admin admin, String topic, Duration timeout)
            throws ExecutionException, InterruptedException, TimeoutException {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Config config = admin.describeConfigs(List.of(resource)).all().get(timeout.toMillis(), TimeUnit.MILLISECONDS)
                .get(resource);
        return config.get(TopicConfig.CLEANUP_POLICY_CONFIG).value().contains(TopicConfig.CLEANUP_POLICY_COMPACT);
    }

    /** The message.max.bytes of one broker, which a topic created without max.message.bytes inherits. */
    static int brokerMessageMaxBytes(Admin admin, Duration timeout)
            throws ExecutionException, InterruptedException, TimeoutException {
        Collection<Node> nodes = admin.describeCluster().nodes().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, nodes.iterator().next().idString());
        Config brokerConfig = admin.describeConfigs(List.of(broker)).all().get(timeout.toMillis(), TimeUnit.MILLISECONDS)
                .get(broker);
        return Integer.parseInt(brokerConfig.get(BROKER_MESSAGE_MAX_BYTES).value());
    }

    /**
     * The max.message.bytes of {@code input} and {@code more}, by topic name; retried until {@code timeout}
     * while a topic created a moment ago is still unknown to the broker answering.
     */
    static Map<String, Integer> maxMessageBytes(Admin admin, String input, Duration timeout, String... more)
            throws ExecutionException, InterruptedException, TimeoutException {
        List<ConfigResource> resources = new ArrayList<>();
        resources.add(new ConfigResource(ConfigResource.Type.TOPIC, input));
        for (String topic : more) {
            resources.add(new ConfigResource(ConfigResource.Type.TOPIC, topic));
        }
        Map<ConfigResource, Config> configs;
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try {
                configs = admin.describeConfigs(resources).all().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
                break;
            } catch (ExecutionException e) {
                // A topic created a moment ago may not have reached every broker's metadata yet.
                if (!(e.getCause() instanceof UnknownTopicOrPartitionException) || System.nanoTime() - deadline > 0) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
        Map<String, Integer> max = new LinkedHashMap<>();
        configs.forEach((resource, config) -> max.put(resource.name(),
                Integer.parseInt(config.get(TopicConfig.MAX_MESSAGE_BYTES_CONFIG).value())));
        return max;
    }
}
