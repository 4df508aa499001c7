package dev.fencedwrites.localstack;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.Properties;

/**
 * Where the build put what the stack runs (the Connect plugins, the JMX exporter agent and its rules), or the environment's
 * overrides.
 */
final class StackLocations {
    private StackLocations() {
    }

    static Properties load() {
        Properties props = new Properties();
        try (InputStream in = StackLocations.class.getResourceAsStream("locations.properties")) {
            if (in != null) {
                props.load(in);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        // The environment overrides where the build put things.
        Map.of("connect.plugin.path", "FENCE_CONNECT_PLUGIN_PATH",
                "jmx.exporter.agent", "FENCE_JMX_EXPORTER_AGENT", "jmx.exporter.config", "FENCE_JMX_EXPORTER_CONFIG")
                .forEach((property, variable) -> {
                    String value = System.getenv(variable);
                    if (value != null) {
                        props.setProperty(property, value);
                    }
                });
        return props;
    }
}
