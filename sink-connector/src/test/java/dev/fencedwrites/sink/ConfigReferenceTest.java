package dev.fencedwrites.sink;

import dev.fencedwrites.testing.ConfigReference;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The checked-in configuration reference is generated from {@link FencedJdbcSinkConfig#DEFINITION}. Regenerate with
 * {@code mvn -pl sink-connector test -Dtest=ConfigReferenceTest -Dconfig.reference.update=true}.
 */
class ConfigReferenceTest {

    @Test
    void checkedInReferenceMatchesTheDefinition() {
        ConfigReference.assertUpToDate(FencedJdbcSinkConfig.DEFINITION, "FencedJdbcSinkConfig.DEFINITION",
                Path.of("CONFIGURATION.rst"),
                "sink-connector", "ConfigReferenceTest");
    }
}
