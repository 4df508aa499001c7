package dev.fencedwrites.cli;

import dev.fencedwrites.buildinfo.ModuleVersion;
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
        return ModuleVersion.read(BuildVersion.class, RESOURCE, "fence-cli");
    }

    @Override
    public String[] getVersion() {
        return new String[]{"fenced-writes " + version()};
    }
}
