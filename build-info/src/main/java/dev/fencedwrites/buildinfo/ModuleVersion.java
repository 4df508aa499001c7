package dev.fencedwrites.buildinfo;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/**
 * The version a module reports about itself (to Connect's {@code GET /connector-plugins}, to {@code fence --version}): the
 * project's version as the Maven build wrote it into a properties resource beside a class of that module (resource
 * filtering of {@code version=${project.version}}: never a placeholder such as "dev" or "undefined").
 */
public final class ModuleVersion {
    private ModuleVersion() {
    }

    /**
     * Reads {@code version} from {@code resource}, resolved relative to {@code anchor}'s package.
     *
     * @param anchor   a class of the module, whose class loader and package locate the resource
     * @param resource the properties file's name, e.g. {@code sink-connector.properties}
     * @param module   the module's artifact id, named in the error
     * @return the filtered version, e.g. {@code 0.1.0-SNAPSHOT}
     * @throws IllegalStateException when the resource is missing or was not filtered (a build without Maven)
     * @throws UncheckedIOException  when the resource cannot be read
     */
    public static String read(Class<?> anchor, String resource, String module) {
        Properties properties = new Properties();
        try (InputStream in = anchor.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException(resource + " is not on the class path; build " + module + " with Maven");
            }
            properties.load(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        String version = properties.getProperty("version");
        if (version == null || version.isBlank() || version.contains("${")) {
            throw new IllegalStateException(
                    resource + " has no filtered version (" + version + "); build " + module + " with Maven");
        }
        return version;
    }
}
