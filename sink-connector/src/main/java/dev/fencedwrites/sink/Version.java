package dev.fencedwrites.sink;

/** The plugin version, from the jar manifest. */
final class Version {
    private Version() {
    }

    static String get() {
        String version = Version.class.getPackage().getImplementationVersion();
        return version == null ? "dev" : version;
    }
}
