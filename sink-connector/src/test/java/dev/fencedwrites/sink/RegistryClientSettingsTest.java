package dev.fencedwrites.sink;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** Which of the connector's settings reach its schema registry client. */
class RegistryClientSettingsTest {
    @Test
    void registryAndBasicAuthKeysPassTheSinksOwnRetriesStayBehind() {
        FencedJdbcSinkConfig config = new FencedJdbcSinkConfig(Map.of(
                "connection.url", "jdbc:postgresql://127.0.0.1/db",
                "schema.registry.url", "http://a:1,http://b:2",
                "basic.auth.credentials.source", "USER_INFO",
                "basic.auth.user.info", "sink:pw",
                "schema.registry.ssl.truststore.location", "/etc/trust.jks",
                "max.retries", "10",
                "retry.backoff.ms", "1000"));

        assertThat(config.registryClientSettings()).containsOnly(
                Map.entry("schema.registry.url", "http://a:1,http://b:2"),
                Map.entry("basic.auth.credentials.source", "USER_INFO"),
                Map.entry("basic.auth.user.info", "sink:pw"),
                Map.entry("schema.registry.ssl.truststore.location", "/etc/trust.jks"),
                Map.entry("schema.registry.max.retries", 0));
    }

    @Test
    void theClientsRetriesCanBeSetWithThePrefix() {
        FencedJdbcSinkConfig config = new FencedJdbcSinkConfig(Map.of(
                "connection.url", "jdbc:postgresql://127.0.0.1/db", "schema.registry.url", "http://a:1",
                "schema.registry.max.retries", "2"));

        assertThat(config.registryClientSettings()).containsEntry("schema.registry.max.retries", "2");
    }

    @Test
    void theLoggedValuesHideCredentialsInUrls() {
        FencedJdbcSinkConfig config = new FencedJdbcSinkConfig(Map.of(
                "connection.url", "jdbc:postgresql://127.0.0.1/db?user=sink&password=db-s3cret&ssl=true",
                "schema.registry.url", "https://alice:p@ss/w0rd@registry-a:8081,https://registry-b:8081"));

        assertThat(config.loggable())
                .contains("schema.registry.url = https://***@registry-a:8081,https://registry-b:8081")
                .contains("connection.url = jdbc:postgresql://127.0.0.1/db?user=sink&password=***&ssl=true")
                .doesNotContain("s3cret").doesNotContain("w0rd").doesNotContain("alice");
    }
}
