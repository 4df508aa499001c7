package dev.fencedwrites.distribution;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.enforcer.FenceEnforcerConfig;
import dev.fencedwrites.sink.FencedJdbcSinkConfig;
import dev.fencedwrites.sink.FencedJdbcSinkConnector;
import java.io.IOException;
import java.io.StringReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.runtime.ConnectorConfig;
import org.apache.kafka.connect.runtime.SinkConnectorConfig;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;

/**
 * The commented samples in the repository's {@code config/} (shipped in the distribution's {@code config/}) name only
 * real settings, the enforcer's sample names every setting, and each sample is accepted as shipped: they fail here when
 * a setting is renamed, added or dropped, as the configuration references do.
 */
class SampleConfigTest {
    /** The repository's config/ directory (surefire runs in the module's directory). */
    static final Path CONFIG = Path.of("..", "config").toAbsolutePath().normalize();
    /** A setting line, active or commented out: {@code key=value} or {@code #key=value}. */
    private static final Pattern SETTING = Pattern.compile("(?m)^#?([A-Za-z][A-Za-z0-9._-]*)=");

    @Test
    void theEnforcerSampleNamesOnlyEnforcerSettingsOrPrefixedKafkaStreamsSettings() throws IOException {
        Set<String> own = FenceEnforcerConfig.DEFINITION.names();
        for (String key : keys("enforcer.properties")) {
            if (key.startsWith(FenceEnforcerConfig.STREAMS_PREFIX)) {
                assertThat(isKafkaStreamsSetting(key.substring(FenceEnforcerConfig.STREAMS_PREFIX.length())))
                        .as("%s: a Kafka Streams, consumer, producer or admin setting after the prefix", key).isTrue();
            } else {
                assertThat(own).as("enforcer setting %s (fence-enforcer-streams/CONFIGURATION.rst)", key).contains(key);
            }
        }
    }

    @Test
    void theEnforcerSampleNamesEverySettingOfTheEnforcer() throws IOException {
        assertThat(keys("enforcer.properties")).containsAll(FenceEnforcerConfig.DEFINITION.names());
    }

    @Test
    void theEnforcerSampleLeavesTheApplicationIdToTheUser() {
        assertThatThrownBy(() -> FenceEnforcerConfig.load(CONFIG.resolve("enforcer.properties"), Map.of()))
                .isInstanceOf(ConfigException.class).hasMessageContaining("application.id");
    }

    @Test
    void theEnforcerSampleLoadsOnceTheApplicationIdIsSet() {
        FenceEnforcerConfig config = FenceEnforcerConfig.load(CONFIG.resolve("enforcer.properties"),
                Map.of("FENCE_ENFORCER_APPLICATION_ID", "billing-enforcer"));
        assertThat(config.getList(FenceEnforcerConfig.BOOTSTRAP_SERVERS)).containsExactly("localhost:9092");
        assertThat(config.tokenVerification()).as("token verification on, as the README advises").isPresent();
    }

    @Test
    void theConnectorSampleNamesOnlySinkOrConnectSettingsAndIsValid() throws IOException {
        Map<String, String> props = properties("connector.properties");
        Set<String> connect = SinkConnectorConfig.configDef().names();
        Predicate<String> known = key -> FencedJdbcSinkConfig.DEFINITION.names().contains(key) || connect.contains(key)
                || key.startsWith(ConnectorConfig.CONNECTOR_CLIENT_CONSUMER_OVERRIDES_PREFIX);
        props.keySet().forEach(key -> assertThat(known.test(key))
                .as("%s: a setting of the sink (sink-connector/CONFIGURATION.rst) or of a Connect sink connector", key).isTrue());
        for (String key : keys("connector.properties")) {
            assertThat(known.test(key)).as("commented %s", key).isTrue();
        }
        assertThatCode(() -> new FencedJdbcSinkConfig(props)).doesNotThrowAnyException();
        assertThatCode(() -> SinkConnectorConfig.validate(props)).doesNotThrowAnyException();
        assertThatCode(() -> new FencedJdbcSinkConnector().start(props)).as("the settings the connector requires")
                .doesNotThrowAnyException();
        assertThat(props).containsEntry(SinkConnectorConfig.DLQ_TOPIC_NAME_CONFIG, "fenced-writes-rejected")
                .containsEntry("connector.class", "dev.fencedwrites.sink.FencedJdbcSinkConnector");
        assertThat(props.get("connection.password")).as("the password comes from a ConfigProvider, not the sample")
                .startsWith("${file:");
    }

    @Test
    void theConnectorJsonHoldsTheSameSettingsAsTheConnectorProperties() throws IOException {
        Map<String, String> json = new TreeMap<>();
        new ObjectMapper().readTree(CONFIG.resolve("connector.json").toFile()).properties()
                .forEach(e -> json.put(e.getKey(), e.getValue().asText()));
        Map<String, String> props = new TreeMap<>(properties("connector.properties"));
        props.remove("name"); // the REST API takes the name in the URL
        assertThat(json).isEqualTo(props);
    }

    /** The names {@code fence} reads from its env file are found in fence-cli's sources: {@code setting("NAME", ...)}. */
    @Test
    void theCliSampleNamesExactlyTheSettingsTheCommandsRead() throws IOException {
        Set<String> read = new LinkedHashSet<>();
        Pattern setting = Pattern.compile("setting\\(\"([A-Z_]+)\"");
        try (Stream<Path> sources = Files.walk(Path.of("..", "fence-cli", "src", "main", "java"))) {
            for (Path source : sources.filter(p -> p.toString().endsWith(".java")).toList()) {
                Matcher m = setting.matcher(Files.readString(source));
                while (m.find()) {
                    read.add(m.group(1));
                }
            }
        }
        assertThat(read).as("names found in fence-cli").contains("KAFKA_BOOTSTRAP", "ETCD_ENDPOINTS", "POSTGRES_URL");
        assertThat(properties("cli.properties").keySet()).containsExactlyInAnyOrderElementsOf(read);
    }

    private static boolean isKafkaStreamsSetting(String key) {
        Set<String> clients = new LinkedHashSet<>(StreamsConfig.configDef().names());
        clients.addAll(ConsumerConfig.configNames());
        clients.addAll(ProducerConfig.configNames());
        clients.addAll(AdminClientConfig.configNames());
        for (String prefix : List.of(StreamsConfig.MAIN_CONSUMER_PREFIX, StreamsConfig.RESTORE_CONSUMER_PREFIX,
                StreamsConfig.GLOBAL_CONSUMER_PREFIX, StreamsConfig.CONSUMER_PREFIX, StreamsConfig.PRODUCER_PREFIX,
                StreamsConfig.ADMIN_CLIENT_PREFIX, StreamsConfig.TOPIC_PREFIX)) {
            if (key.startsWith(prefix)) {
                return prefix.equals(StreamsConfig.TOPIC_PREFIX) || clients.contains(key.substring(prefix.length()));
            }
        }
        return clients.contains(key);
    }

    /** Every key the file names, active or commented out, in order. */
    static List<String> keys(String file) throws IOException {
        Matcher m = SETTING.matcher(Files.readString(CONFIG.resolve(file)));
        List<String> keys = new ArrayList<>();
        while (m.find()) {
            keys.add(m.group(1));
        }
        return keys;
    }

    static Map<String, String> properties(String file) throws IOException {
        Properties properties = new Properties();
        properties.load(new StringReader(Files.readString(CONFIG.resolve(file))));
        Map<String, String> map = new LinkedHashMap<>();
        properties.forEach((k, v) -> map.put(k.toString(), v.toString()));
        return map;
    }
}
