package dev.fencedwrites.avro.connect;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/**
 * The version {@link AvroConverter} reports to Connect ({@code GET /connector-plugins?connectorsOnly=false}): the
 * project's version as the build wrote it into {@code dev/fencedwrites/avro/connect/avro-serde.properties} (Maven
 * resource filtering of {@code ${project.version}}; issue 16).
 */
final class ConverterVersion {
    static final String RESOURCE = "avro-serde.properties";

    private ConverterVersion() {
    }

    /**
     * The filtered version, e.g. {@code 0.1.0-SNAPSHOT}.
     *
     * @throws IllegalStateException when the properties file is missing or was not filtered (a build without Maven)
     */
    static String get() {
        Properties properties = new Properties();
        try (InputStream in = ConverterVersion.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException(RESOURCE + " is not on the class path; build avro-serde with Maven");
            }
            properties.load(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        String version = properties.getProperty("version");
        if (version == null || version.isBlank() || version.contains("${")) {
            throw new IllegalStateException(RESOURCE + " has no filtered version (" + version + "); build avro-serde with Maven");
        }
        return version;
    }
}
