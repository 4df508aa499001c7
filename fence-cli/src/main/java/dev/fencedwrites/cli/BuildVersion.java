package dev.fencedwrites.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;
import picocli.CommandLine.IVersionProvider;

/**
 * {@code --version} of every {@code fence} command: the project's version as the build wrote it into
 * {@code dev/fencedwrites/cli/fence-cli.properties} (Maven resource filtering of {@code ${project.version}}).
 */
public final class BuildVersion implements IVersionProvider {
    static final String RESOURCE = "fence-cli.properties";

    /**
     * The version the build filtered in, e.g. {@code 0.1.0-SNAPSHOT}.
     *
     * @throws IllegalStateException when the properties file is missing or was not filtered (a build from an IDE without Maven)
     */
    public static String version() {
        Properties properties = new Properties();
        try (InputStream in = BuildVersion.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException(RESOURCE + " is not on the class path; build fence-cli with Maven");
            }
            properties.load(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        String version = properties.getProperty("version");
        if (version == null || version.isBlank() || version.contains("${")) {
            throw new IllegalStateException(RESOURCE + " has no filtered version (" + version + "); build fence-cli with Maven");
        }
        return version;
    }

    @Override
    public String[] getVersion() {
        return new String[]{"fenced-writes " + version()};
    }
}
