package dev.fencedwrites.enforcer;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/** Startup checks of the topics the enforcer reads. */
final class TopicCheck {
    private TopicCheck() {
    }

    /**
     * The partition count of {@code topic}, read with an Admin client built from the Kafka
     * settings in {@code streamsProperties} (bootstrap servers and security settings).
     *
     * @throws IllegalStateException naming the topic when it does not exist or the cluster does not answer in time
     */
    static int partitions(Properties streamsProperties, String topic, Duration timeout) throws InterruptedException {
        Properties props = new Properties();
        streamsProperties.forEach((k, v) -> {
            if (AdminClientConfig.configNames().contains(k.toString()) || k.toString().startsWith("sasl.") || k.toString().startsWith("ssl.")) {
                props.put(k, v);
            }
        });
        try (Admin admin = Admin.create(props)) {
            TopicDescription description = admin.describeTopics(List.of(topic)).allTopicNames()
                    .get(timeout.toMillis(), TimeUnit.MILLISECONDS).get(topic);
            return description.partitions().size();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof UnknownTopicOrPartitionException) {
                throw new IllegalStateException("input topic '" + topic + "' does not exist; create it (with the partition count your writers use) and start again");
            }
            throw new IllegalStateException("cannot describe input topic '" + topic + "': " + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException("Kafka at " + props.get(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG) + " did not answer within "
                    + timeout.toSeconds() + " s while describing input topic '" + topic + "'");
        }
    }
}
