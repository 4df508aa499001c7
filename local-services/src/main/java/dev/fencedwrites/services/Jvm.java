package dev.fencedwrites.services;

import java.io.File;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Command lines for child JVMs that run with this JVM's class path. */
public final class Jvm {
    /**
     * System property with options for every child JVM, before its own, separated by spaces; unset or blank: none. The
     * integration tests set {@code -XX:+UseSerialGC -XX:TieredStopAtLevel=1} (failsafe's systemPropertyVariables): their
     * services live for a minute on 2 shared cores, where G1's threads and C2 compilations cost more start-up CPU than they
     * save; {@code ./fence up} and the benchmarks leave it unset.
     */
    public static final String CHILD_OPTIONS = "fence.child.jvm.options";

    private Jvm() {
    }

    /** The options of {@link #CHILD_OPTIONS}, in order; empty when it is unset or blank. */
    public static List<String> childOptions() {
        String options = System.getProperty(CHILD_OPTIONS, "").strip();
        return options.isEmpty() ? List.of() : List.of(options.split("\\s+"));
    }

    /** The java launcher of the running JVM. */
    public static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** This JVM's class path with every entry made absolute, since children run in other directories. */
    public static String classPath() {
        StringBuilder path = new StringBuilder();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (!entry.isEmpty()) {
                path.append(path.length() == 0 ? "" : File.pathSeparator).append(Path.of(entry).toAbsolutePath());
            }
        }
        return path.toString();
    }

    /**
     * {@code java <child options> <jvmArgs> -cp <this class path> -Dlog4j2.configurationFile=<log4j2> <mainClass> <args>}.
     *
     * @param log4j2 a log4j2 properties file for the child, or {@code null}
     */
    public static List<String> command(List<String> jvmArgs, Path log4j2, String mainClass, List<String> args) {
        return command(jvmArgs, classPath(), log4j2, mainClass, args);
    }

    /**
     * {@code java <child options> <jvmArgs> -cp <classPath> -Dlog4j2.configurationFile=<log4j2> <mainClass> <args>}
     * (the child options of {@link #CHILD_OPTIONS}; a later option of {@code jvmArgs} wins).
     *
     * @param classPath the child's class path, absolute entries separated by {@link File#pathSeparator}
     * @param log4j2    a log4j2 properties file for the child, or {@code null}
     */
    public static List<String> command(List<String> jvmArgs, String classPath, Path log4j2, String mainClass,
            List<String> args) {
        List<String> command = new ArrayList<>();
        command.add(java());
        command.addAll(childOptions());
        command.addAll(jvmArgs);
        command.add("-cp");
        command.add(classPath);
        if (log4j2 != null) {
            command.add("-Dlog4j2.configurationFile=" + log4j2);
        }
        command.add(mainClass);
        command.addAll(args);
        return command;
    }
}
