package dev.fencedwrites.avro.connect;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The version Connect shows for the converter is the build's, not Converter's default "undefined". */
class ConverterVersionTest {
    @Test
    void theConverterReportsThePomVersionToConnect() {
        String buildVersion = System.getProperty("project.version");
        assertThat(buildVersion).as("system property project.version (surefire)").isNotBlank();
        assertThat(new AvroConverter().version()).isEqualTo(buildVersion);
    }
}
