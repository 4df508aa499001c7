package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The checked-in configuration reference is generated from {@link FenceEnforcerConfig#DEFINITION} (Kafka's
 * {@code ConfigDef.toEnrichedRst()}). Regenerate with
 * {@code mvn -pl fence-enforcer-streams test -Dtest=ConfigReferenceTest -Dconfig.reference.update=true}.
 */
class ConfigReferenceTest {
    private static final Path REFERENCE = Path.of("CONFIGURATION.rst");

    @Test
    void checkedInReferenceMatchesTheDefinition() throws IOException {
        String generated = "Configuration reference\n=======================\n\n"
                + "Generated from ``FenceEnforcerConfig.DEFINITION``; do not edit by hand.\n\n" + FenceEnforcerConfig.DEFINITION.toEnrichedRst();
        if (Boolean.getBoolean("config.reference.update")) {
            Files.writeString(REFERENCE, generated);
        }
        assertThat(REFERENCE).as("%s is stale; regenerate it: mvn -pl fence-enforcer-streams test -Dtest=ConfigReferenceTest -Dconfig.reference.update=true",
                REFERENCE.toAbsolutePath()).exists();
        assertThat(Files.readString(REFERENCE)).as("%s is stale; regenerate it: mvn -pl fence-enforcer-streams test -Dtest=ConfigReferenceTest -Dconfig.reference.update=true",
                REFERENCE.toAbsolutePath()).isEqualTo(generated);
    }
}
