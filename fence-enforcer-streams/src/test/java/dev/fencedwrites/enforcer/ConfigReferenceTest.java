package dev.fencedwrites.enforcer;

import dev.fencedwrites.testing.ConfigReference;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The checked-in configuration reference is generated from {@link FenceEnforcerConfig#DEFINITION}. Regenerate with
 * {@code mvn -pl fence-enforcer-streams test -Dtest=ConfigReferenceTest -Dconfig.reference.update=true}.
 */
class ConfigReferenceTest {

    @Test
    void checkedInReferenceMatchesTheDefinition() {
        ConfigReference.assertUpToDate(FenceEnforcerConfig.DEFINITION, "FenceEnforcerConfig.DEFINITION",
                Path.of("CONFIGURATION.rst"),
                "fence-enforcer-streams", "ConfigReferenceTest");
    }
}
