package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.fencedwrites.etcd.EtcdSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Loading the enforcer's configuration from a file and the environment. */
class FenceEnforcerConfigTest {
    @TempDir
    Path dir;

    @Test
    void environmentOverridesTheFileAndDoubleUnderscoreIsALiteralUnderscore() throws Exception {
        Path file = Files.writeString(dir.resolve("enforcer.properties"),
                "bootstrap.servers=file:9092\napplication.id=from-file\n");

        FenceEnforcerConfig config = FenceEnforcerConfig.load(file, Map.of(
                "FENCE_ENFORCER_APPLICATION_ID", "from-env",
                "FENCE_ENFORCER_STREAMS_RACK_AWARE_ASSIGNMENT_TRAFFIC__COST", "7",
                "FENCE_ENFORCER_STREAMS_SECURITY_PROTOCOL", "SSL",
                "FENCE_ENFORCER_TOKEN_VERIFICATION_ENABLE", "false",
                "UNRELATED", "x"));

        assertThat(config.streamsProperties())
                .containsEntry(StreamsConfig.APPLICATION_ID_CONFIG, "from-env")
                .containsEntry(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "file:9092")
                .containsEntry("rack.aware.assignment.traffic_cost", "7")
                .containsEntry("security.protocol", "SSL");
    }

