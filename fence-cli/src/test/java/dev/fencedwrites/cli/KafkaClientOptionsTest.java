package dev.fencedwrites.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/**
 * The Kafka client options the operator commands share ({@code --command-config}, {@code -X},
 * {@code --bootstrap-server}) and the one line a refused client becomes; no service is needed.
 */
class KafkaClientOptionsTest {
    private static final String JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"ops\" "
            + "password=\"secret\";";

    @TempDir
    Path dir;

    private static StackOptions parse(String... args) {
        CommandLine line = FenceMain.commandLine();
        line.parseArgs(args);
        return ((FenceMain) line.getCommand()).stack();
    }

    @Test
    void theCommandConfigFileIsReadAndEachDashXWinsOverIt() throws IOException {
        Path file = Files.writeString(dir.resolve("client.properties"),
                "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config=" + JAAS + "\n");

        StackOptions stack = parse("rejected", "--command-config", file.toString(), "-X", "sasl.mechanism=SCRAM-SHA-512",
                "-X", "ssl.truststore.location=/tls/trust.p12");

        assertThat(stack.kafkaClient()).containsEntry("security.protocol", "SASL_SSL")
                .containsEntry("sasl.mechanism", "SCRAM-SHA-512").containsEntry("sasl.jaas.config", JAAS)
                .containsEntry("ssl.truststore.location", "/tls/trust.p12");
    }

    @Test
    void withoutCommandConfigTheEnvFilesKafkaCommandConfigIsUsedAsUpSecuredWritesIt() throws IOException {
        Path file = Files.writeString(dir.resolve("operator.properties"), "security.protocol=SASL_SSL\n");
        Path envFile = Files.writeString(dir.resolve("stack.env"), "KAFKA_BOOTSTRAP=127.0.0.1:9093\n"
                + StackOptions.COMMAND_CONFIG_VARIABLE + "=" + EnvFile.shellQuoted(file.toString()) + "\n");

        StackOptions stack = parse("rejected", "--env-file", envFile.toString());

        assertThat(stack.kafkaClient()).containsEntry("security.protocol", "SASL_SSL");
    }

    @ParameterizedTest
    @ValueSource(strings = {"--bootstrap-server", "--bootstrap"})
    void bootstrapServerIsAnAliasOfBootstrap(String option) throws IOException {
        StackOptions stack = parse("produce", "customer-7", option, "b:9093");

        assertThat(stack.bootstrap(false, new PrintWriter(new StringWriter()))).isEqualTo("b:9093");
    }

    @Test
    void withoutABootstrapOptionTheCommandConfigsBootstrapServersIsUsed() throws IOException {
        Path file = Files.writeString(dir.resolve("client.properties"), "bootstrap.servers=from-file:9093\n");

        StackOptions stack = parse("consume", "--command-config", file.toString());

        assertThat(stack.bootstrap(false, new PrintWriter(new StringWriter()))).isEqualTo("from-file:9093");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "--bootstrap-server b:1 inspect customer-7 | fence inspect: --bootstrap-server does not apply to fence inspect",
            "--command-config c.properties enforcer | fence enforcer: --command-config does not apply to fence enforcer",
            "-X acks=all inspect customer-7 | fence inspect: -X does not apply to fence inspect",
            "inspect customer-7 --command-config c.properties | fence inspect: Unknown options: '--command-config'"})
    void theKafkaClientOptionsAreRefusedByCommandsWithoutAKafkaClient(String args, String message) {
        StringWriter err = new StringWriter();
        CommandLine line = FenceMain.commandLine();
        line.setErr(new PrintWriter(err));

        int exit = line.execute(args.split(" "));

        assertThat(exit).isEqualTo(FenceMain.USAGE_ERROR);
        assertThat(err.toString().strip()).startsWith(message).doesNotContain("\n");
    }

    @Test
    void anAuthenticationFailureNamesTheUserAndSaslJaasConfig() {
        String line = KafkaRefusal.describe(new SaslAuthenticationException("Authentication failed: invalid credentials"),
                Map.of("sasl.jaas.config", JAAS));

        assertThat(line).isEqualTo("authentication failed for user ops: check sasl.jaas.config (username, password) and "
                + "sasl.mechanism in --command-config (or -X)");
    }

    @Test
    void aTlsFailureNamesTheTrustStoreAndTheRootCause() {
        SslAuthenticationException error = new SslAuthenticationException("SSL handshake failed",
                new IllegalStateException("PKIX path building failed: unable to find valid certification path"));

        assertThat(KafkaRefusal.describe(error, Map.of())).isEqualTo("TLS handshake with Kafka failed (PKIX path building "
                + "failed: unable to find valid certification path): check ssl.truststore.location in --command-config (or -X)");
    }

    @Test
    void aMissingAclNamesTheUserAndTheTopics() {
        String line = KafkaRefusal.describe(new TopicAuthorizationException(Set.of("fenced-writes-rejected")),
                Map.of("sasl.jaas.config", JAAS));

        assertThat(line).startsWith("user ops is not authorized to access topic(s) fenced-writes-rejected: it needs READ");
    }

    @Test
    void aSaslProtocolWithoutJaasConfigIsNamedAsMissingCredentials() {
        Exception error = new KafkaException("Failed to construct kafka consumer",
                new IllegalArgumentException("Could not find a 'KafkaClient' entry in the JAAS configuration."));

        assertThat(KafkaRefusal.describe(error, Map.of("security.protocol", "SASL_SSL")))
                .isEqualTo("no credentials: security.protocol SASL_SSL needs sasl.jaas.config in --command-config (or -X)");
    }

    @Test
    void anErrorThatIsNoRefusalIsLeftToTheCommand() {
        assertThat(KafkaRefusal.describe(new IllegalStateException("topic x does not exist"), Map.of())).isNull();
    }
}
