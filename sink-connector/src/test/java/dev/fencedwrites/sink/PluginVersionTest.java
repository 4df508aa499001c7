package dev.fencedwrites.sink;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The version Connect shows for the sink is the build's, not a placeholder. */
class PluginVersionTest {
    /** The pom's version, passed by surefire. */
    private static final String BUILD_VERSION = System.getProperty("project.version");

    @Test
    void theConnectorReportsThePomVersion() {
        assertThat(BUILD_VERSION).as("system property project.version (surefire)").isNotBlank();
        assertThat(new FencedJdbcSinkConnector().version()).isEqualTo(BUILD_VERSION).isNotEqualTo("dev");
    }

    @Test
    void theTaskReportsTheSameVersionAsItsConnector() {
        assertThat(new FencedJdbcSinkTask().version()).isEqualTo(new FencedJdbcSinkConnector().version());
    }
}
