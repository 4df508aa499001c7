package dev.fencedwrites.sink;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/**
 * The version the connector and its task report to Connect ({@code GET /connector-plugins}): the project's version as
 * the build wrote it into {@code dev/fencedwrites/sink/sink-connector.properties} (Maven resource filtering of
 * {@code ${project.version}}; issue 16: never a placeholder such as "dev").
 */
final class Version {
    static final String RESOURCE = "sink-connector.properties";

    private Version() {
    }

    /**
     * The filtered version, e.g. {@code 0.1.0-SNAPSHOT}.
     *
     * @throws IllegalStateException when the properties file is missing or was not filtered (a build without Maven)
     */
    static String get() {
        Properties properties = new Properties();
        try (InputStream in = Version.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException(RESOURCE + " is not on the class path; build sink-connector with Maven");
            }
            properties.load(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        String version = properties.getProperty("version");
        if (version == null || version.isBlank() || version.contains("${")) {
            throw new IllegalStateException(
                    RESOURCE + " has no filtered version (" + version + "); build sink-connector with Maven");
        }
        return version;
    }
}
