package dev.fencedwrites.enforcer;

import java.util.HashSet;
import java.util.Set;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.streams.StreamsConfig;

/**
 * The names of Kafka's own settings, for telling a Kafka setting given without the enforcer's {@code streams.} prefix
 * from an unknown key: every setting of {@link StreamsConfig}, {@link ConsumerConfig}, {@link ProducerConfig} and
 * {@link AdminClientConfig}, and the {@code sasl.*}, {@code ssl.*}, {@code security.*} families (some of which, like the
 * per-listener and login-module settings, are not in any {@code ConfigDef}).
 */
final class KafkaSettingNames {
    private static final Set<String> NAMES = names();

    private KafkaSettingNames() {
    }

    /** Whether {@code key} is a Kafka client or Streams setting. */
    static boolean contains(String key) {
        return NAMES.contains(key) || key.startsWith("sasl.") || key.startsWith("ssl.") || key.startsWith("security.")
                || key.startsWith("producer.") || key.startsWith("consumer.") || key.startsWith("admin.")
                || key.startsWith("main.consumer.") || key.startsWith("restore.consumer.")
                || key.startsWith("global.consumer.") || key.startsWith("topic.");
    }

    private static Set<String> names() {
        Set<String> names = new HashSet<>(StreamsConfig.configDef().names());
        names.addAll(ConsumerConfig.configNames());
        names.addAll(ProducerConfig.configNames());
        names.addAll(AdminClientConfig.configNames());
        return Set.copyOf(names);
    }
}
