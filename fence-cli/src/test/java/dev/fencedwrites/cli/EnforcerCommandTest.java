package dev.fencedwrites.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code fence enforcer} hands every argument to the enforcer's own main, so its help and exit status are the enforcer's.
 * Each case runs {@code FenceMain} in a child JVM, since the enforcer's main ends its JVM with {@code System.exit}.
 */
@Tag("process")
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class EnforcerCommandTest {
    private record Run(int exit, String output) {
    }

    private static Run fence(String... args) throws Exception {
        List<String> command = new ArrayList<>(
                List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-cp", System.getProperty("java.class.path"), FenceMain.class.getName()));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        return new Run(process.waitFor(), output);
    }

    @Test
    void helpIsTheEnforcersOwn() throws Exception {
        Run run = fence("enforcer", "--help");

        assertThat(run.exit()).as(run.output()).isZero();
        assertThat(run.output()).contains("Usage: fence-enforcer", "--config=FILE");
    }

    @Test
    void anUnreadableConfigurationExitsWithTheEnforcersStatusTwo() throws Exception {
        Run run = fence("enforcer", "--config", "target/no-such-enforcer.properties");

        assertThat(run.exit()).as(run.output()).isEqualTo(2);
        assertThat(run.output()).contains(
                "fence-enforcer: invalid configuration: cannot read enforcer configuration target/no-such-enforcer.properties");
    }

    /** A security setting without the streams. prefix would be ignored, so the enforcer connected in plaintext. */
    @Test
    void aKafkaSettingWithoutTheStreamsPrefixStopsTheEnforcerWithStatusTwoNamingThePrefixedName() throws Exception {
        Path config = Files.writeString(Files.createTempDirectory("enforcer-config").resolve("enforcer.properties"),
                "bootstrap.servers=127.0.0.1:9093\nsecurity.protocol=SASL_SSL\n");

        Run run = fence("enforcer", "--config", config.toString());

        assertThat(run.exit()).as(run.output()).isEqualTo(2);
        assertThat(run.output()).contains("fence-enforcer: invalid configuration: security.protocol is a Kafka client or "
                + "Streams setting, which the enforcer passes on only with the prefix streams.: set streams.security.protocol "
                + "instead");
    }
}
