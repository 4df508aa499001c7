package dev.fencedwrites.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EtcdSettingsTest {
    @TempDir
    Path dir;

    @Test
    void defaultsNeedOnlyEndpoints() {
        EtcdSettings settings = EtcdSettings.load(props("etcd.endpoints", " http://a:2379, http://b:2379 "), Map.of());

        assertThat(settings.endpoints()).containsExactly("http://a:2379", "http://b:2379");
        assertThat(settings.connectTimeout()).isEqualTo(Duration.ofSeconds(5));
        assertThat(settings.requestTimeout()).isEqualTo(Duration.ofSeconds(10));
        assertThat(settings.lockPrefix()).isEqualTo(LockKeys.DEFAULT_PREFIX);
        assertThat(settings.user()).isNull();
        assertThat(settings.tls()).isFalse();
    }

    @Test
    void aBlankLockPrefixIsRefusedNotReadAsTheDefault() {
        assertThatThrownBy(() -> EtcdSettings.load(props("etcd.endpoints", "http://a:2379", "etcd.lock.prefix", " "), Map.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("etcd.lock.prefix is blank: leave it out for the "
                        + "default (fenced-writes/locks/), or set the prefix the writers lock under");
        assertThatThrownBy(() -> EtcdSettings.load(props("etcd.endpoints", "http://a:2379"),
                Map.of("FENCE_ETCD_LOCK_PREFIX", ""))).hasMessageStartingWith("etcd.lock.prefix is blank");
        assertThat(EtcdSettings.load(props("etcd.endpoints", "http://a:2379", "etcd.user", " "), Map.of()).user()).isNull();
    }

    @Test
    void environmentOverridesTheFile() throws Exception {
        Path file = dir.resolve("worker.properties");
        Files.writeString(file, "etcd.endpoints=http://file:2379\netcd.request.timeout.ms=3000\nother.setting=ignored\n");

        EtcdSettings settings = EtcdSettings.load(file,
                Map.of("FENCE_ETCD_ENDPOINTS", "https://env:2379", "FENCE_ETCD_LOCK_PREFIX", "mine/",
                        "FENCE_ETCD_USER", "worker", "FENCE_ETCD_PASSWORD", "s3cret"));

        assertThat(settings.endpoints()).containsExactly("https://env:2379");
        assertThat(settings.requestTimeout()).isEqualTo(Duration.ofSeconds(3));
        assertThat(settings.lockPrefix()).isEqualTo("mine/");
        assertThat(settings.tls()).isTrue();
        assertThat(settings.toString()).contains("user=worker").doesNotContain("s3cret");
        assertThat(EtcdSettings.environmentName(EtcdSettings.TLS_CA_FILE)).isEqualTo("FENCE_ETCD_TLS_CA_FILE");
    }

    @Test
    void aMissingFileIsFineWhenTheEnvironmentNamesTheEndpoints() throws Exception {
        EtcdSettings settings = EtcdSettings.load(dir.resolve("absent.properties"),
                Map.of("FENCE_ETCD_ENDPOINTS", "http://env:2379", "FENCE_ETCD_LOCK_PREFIX", "env/"));

        assertThat(settings.endpoints()).containsExactly("http://env:2379");
        assertThat(settings.lockPrefix()).isEqualTo("env/");
    }

    @Test
    void aMissingFileWithoutTheEnvironmentNamesTheFileAndTheVariable() {
        Path absent = dir.resolve("absent.properties");

        assertThatThrownBy(() -> EtcdSettings.load(absent, Map.of())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(absent.toString()).hasMessageContaining("FENCE_ETCD_ENDPOINTS")
                .hasMessageContaining("etcd.endpoints");
    }

    @Test
    void theVariablesKubernetesInjectsForAServiceNamedFenceEtcdAreNotSettings() {
        Map<String, String> serviceLinks = Map.of("FENCE_ETCD_SERVICE_HOST", "10.0.0.7", "FENCE_ETCD_SERVICE_PORT", "2379",
                "FENCE_ETCD_SERVICE_PORT_CLIENT", "2379", "FENCE_ETCD_PORT", "tcp://10.0.0.7:2379", "FENCE_ETCD_PORT_2379_TCP",
                "tcp://10.0.0.7:2379", "FENCE_ETCD_PORT_2379_TCP_ADDR", "10.0.0.7", "FENCE_ETCD_PORT_2379_TCP_PROTO", "tcp",
                "FENCE_ETCD_PORT_2379_TCP_PORT", "2379");
        Map<String, String> environment = new HashMap<>(serviceLinks);
        environment.put("FENCE_ETCD_ENDPOINTS", "http://fence-etcd:2379");

        assertThat(EtcdSettings.load(new Properties(), environment).endpoints()).containsExactly("http://fence-etcd:2379");
        assertThatThrownBy(() -> EtcdSettings.load(new Properties(), Map.of("FENCE_ETCD_ENDPOINTS", "http://a:2379",
                "FENCE_ETCD_LOCK_PREFX", "x/"))).hasMessageContaining("unknown environment variable FENCE_ETCD_LOCK_PREFX");
    }

    @Test
    void mistakesAreNamed() {
        assertThatThrownBy(() -> EtcdSettings.load(new Properties(), Map.of())).hasMessageContaining("etcd.endpoints")
                .hasMessageContaining("FENCE_ETCD_ENDPOINTS");
        assertThatThrownBy(() -> EtcdSettings.load(props("etcd.endpoints", "http://a:2379", "etcd.endpoint", "x"), Map.of()))
                .hasMessageContaining("unknown setting etcd.endpoint");
        assertThatThrownBy(() -> EtcdSettings.load(props("etcd.endpoints", "127.0.0.1:2379"), Map.of()))
                .hasMessageContaining("must be a URL starting with http:// or https://");
        assertThatThrownBy(
                () -> EtcdSettings.load(props("etcd.endpoints", "http://a:2379"), Map.of("FENCE_ETCD_ENDPOINT", "http://b:2379")))
                .hasMessageContaining("unknown environment variable FENCE_ETCD_ENDPOINT");
        assertThatThrownBy(() -> EtcdSettings.builder(List.of("http://a:2379,http://b:2379")).build())
                .hasMessageContaining("must be one URL with a host and a port");
        assertThatThrownBy(() -> EtcdSettings.load(props("etcd.endpoints", "http://a"), Map.of()))
                .hasMessageContaining("must be one URL with a host and a port");
        assertThatThrownBy(() -> EtcdSettings.load(props("etcd.endpoints", "http://a:2379", "etcd.user", "root"), Map.of()))
                .hasMessageContaining("etcd.user and etcd.password go together");
        assertThatThrownBy(
                () -> EtcdSettings.load(props("etcd.endpoints", "http://a:2379", "etcd.request.timeout.ms", "10s"), Map.of()))
                .hasMessageContaining("etcd.request.timeout.ms: '10s' is not a whole number of milliseconds");
        assertThatThrownBy(() -> EtcdSettings
                .load(props("etcd.endpoints", "http://a:2379", "etcd.tls.ca.file", "/nonexistent/ca.pem"), Map.of()))
                .hasMessageContaining("/nonexistent/ca.pem does not exist");
        assertThatThrownBy(() -> EtcdSettings.builder(List.of("http://a:2379")).connectTimeout(Duration.ZERO).build())
                .hasMessageContaining("etcd.connect.timeout.ms must be positive");
    }

    private static Properties props(String... pairs) {
        Properties properties = new Properties();
        for (int i = 0; i < pairs.length; i += 2) {
            properties.setProperty(pairs[i], pairs[i + 1]);
        }
        return properties;
    }
}
