package dev.fencedwrites.avro.connect;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.kafka.connect.components.Versioned;
import org.junit.jupiter.api.Test;

/** The version Connect shows for the converter is the build's (issue 16), not "undefined" or a placeholder. */
class ConverterVersionTest {
    @Test
    void theConverterReportsThePomVersionToConnect() {
        String buildVersion = System.getProperty("project.version");
        assertThat(buildVersion).as("system property project.version (surefire)").isNotBlank();
        Object converter = new AvroConverter();
        assertThat(converter).isInstanceOf(Versioned.class);
        assertThat(((Versioned) converter).version()).isEqualTo(buildVersion);
    }
}
