package dev.fencedwrites.avro;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;

/** Parsing of the registry client's Confluent-named settings. */
class ClientSettingsTest {
    private static String basic(String userInfo) {
        return "Basic " + Base64.getEncoder().encodeToString(userInfo.getBytes(StandardCharsets.UTF_8));
    }

    private static Map<String, Object> with(String url, Object... pairs) {
        Map<String, Object> map = new HashMap<>();
        map.put(AvroSerdeConfig.SCHEMA_REGISTRY_URL, url);
        for (int i = 0; i < pairs.length; i += 2) {
            map.put((String) pairs[i], pairs[i + 1]);
        }
        return map;
    }

    @Test
    void severalUrlsInOrderTrimmedWithoutTrailingSlash() {
        ClientSettings settings = ClientSettings.from(with(" http://a:1/apis/ccompat/v7/ , https://b:2 ,,http://c:3"));

        assertThat(settings.endpoints).extracting(ClientSettings.Endpoint::uri)
                .containsExactly(URI.create("http://a:1/apis/ccompat/v7"), URI.create("https://b:2"), URI.create("http://c:3"));
        assertThat(settings.endpoints).extracting(ClientSettings.Endpoint::authorization).containsOnlyNulls();
    }

    @Test
    void defaultsFollowConfluentExceptTheTimeouts() {
        ClientSettings settings = ClientSettings.from(with("http://a:1"));

        assertThat(settings.maxRetries).isEqualTo(3);
        assertThat(settings.retriesWaitMs).isEqualTo(1000);
        assertThat(settings.retriesMaxWaitMs).isEqualTo(2000);
        assertThat(settings.maxSchemasPerSubject).isEqualTo(1000);
        assertThat(settings.latestCacheSize).isEqualTo(1000);
        assertThat(settings.latestCacheTtlSec).isEqualTo(-1);
        assertThat(settings.connectTimeout).isEqualTo(Duration.ofSeconds(10));
        assertThat(settings.readTimeout).isEqualTo(Duration.ofSeconds(10));
        assertThat(settings.sslContext).isNull();
    }

    @Test
    void numbersAsStringsOrNumbersAndPrefixedFormWins() {
        ClientSettings settings = ClientSettings.from(with("http://a:1", "max.retries", "7", "schema.registry.max.retries", 2,
                "retries.wait.ms", 5L, "retries.max.wait.ms", "50", "max.schemas.per.subject", "3",
                "schema.registry.request.timeout.ms", "1500",
                "http.connect.timeout.ms", 700));

        assertThat(settings.maxRetries).isEqualTo(2);
        assertThat(settings.retriesWaitMs).isEqualTo(5);
        assertThat(settings.retriesMaxWaitMs).isEqualTo(50);
        assertThat(settings.maxSchemasPerSubject).isEqualTo(3);
        assertThat(settings.readTimeout).isEqualTo(Duration.ofMillis(1500));
        assertThat(settings.connectTimeout).isEqualTo(Duration.ofMillis(700));
    }

    @Test
    void httpReadTimeoutWinsOverTheOlderRequestTimeoutName() {
        ClientSettings settings = ClientSettings
                .from(with("http://a:1", "schema.registry.request.timeout.ms", "1500", "http.read.timeout.ms", "2500"));

        assertThat(settings.readTimeout).isEqualTo(Duration.ofMillis(2500));
    }