    @Test
    void anOutputTopicEqualToTheInputIsRefused() {
        assertThatThrownBy(() -> load(Map.of("FENCE_ENFORCER_REJECTED_TOPIC", "fenced-writes")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("three different topics");
    }

    @Test
    void invalidKafkaStreamsSettingIsRefusedAtLoad() {
        assertThatThrownBy(() -> load(Map.of("FENCE_ENFORCER_STREAMS_NUM_STREAM_THREADS", "many")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("num.stream.threads");
    }

    @Test
    void missingBootstrapServersIsRefused() {
        assertThatThrownBy(() -> FenceEnforcerConfig.load(null, Map.of())).isInstanceOf(ConfigException.class)
                .hasMessageContaining("bootstrap.servers");
    }

    // --- token verification ---

    @Test
    void runningWithoutEtcdIsRefusedUnlessVerificationIsTurnedOffByName() {
        assertThatThrownBy(() -> load(Map.of())).isInstanceOf(ConfigException.class)
                .hasMessageContaining("etcd.endpoints is not set").hasMessageContaining("token.verification.enable=false");

        assertThat(load(Map.of("FENCE_ENFORCER_TOKEN_VERIFICATION_ENABLE", "false")).tokenVerification()).isEmpty();
    }

    @Test
    void aMissingApplicationIdIsRefusedAtLoad() {
        assertThatThrownBy(() -> FenceEnforcerConfig.load(null, Map.of("FENCE_ENFORCER_BOOTSTRAP_SERVERS", "k:9092",
                "FENCE_ENFORCER_TOKEN_VERIFICATION_ENABLE", "false"))).isInstanceOf(ConfigException.class)
                .hasMessageContaining("application.id");
    }

    @Test
    void tokenVerificationIsOnWhenEtcdEndpointsAreSet() {
        FenceEnforcerConfig config = load(Map.of("FENCE_ETCD_ENDPOINTS", "http://127.0.0.1:2379, http://127.0.0.1:2381",
                "FENCE_ETCD_LOCK_PREFIX", "app/locks/", "FENCE_ETCD_REQUEST_TIMEOUT_MS", "750"));

        assertThat(config.tokenVerification()).hasValueSatisfying(etcd -> {
            assertThat(etcd.endpoints()).containsExactly("http://127.0.0.1:2379", "http://127.0.0.1:2381");
            assertThat(etcd.lockPrefix()).isEqualTo("app/locks/");
            assertThat(etcd.requestTimeout()).hasMillis(750);
        });
    }

    @Test
    void theDeprecatedEnforcerNamesOfTheEtcdSettingsStillWork() {
        FenceEnforcerConfig config = load(Map.of("FENCE_ENFORCER_ETCD_ENDPOINTS", "http://127.0.0.1:2379",
                "FENCE_ENFORCER_ETCD_LOCK_PREFIX", "old/locks/", "FENCE_ETCD_REQUEST_TIMEOUT_MS", "750"));

        assertThat(config.tokenVerification()).hasValueSatisfying(etcd -> {
            assertThat(etcd.endpoints()).containsExactly("http://127.0.0.1:2379");
            assertThat(etcd.lockPrefix()).isEqualTo("old/locks/");
            assertThat(etcd.requestTimeout()).hasMillis(750);
        });
    }

    @Test
    void bothNamesOfAnEtcdSettingWithDifferentValuesAreRefusedNamingBoth() {
        assertThatThrownBy(() -> load(Map.of("FENCE_ETCD_ENDPOINTS", "http://new:2379", "FENCE_ENFORCER_ETCD_ENDPOINTS",
                "http://old:2379"))).isInstanceOf(ConfigException.class).hasMessageContaining("FENCE_ETCD_ENDPOINTS")
                .hasMessageContaining("FENCE_ENFORCER_ETCD_ENDPOINTS");
        assertThat(load(Map.of("FENCE_ETCD_ENDPOINTS", "http://same:2379", "FENCE_ENFORCER_ETCD_ENDPOINTS", " http://same:2379"))
                .tokenVerification().orElseThrow().endpoints()).containsExactly("http://same:2379");
    }

    @Test
    void anUnknownEtcdVariableIsRefusedAsProducerLibRefusesIt() {
        assertThatThrownBy(() -> load(Map.of("FENCE_ETCD_ENDPOINTS", "http://e:2379", "FENCE_ETCD_LOCK_PREFX", "x/")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("unknown environment variable FENCE_ETCD_LOCK_PREFX");
    }

    @Test
    void tokenVerificationCanBeTurnedOffWithEndpointsSet() {
        assertThat(load(Map.of("FENCE_ETCD_ENDPOINTS", "http://127.0.0.1:2379",
                "FENCE_ENFORCER_TOKEN_VERIFICATION_ENABLE", "false"))
                .tokenVerification()).isEmpty();
    }

    @Test
    void tokenVerificationOnWithoutEndpointsIsRefusedNamingBothSettings() {
        assertThatThrownBy(() -> load(Map.of("FENCE_ENFORCER_TOKEN_VERIFICATION_ENABLE", "true")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("token.verification.enable")
                .hasMessageContaining("etcd.endpoints");
    }

    /** One reader of etcd.*: the enforcer refuses what producer-lib's EtcdSettings.load refuses, with its message. */
    @ParameterizedTest
    @ValueSource(strings = {"FENCE_ETCD_ENDPOINTS=127.0.0.1:2379", "FENCE_ETCD_ENDPOINTS=http://e:2379,https://f",
            "FENCE_ETCD_USER=enforcer", "FENCE_ETCD_PASSWORD=secret", "FENCE_ETCD_TLS_KEY_FILE=/etc/key.pem",
            "FENCE_ETCD_TLS_CA_FILE=/no/such/ca.pem", "FENCE_ETCD_LOCK_PREFIX= ", "FENCE_ETCD_USER=u",
            "FENCE_ETCD_TLS_CERT_FILE=/etc/cert.pem"})
    void anInvalidEtcdSettingIsRefusedWithProducerLibsMessage(String variable) {
        Map<String, String> env = new HashMap<>(Map.of("FENCE_ETCD_ENDPOINTS", "http://e:2379"));
        env.put(variable.substring(0, variable.indexOf('=')), variable.substring(variable.indexOf('=') + 1));
        String producerLibs = catchThrowableOfType(IllegalArgumentException.class,
                () -> EtcdSettings.load(new Properties(), env)).getMessage();
        assertThatThrownBy(() -> load(env).tokenVerification()).isInstanceOf(ConfigException.class)
                .hasMessage("token verification: " + producerLibs);
    }

    /** A blank etcd setting is unset for both (before, the enforcer took a blank user or CA file as the empty string). */
    @ParameterizedTest
    @ValueSource(strings = {"FENCE_ETCD_USER", "FENCE_ETCD_PASSWORD", "FENCE_ETCD_TLS_CA_FILE", "FENCE_ETCD_TLS_KEY_FILE"})
    void aBlankEtcdSettingIsUnsetAsForProducerLib(String variable) {
        Map<String, String> env = new HashMap<>(
                Map.of("FENCE_ETCD_ENDPOINTS", "http://e:2379", "FENCE_ETCD_REQUEST_TIMEOUT_MS", "5000", variable, " "));
        EtcdSettings producerLibs = EtcdSettings.load(new Properties(), env);
        assertThat(producerLibs.user()).isNull();
        assertThat(producerLibs.tlsCaFile()).isNull();
        assertThat(load(env).tokenVerification()).hasValue(producerLibs);
    }

    @Test
    void invalidEtcdSettingsAreRefusedAtLoadNamingTheSetting() {
        assertThatThrownBy(() -> load(Map.of("FENCE_ETCD_ENDPOINTS", "127.0.0.1:2379")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("etcd.endpoints");
        assertThatThrownBy(
                () -> load(Map.of("FENCE_ETCD_ENDPOINTS", "http://e:2379", "FENCE_ETCD_USER", "enforcer")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("etcd.password");
        assertThatThrownBy(() -> load(Map.of("FENCE_ENFORCER_TOKEN_VERIFICATION_COMPACTED_POLICY", "maybe")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("token.verification.compacted.policy");
        assertThatThrownBy(() -> load(Map.of("FENCE_ENFORCER_TOKEN_VERIFICATION_RETRY_BACKOFF_MS", "500",
                "FENCE_ENFORCER_TOKEN_VERIFICATION_RETRY_BACKOFF_MAX_MS", "100",
                "FENCE_ETCD_ENDPOINTS", "http://e:2379")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("token.verification.retry.backoff.max.ms");
    }

    @Test
    void theEtcdPasswordNeverShowsInTheSettingsText() {
        FenceEnforcerConfig config = load(
                Map.of("FENCE_ETCD_ENDPOINTS", "http://e:2379", "FENCE_ETCD_USER", "enforcer",
                        "FENCE_ETCD_PASSWORD", "s3cret-pw"));

        assertThat(config.tokenVerification().orElseThrow().toString()).doesNotContain("s3cret-pw");
        assertThat(config.tokenVerification().orElseThrow().password()).isEqualTo("s3cret-pw");
    }

    private static FenceEnforcerConfig load(Map<String, String> env) {
        Map<String, String> all = new HashMap<>(env);
        all.putIfAbsent("FENCE_ENFORCER_BOOTSTRAP_SERVERS", "k:9092");
        all.putIfAbsent("FENCE_ENFORCER_APPLICATION_ID", "test-enforcer");
        return FenceEnforcerConfig.load(null, all);
    }
}
