package dev.fencedwrites.avro;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencedwrites.testing.FakeSchemaRegistry;
import dev.fencedwrites.testing.FakeSchemaRegistry.Answer;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client over HTTPS with the {@code schema.registry.ssl.*} settings, against an HTTPS server
 * demanding a client certificate; the certificates are made here with the JDK's keytool.
 */
@Tag("process")
class RestSchemaRegistryClientTlsTest {
    private static final String PASSWORD = "changeit";

    @TempDir
    static Path dir;
    private static FakeSchemaRegistry registry;

    @BeforeAll
    static void certificatesAndServer() throws Exception {
        // server and client key pairs (PKCS12); each side trusts the other's certificate (JKS trust stores)
        keytool("-genkeypair", "-alias", "server", "-keyalg", "RSA", "-keysize", "2048", "-validity", "2", "-dname",
                "CN=localhost",
                "-ext", "SAN=ip:127.0.0.1,dns:localhost", "-keystore", "server.p12", "-storetype", "PKCS12", "-storepass",
                PASSWORD);
        keytool("-genkeypair", "-alias", "client", "-keyalg", "RSA", "-keysize", "2048", "-validity", "2", "-dname",
                "CN=registry-client",
                "-keystore", "client.p12", "-storetype", "PKCS12", "-storepass", PASSWORD);
        keytool("-exportcert", "-alias", "server", "-keystore", "server.p12", "-storepass", PASSWORD, "-rfc", "-file",
                "server.pem");
        keytool("-exportcert", "-alias", "client", "-keystore", "client.p12", "-storepass", PASSWORD, "-rfc", "-file",
                "client.pem");
        keytool("-importcert", "-noprompt", "-alias", "server", "-file", "server.pem", "-keystore", "client-trust.jks",
                "-storetype", "JKS",
                "-storepass", PASSWORD);
        keytool("-importcert", "-noprompt", "-alias", "client", "-file", "client.pem", "-keystore", "server-trust.jks",
                "-storetype", "JKS",
                "-storepass", PASSWORD);

        KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        keys.init(load("server.p12", "PKCS12"), PASSWORD.toCharArray());
        TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(load("server-trust.jks", "JKS"));
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(keys.getKeyManagers(), trust.getTrustManagers(), null);
        registry = FakeSchemaRegistry.https(context, true, r -> Answer.ok("[\"over-tls-value\"]"));
    }

    @AfterAll
    static void stop() {
        if (registry != null) {
            registry.close();
        }
    }

    private static KeyStore load(String file, String type) throws Exception {
        KeyStore store = KeyStore.getInstance(type);
        try (InputStream in = Files.newInputStream(dir.resolve(file))) {
            store.load(in, PASSWORD.toCharArray());
        }
        return store;
    }

    private static void keytool(String... args) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes());
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue()).as("keytool %s: %s", args[0], output).isZero();
    }

    private static Map<String, Object> tls(boolean withClientCertificate) {
        Map<String, Object> settings = new HashMap<>(Map.of(
                AvroSerdeConfig.SCHEMA_REGISTRY_URL, registry.url(),
                AvroSerdeConfig.MAX_RETRIES, 0,
                AvroSerdeConfig.SSL_TRUSTSTORE_LOCATION, dir.resolve("client-trust.jks").toString(),
                AvroSerdeConfig.SSL_TRUSTSTORE_PASSWORD, PASSWORD,
                AvroSerdeConfig.SSL_TRUSTSTORE_TYPE, "JKS"));
        if (withClientCertificate) {
            settings.put(AvroSerdeConfig.SSL_KEYSTORE_LOCATION, dir.resolve("client.p12").toString());
            settings.put(AvroSerdeConfig.SSL_KEYSTORE_PASSWORD, PASSWORD);
            settings.put(AvroSerdeConfig.SSL_KEYSTORE_TYPE, "PKCS12");
            settings.put(AvroSerdeConfig.SSL_KEY_PASSWORD, PASSWORD);
        }
        return settings;
    }

    @Test
    void trustStoreAndClientCertificateReachTheRegistry() {
        assertThat(registry.url()).startsWith("https://");
        assertThat(new RestSchemaRegistryClient(tls(true)).subjects()).containsExactly("over-tls-value");
    }

    @Test
    void withoutTheClientCertificateTheHandshakeFails() {
        assertThatThrownBy(() -> new RestSchemaRegistryClient(tls(false)).subjects())
                .isInstanceOfSatisfying(SchemaRegistryException.class, e -> assertThat(e.httpStatus()).isEqualTo(-1))
                .hasMessageContaining("list the subjects");
    }

    @Test
    void withoutTheTrustStoreTheServerIsNotTrusted() {
        Map<String, Object> settings = tls(true);
        settings.remove(AvroSerdeConfig.SSL_TRUSTSTORE_LOCATION);

        assertThatThrownBy(() -> new RestSchemaRegistryClient(settings).subjects())
                .isInstanceOfSatisfying(SchemaRegistryException.class, e -> assertThat(e.httpStatus()).isEqualTo(-1));
    }

    @Test
    void aWrongKeyStorePasswordIsAConfigErrorNamingTheFile() {
        Map<String, Object> settings = tls(true);
        settings.put(AvroSerdeConfig.SSL_KEYSTORE_PASSWORD, "wrong");

        assertThatThrownBy(() -> new RestSchemaRegistryClient(settings))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining(AvroSerdeConfig.SSL_KEYSTORE_LOCATION).hasMessageContaining("client.p12");
    }
}
