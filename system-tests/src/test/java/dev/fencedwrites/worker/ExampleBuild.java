package dev.fencedwrites.worker;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Deploys the libraries users depend on to a file repository and builds {@code examples/worker} from a copy outside this
 * repository against it, with Maven run as a user would ({@code mvn} of the running build). Third-party artifacts come from
 * the build's own local repository, read as a remote one, so nothing is downloaded when the build has them; the example's
 * local repository is a fresh one, so {@code dev.fencedwrites} artifacts can come only from the deployed repository.
 */
final class ExampleBuild {
    /** The libraries a worker depends on, in deploy order, after their parent pom. */
    static final List<String> LIBRARIES = List.of("build-info", "contract", "schemas", "etcd-lock", "avro-serde", "producer-lib");

    private final Path root;
    private final String version;
    private final Path buildRepository;
    private final Path dir;

    ExampleBuild(Path dir) {
        this.root = Path.of(System.getProperty("fence.root"));
        this.version = System.getProperty("fence.version");
        this.buildRepository = Path.of(System.getProperty("fence.maven.repo.local"));
        this.dir = dir;
    }

    /** {@code mvn deploy:deploy-file} of the parent pom and each library's jar, sources and Javadoc into a file repository. */
    Path deploy() throws Exception {
        Path deployed = deployedRepository();
        StringBuilder executions = new StringBuilder(execution("parent", root.resolve("pom.xml"), root.resolve("pom.xml"), null));
        for (String library : LIBRARIES) {
            Path target = root.resolve(library).resolve("target");
            Path jar = target.resolve(library + "-" + version + ".jar");
            assertThat(jar).as("run mvn package first: the libraries' jars are deployed as built").exists();
            executions.append(execution(library, jar, root.resolve(library).resolve("pom.xml"), target.resolve(library + "-"
                    + version)));
        }
        Path deployer = dir.resolve("deployer");
        Files.createDirectories(deployer);
        Files.writeString(deployer.resolve("pom.xml"), """
                <project xmlns="http://maven.apache.org/POM/4.0.0">
                  <modelVersion>4.0.0</modelVersion>
                  <groupId>deployer</groupId><artifactId>deployer</artifactId><version>1</version><packaging>pom</packaging>
                  <build><plugins><plugin>
                    <groupId>org.apache.maven.plugins</groupId><artifactId>maven-deploy-plugin</artifactId><version>%s</version>
                    <configuration><url>%s</url><repositoryId>fenced-writes-deployed</repositoryId></configuration>
                    <executions>%s</executions>
                  </plugin></plugins></build>
                </project>
                """.formatted(System.getProperty("fence.deploy.plugin.version"), deployed.toUri(), executions));
        mvn(deployer, "-Dmaven.repo.local=" + buildRepository, "validate");
        return deployed;
    }

    private static String execution(String id, Path file, Path pom, Path classifiedPrefix) {
        String attached = classifiedPrefix == null
                ? ""
                : "<sources>" + classifiedPrefix + "-sources.jar</sources><javadoc>" + classifiedPrefix
                        + "-javadoc.jar</javadoc>";
        return "<execution><id>" + id + "</id><phase>validate</phase><goals><goal>deploy-file</goal></goals><configuration>"
                + "<file>" + file + "</file><pomFile>" + pom + "</pomFile>" + attached + "</configuration></execution>";
    }

    /** Copies the example out of the repository and packages it against {@code deployed}; returns its runnable jar. */
    Path buildExample(Path deployed) throws Exception {
        return buildExample(deployed, "worker");
    }

    /**
     * As {@link #buildExample(Path)}, into {@code name} (a directory of its own), with {@code properties} set on the
     * example's build ({@code -Dkafka.version=3.6.2}: the kafka-clients it runs on).
     */
    Path buildExample(Path deployed, String name, String... properties) throws Exception {
        Path example = dir.resolve(name);
        Path source = root.resolve("examples").resolve("worker");
        try (Stream<Path> files = Files.walk(source)) {
            for (Path file : files.filter(f -> !source.relativize(f).startsWith("target")).toList()) {
                Files.copy(file, example.resolve(source.relativize(file).toString()));
            }
        }
        Path settings = dir.resolve("settings.xml");
        Files.writeString(settings,
                """
                          <settings>
                            <localRepository>%s</localRepository>
                            <profiles><profile><id>repositories</id>
                              <repositories>
                                <repository>
                          <id>build-local</id><url>%s</url><snapshots><enabled>false</enabled></snapshots>
                        </repository>
                                <repository><id>fenced-writes-deployed</id><url>%s</url></repository>
                              </repositories>
                              <pluginRepositories>
                                <pluginRepository>
                          <id>build-local</id><url>%s</url><snapshots><enabled>false</enabled></snapshots>
                        </pluginRepository>
                              </pluginRepositories>
                            </profile></profiles>
                            <activeProfiles><activeProfile>repositories</activeProfile></activeProfiles>
                          </settings>
                          """
                        .formatted(dir.resolve("example-m2"), buildRepository.toUri(), deployed.toUri(),
                                buildRepository.toUri()));
        List<String> args = new ArrayList<>(List.of("-s", settings.toString(), "-Dfenced-writes.version=" + version));
        for (String property : properties) {
            args.add("-D" + property);
        }
        args.add("package");
        mvn(example, args.toArray(String[]::new));
        return example.resolve("target").resolve("fenced-worker.jar");
    }

    /** The file repository {@link #deploy} deploys to. */
    Path deployedRepository() {
        return dir.resolve("deployed");
    }

    /** The local repository the example was built with. */
    Path exampleRepository() {
        return dir.resolve("example-m2");
    }

    private void mvn(Path project, String... args) throws IOException, InterruptedException {
        String home = System.getProperty("fence.maven.home");
        List<String> command = new ArrayList<>(List.of(home == null ? "mvn" : Path.of(home, "bin", "mvn").toString(), "-B",
                "-ntp", "-q"));
        command.addAll(List.of(args));
        Path log = dir.resolve(project.getFileName() + "-mvn.log");
        ProcessBuilder builder = new ProcessBuilder(command).directory(project.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile());
        builder.environment().remove("MAVEN_OPTS"); // the outer build's options (a local repository) are not the user's
        Process process = builder.start();
        boolean done = process.waitFor(5, TimeUnit.MINUTES);
        if (!done) {
            process.destroyForcibly();
        }
        assertThat(done && process.exitValue() == 0)
                .as("%s in %s failed; its output:%n%s", command, project, Files.readString(log))
                .isTrue();
    }
}