    @Test
    void badNumbersAreRefusedNamingTheSetting() {
        assertThatThrownBy(() -> ClientSettings.from(with("http://a:1", "max.retries", "three")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("max.retries")
                .hasMessageContaining("not a whole number");
        assertThatThrownBy(() -> ClientSettings.from(with("http://a:1", "max.retries", "-1")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("max.retries").hasMessageContaining("at least 0");
        assertThatThrownBy(() -> ClientSettings.from(with("http://a:1", "max.schemas.per.subject", "0")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("max.schemas.per.subject")
                .hasMessageContaining("at least 1");
    }

    @Test
    void missingOrBadUrlIsRefused() {
        assertThatThrownBy(() -> ClientSettings.from(Map.of())).isInstanceOf(ConfigException.class)
                .hasMessageContaining("schema.registry.url is required");
        assertThatThrownBy(() -> ClientSettings.from(with(" , "))).isInstanceOf(ConfigException.class)
                .hasMessageContaining("no URL");
        assertThatThrownBy(() -> ClientSettings.from(with("http://a:1,ftp://b"))).isInstanceOf(ConfigException.class)
                .hasMessageContaining("ftp://b").hasMessageContaining("expected http://");
        assertThatThrownBy(() -> ClientSettings.from(with("localhost:8081"))).isInstanceOf(ConfigException.class)
                .hasMessageContaining("expected http://");
    }

    @Test
    void urlCredentialsSourceIsTheDefaultAndTakesEachUrlsOwnUserInfo() {
        ClientSettings settings = ClientSettings.from(with("http://alice:s%40cret@a:1,http://b:2,https://bob:pw@c:3/x"));

        assertThat(settings.endpoints).extracting(ClientSettings.Endpoint::uri)
                .containsExactly(URI.create("http://a:1"), URI.create("http://b:2"), URI.create("https://c:3/x"));
        assertThat(settings.endpoints).extracting(ClientSettings.Endpoint::authorization)
                .containsExactly(basic("alice:s@cret"), null, basic("bob:pw"));
    }

    @Test
    void userInfoSourceSendsTheSameCredentialsToEveryUrlAndAcceptsThePrefixedName() {
        ClientSettings bare = ClientSettings.from(with("http://a:1,http://b:2", "basic.auth.credentials.source", "USER_INFO",
                "basic.auth.user.info", "alice:pw"));
        ClientSettings prefixed = ClientSettings
                .from(with("http://x:y@a:1", "schema.registry.basic.auth.credentials.source", "user_info",
                        "basic.auth.user.info", "ignored:pw", "schema.registry.basic.auth.user.info", "carol:pw2"));

        assertThat(bare.endpoints).extracting(ClientSettings.Endpoint::authorization).containsExactly(basic("alice:pw"),
                basic("alice:pw"));
        assertThat(prefixed.endpoints).extracting(ClientSettings.Endpoint::authorization).containsExactly(basic("carol:pw2"));
    }

    @Test
    void unsupportedOrIncompleteAuthIsRefusedClearlyWithoutPrintingSecrets() {
        assertThatThrownBy(() -> ClientSettings.from(with("http://a:1", "basic.auth.credentials.source", "SASL_INHERIT")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("basic.auth.credentials.source")
                .hasMessageContaining("SASL_INHERIT")
                .hasMessageContaining("not supported").hasMessageContaining("USER_INFO");
        assertThatThrownBy(() -> ClientSettings.from(with("http://a:1", "basic.auth.credentials.source", "USER_INFO")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("needs basic.auth.user.info");
        assertThatThrownBy(() -> ClientSettings.from(with("http://a:1", "basic.auth.credentials.source", "USER_INFO",
                "basic.auth.user.info", "justapassword")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("user:password")
                .hasMessageNotContaining("justapassword");
        assertThatThrownBy(() -> ClientSettings.from(with("http://a:1", "bearer.auth.credentials.source", "STATIC_TOKEN")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("bearer.auth.credentials.source is not supported");
    }

    @Test
    void urlsInMessagesHideCredentials() {
        assertThat(ClientSettings.redact("https://bob:pw@c:3/x")).isEqualTo("https://***@c:3/x");
        assertThat(ClientSettings.redact("http://alice:p@ss@registry:8081")).isEqualTo("http://***@registry:8081");
        assertThat(ClientSettings.redact("http://alice:pa/ss@registry:8081")).isEqualTo("http://***@registry:8081");
        assertThat(ClientSettings.redact("http://registry:8081/x")).isEqualTo("http://registry:8081/x");
        assertThatThrownBy(() -> ClientSettings.from(with("ftp://bob:pw@c")))
                .isInstanceOf(ConfigException.class).hasMessageNotContaining("pw");
    }

    @Test
    void hostnameVerificationCannotBeTurnedOff() {
        assertThatThrownBy(
                () -> ClientSettings.from(with("https://a:1", "schema.registry.ssl.endpoint.identification.algorithm", "")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("only https");
        assertThat(ClientSettings
                .from(with("https://a:1", "schema.registry.ssl.endpoint.identification.algorithm", "HTTPS")).sslContext).isNull();
    }

    @Test
    void missingTrustStoreIsRefusedNamingTheSetting() {
        assertThatThrownBy(() -> ClientSettings
                .from(with("https://a:1", "schema.registry.ssl.truststore.location", "/nonexistent/trust.jks")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("schema.registry.ssl.truststore.location")
                .hasMessageContaining("/nonexistent/trust.jks");
        assertThatThrownBy(
                () -> ClientSettings.from(with("https://a:1", "schema.registry.ssl.truststore.location", "/nonexistent/trust.jks",
                        "schema.registry.ssl.truststore.type", "NOPE")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("schema.registry.ssl.truststore.type");
    }

    @Test
    void booleansAreStrict() {
        assertThat(ClientSettings.bool(Map.of("auto.register.schemas", "FALSE"), "auto.register.schemas", true)).isFalse();
        assertThat(ClientSettings.bool(Map.of("auto.register.schemas", true), "auto.register.schemas", false)).isTrue();
        assertThat(ClientSettings.bool(Map.of(), "auto.register.schemas", true)).isTrue();
        assertThatThrownBy(() -> ClientSettings.bool(Map.of("use.latest.version", "yes"), "use.latest.version", false))
                .isInstanceOf(ConfigException.class).hasMessageContaining("use.latest.version")
                .hasMessageContaining("true or false");
    }
}
