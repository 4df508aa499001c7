package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Kafka settings reach Kafka only through the {@code streams.} prefix, so one given without it is refused at
 * start instead of ignored (the enforcer would connect without it), and the enforcer's own Admin client gets the same
 * security settings as the clients Kafka Streams makes.
 */
class KafkaSettingsPassThroughTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(strings = {"security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512",
            "ssl.truststore.location=/etc/kafka/truststore.p12", "num.stream.threads=2", "max.request.size=2000000",
            "producer.acks=all"})
    void aKafkaSettingWithoutTheStreamsPrefixInTheFileIsRefusedNamingThePrefixedName(String line) throws Exception {
        String key = line.substring(0, line.indexOf('='));
        Path file = Files.writeString(dir.resolve("enforcer.properties"), "bootstrap.servers=k:9092\n" + line + "\n");

        assertThatThrownBy(() -> FenceEnforcerConfig.load(file, Map.of())).isInstanceOf(ConfigException.class)
                .hasMessageContaining(key + " is a Kafka client or Streams setting")
                .hasMessageContaining("set streams." + key + " instead");
    }

    @ParameterizedTest
    @ValueSource(strings = {"FENCE_ENFORCER_STREAMS_PROCESSING_GUARANTEE=at_least_once",
            "FENCE_ENFORCER_STREAMS_PRODUCER_ACKS=1", "FENCE_ENFORCER_STREAMS_ENABLE_IDEMPOTENCE=false",
            "FENCE_ENFORCER_STREAMS_PRODUCTION_EXCEPTION_HANDLER=my.Handler",
            "FENCE_ENFORCER_STREAMS_TOPIC_CLEANUP_POLICY=delete"})
    void aPassThroughFromTheEnvironmentThatWouldWeakenTheFenceIsRefusedAsFromTheFile(String variable) {
        String name = variable.substring(0, variable.indexOf('='));
        Map<String, String> env = Map.of("FENCE_ENFORCER_BOOTSTRAP_SERVERS", "k:9092", "FENCE_ENFORCER_APPLICATION_ID", "e",
                "FENCE_ENFORCER_TOKEN_VERIFICATION_ENABLE", "false", name, variable.substring(name.length() + 1));

        assertThatThrownBy(() -> FenceEnforcerConfig.load(null, env)).isInstanceOf(ConfigException.class)
                .hasMessageContaining(FenceEnforcerConfig.propertyName(name.substring("FENCE_ENFORCER_".length())));
    }

    @Test
    void aKafkaSettingWithoutTheStreamsPrefixInTheEnvironmentIsRefusedNamingThePrefixedVariable() {
        assertThatThrownBy(() -> FenceEnforcerConfig.load(null,
                Map.of("FENCE_ENFORCER_BOOTSTRAP_SERVERS", "k:9092", "FENCE_ENFORCER_SECURITY_PROTOCOL", "SASL_SSL")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("FENCE_ENFORCER_SECURITY_PROTOCOL is a Kafka client or Streams setting")
                .hasMessageContaining("set FENCE_ENFORCER_STREAMS_SECURITY_PROTOCOL instead");
    }

    @Test
    void anUnknownKeyInTheFileIsRefusedAsATypo() throws Exception {
        Path file = Files.writeString(dir.resolve("enforcer.properties"), "bootstrap.servers=k:9092\nhttp.prot=8091\n");

        assertThatThrownBy(() -> FenceEnforcerConfig.load(file, Map.of())).isInstanceOf(ConfigException.class)
                .hasMessageContaining("unknown setting http.prot").hasMessageContaining("prefix streams.");
    }

    @Test
    void anUnknownEnvironmentVariableThatIsNoKafkaSettingIsLeftAlone() {
        FenceEnforcerConfig config = FenceEnforcerConfig.load(null,
                Map.of("FENCE_ENFORCER_BOOTSTRAP_SERVERS", "k:9092", "FENCE_ENFORCER_APPLICATION_ID", "e",
                        "FENCE_ENFORCER_TOKEN_VERIFICATION_ENABLE", "false", "FENCE_ENFORCER_OPTS", "-Xmx1g"));

        assertThat(config.streamsProperties()).doesNotContainKey("opts");
    }

    @Test
    void prefixedSecuritySettingsReachKafkaStreamsUnprefixed() throws Exception {
        Path file = Files.writeString(dir.resolve("enforcer.properties"), String.join("\n", "bootstrap.servers=k:9093",
                "application.id=e", "token.verification.enable=false",
                "streams.security.protocol=SASL_SSL", "streams.sasl.mechanism=SCRAM-SHA-512",
                "streams.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"e\" "
                        + "password=\"p\";",
                "streams.ssl.truststore.location=/tls/truststore.p12", ""));

        assertThat(FenceEnforcerConfig.load(file, Map.of()).streamsProperties())
                .containsEntry("security.protocol", "SASL_SSL").containsEntry("sasl.mechanism", "SCRAM-SHA-512")
                .containsEntry("ssl.truststore.location", "/tls/truststore.p12").containsKey("sasl.jaas.config");
    }

    @Test
    void theEnforcersOwnAdminClientGetsTheSecuritySettingsWithAdminPrefixedOnesWinning() throws Exception {
        Path file = Files.writeString(dir.resolve("enforcer.properties"), String.join("\n", "bootstrap.servers=k:9093",
                "application.id=billing-enforcer", "token.verification.enable=false", "streams.security.protocol=SASL_SSL",
                "streams.sasl.mechanism=SCRAM-SHA-256", "streams.admin.sasl.mechanism=SCRAM-SHA-512",
                "streams.sasl.jaas.config=jaas-of-every-client", "streams.ssl.truststore.location=/tls/truststore.p12",
                "streams.producer.linger.ms=20", ""));

        Map<String, Object> admin = TopicAdmin.adminProperties(FenceEnforcerConfig.load(file, Map.of()).streamsProperties());

        assertThat(admin).containsEntry("bootstrap.servers", "k:9093").containsEntry("security.protocol", "SASL_SSL")
                .containsEntry("sasl.mechanism", "SCRAM-SHA-512").containsEntry("sasl.jaas.config", "jaas-of-every-client")
                .containsEntry("ssl.truststore.location", "/tls/truststore.p12").doesNotContainKey("linger.ms");
    }
}
