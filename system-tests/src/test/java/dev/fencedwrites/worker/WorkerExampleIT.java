package dev.fencedwrites.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.contract.NewTopics;
import dev.fencedwrites.enforcer.FenceEnforcerConfig;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.services.EnforcerProcess;
import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.Service;
import dev.fencedwrites.testing.EtcdNodeExtension;
import dev.fencedwrites.testing.KafkaBrokerExtension;
import dev.fencedwrites.testing.SchemaRegistryExtension;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Needs real services: the example worker, built from outside this repository against the deployed libraries, must take
 * a real etcd lease and lock, write through a real broker and schema registry, and hear the real enforcer's decisions.
 */
@Tag("slow")
@Timeout(value = 8, unit = TimeUnit.MINUTES)
class WorkerExampleIT {
    private static final Duration TTL = Duration.ofSeconds(5);

    @RegisterExtension
    static final EtcdNodeExtension etcdNode = new EtcdNodeExtension();
    @RegisterExtension
    static final KafkaBrokerExtension kafkaBroker = new KafkaBrokerExtension();
    @RegisterExtension
    static final SchemaRegistryExtension registry = new SchemaRegistryExtension();
    /** The deploy and the example's build, most of this class's time, run from class loading on, beside the services' start. */
    private static final Path BUILD_DIR = newDirectory();
    private static final ExampleBuild BUILD = new ExampleBuild(BUILD_DIR);
    /** The oldest kafka-clients producer-lib supports (the parent's {@code kafka.oldest.version}). */
    private static final String OLDEST_CLIENTS = System.getProperty("kafka.oldest.version");
    private static final CompletableFuture<Map<String, Path>> BUILT = CompletableFuture.supplyAsync(() -> {
        try {
            Path deployed = BUILD.deploy();
            return Map.of("current", BUILD.buildExample(deployed), "oldest",
                    BUILD.buildExample(deployed, "worker-kafka-" + OLDEST_CLIENTS, "kafka.version=" + OLDEST_CLIENTS));
        } catch (Exception e) {
            throw new CompletionException(e);
        }
    });

    @TempDir
    static Path dir;
    /** The example's jar by the kafka-clients it runs on: "current" (the libraries' own) and "oldest". */
    static Map<String, Path> workerJars;
    static Service enforcer;

    @BeforeAll
    static void startTheEnforcerAndAwaitTheBuild() throws Exception {
        Properties admin = new Properties();
        admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafkaBroker.service().address());
        List<String> topics = List.of(FenceTopics.INPUT, FenceTopics.ACCEPTED, FenceTopics.REJECTED, FenceTopics.MARKERS);
        try (Admin client = Admin.create(admin)) {
            client.createTopics(topics.stream().map(topic -> new NewTopic(topic, 3, (short) 1)).toList()).all().get(60,
                    TimeUnit.SECONDS);
            NewTopics.awaitWritable(client, topics, Duration.ofSeconds(60));
        }
        enforcer = EnforcerProcess.start(dir.resolve("enforcer"), kafkaBroker.log4j2(), kafkaBroker.service().address(),
                Map.of(FenceEnforcerConfig.TOKEN_VERIFICATION_ENABLE, "true", EtcdSettings.ENDPOINTS,
                        etcdNode.service().address()));
        try {
            workerJars = BUILT.get(5, TimeUnit.MINUTES);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() instanceof CompletionException wrapped ? wrapped.getCause() : e.getCause();
            if (cause instanceof Error error) {
                throw error; // an assertion of the build, with Maven's output
            }
            throw e;
        }
    }

    @AfterAll
    static void stopTheEnforcerAndRemoveTheBuild() throws IOException {
        if (enforcer != null) {
            enforcer.close();
        }
        BUILT.cancel(false);
        try (Stream<Path> files = Files.walk(BUILD_DIR)) {
            files.sorted(Comparator.reverseOrder()).forEach(file -> file.toFile().delete());
        }
    }

    private static Path newDirectory() {
        try {
            return Files.createTempDirectory("worker-example-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void theLibrariesAreDeployedWithSourcesAndJavadocAndTheExampleGotThemFromThere() throws IOException {
        String version = System.getProperty("fence.version");
        for (String library : ExampleBuild.LIBRARIES) {
            Path folder = BUILD.deployedRepository().resolve("dev/fencedwrites").resolve(library).resolve(version);
            try (var files = Files.list(folder)) {
                assertThat(files.map(f -> f.getFileName().toString()).toList()).as(library)
                        .anyMatch(name -> name.matches(library + "-.*\\d-sources\\.jar"))
                        .anyMatch(name -> name.matches(library + "-.*\\d-javadoc\\.jar"))
                        .anyMatch(name -> name.matches(library + "-.*\\d\\.jar")).anyMatch(name -> name.endsWith(".pom"));
            }
            assertThat(BUILD.exampleRepository().resolve("dev/fencedwrites").resolve(library).resolve(version)
                    .resolve("_remote.repositories")).content().contains("fenced-writes-deployed");
        }
    }

    /** The build for the oldest clients runs on them: the example's kafka.version reaches producer-lib's class path. */
    @Test
    void theOldestClientsBuildRunsOnTheOldestKafkaClients() throws IOException {
        try (Stream<Path> lib = Files.list(workerJars.get("oldest").resolveSibling("lib"))) {
            assertThat(lib.map(jar -> jar.getFileName().toString()).filter(jar -> jar.startsWith("kafka-clients-")))
                    .containsExactly("kafka-clients-" + OLDEST_CLIENTS + ".jar");
        }
    }

    /**
     * A takeover between workers on different kafka-clients, each way round: the libraries' own and the oldest supported
     * ({@code kafka.oldest.version}), so the lease, the marker, an accepted write, a fenced write and the decisions heard
     * back all run on both.
     */
    @ParameterizedTest(name = "worker A on the {0} kafka-clients, worker B on the {1}")
    @CsvSource({"oldest, current", "current, oldest"})
    void aSecondWorkerTakesOverAndTheFirstWorkersLateWriteIsReportedToItAsFenced(String clientsOfA, String clientsOfB)
            throws Exception {
        String resource = "customer-" + UUID.randomUUID();
        // A queues its write (checked under its lease) and holds it in the producer's buffer: the window a pause can hit.
        Worker a = Worker.start("worker-A-" + clientsOfA, workerJars.get(clientsOfA), resource,
                Map.of("WORKER_WRITES", "1", "WORKER_LINGER_MS", "600000"));
        try {
            await().atMost(Duration.ofMinutes(2))
                    .failFast(() -> assertThat(a.process().isAlive()).as("worker A is running; %s", a.describe()).isTrue())
                    .until(() -> a.output().contains("queued"));
            assertThat(Http.get(a.line("metrics")).body()).as("the worker's /metrics")
                    .contains("fence_lease_acquired_total").contains("jvm_memory_used_bytes");
            long tokenA = a.token();
            a.signal("STOP"); // a stop-the-world pause: no keep-alives, so etcd expires A's lease after the TTL

            Worker b = Worker.start("worker-B-" + clientsOfB, workerJars.get(clientsOfB), resource,
                    Map.of("WORKER_WRITES", "1"));
            assertThat(b.waitFor()).as("B's exit status; %s", b.describe()).isZero();
            long tokenB = b.token();
            assertThat(tokenB).isGreaterThan(tokenA);
            assertThat(b.output()).contains("accepted  " + resource + "  token=" + tokenB + ".1 -> " + FenceTopics.ACCEPTED);

            a.signal("CONT"); // A resumes: it finds its lease lost, stops, and closing its producer delivers the queued write
            assertThat(a.waitFor()).as("A's exit status (3: fenced); %s", a.describe()).isEqualTo(3);
            a.assertNoLinkageError();
            b.assertNoLinkageError();
            assertThat(a.output()).contains("stopping  worker-A-" + clientsOfA + " lost its lease")
                    .contains("FENCED    " + resource + "  token=" + tokenA + ".1  STALE_TOKEN by the fence " + tokenB + ".1")
                    .doesNotContain("accepted  ");
        } finally {
            a.signal("CONT");
            a.process.destroyForcibly();
        }
    }

    /** One run of the example worker, its output in a file. */
    private record Worker(Process process, Path log) {
        static Worker start(String id, Path workerJar, String resource, Map<String, String> settings) throws IOException {
            Path out = dir.resolve(id + ".out");
            ProcessBuilder builder = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-jar", workerJar.toString()).directory(dir.toFile()).redirectOutput(out.toFile())
                    .redirectError(dir.resolve(id + ".err").toFile());
            Map<String, String> env = builder.environment();
            env.keySet().removeIf(name -> name.startsWith("FENCE_") || name.startsWith("WORKER_"));
            env.putAll(new HashMap<>(Map.of("KAFKA_BOOTSTRAP", kafkaBroker.service().address(), "SCHEMA_REGISTRY_URL",
                    registry.url(), "FENCE_ETCD_ENDPOINTS", etcdNode.service().address(), "WORKER_ID", id, "WORKER_RESOURCE",
                    resource, "WORKER_TTL_MS", Long.toString(TTL.toMillis()))));
            env.putAll(settings);
            return new Worker(builder.start(), out);
        }

        String output() throws IOException {
            return Files.readString(log);
        }

        /**
         * A class or method of a newer kafka-clients than the one the worker runs on shows up as a linkage error, often on
         * a background thread whose failure changes no output line (closing the decisions watcher, say).
         */
        void assertNoLinkageError() throws IOException {
            assertThat(describe()).as("worker %s's output and log", log.getFileName()).doesNotContain("NoClassDefFoundError",
                    "NoSuchMethodError", "AbstractMethodError", "IncompatibleClassChangeError", "NoSuchFieldError");
        }

        /** Its output and its log, for a failure message. */
        String describe() throws IOException {
            Path err = log.resolveSibling(log.getFileName().toString().replace(".out", ".err"));
            return "its output:%n%s%nits log:%n%s".formatted(output(), Files.exists(err) ? Files.readString(err) : "");
        }

        /** The rest of the first line that starts with {@code what}. */
        String line(String what) throws IOException {
            Matcher found = Pattern.compile("(?m)^" + what + " +(.*)$").matcher(output());
            assertThat(found.find()).as("a %s line in:%n%s", what, output()).isTrue();
            return found.group(1).trim();
        }

        long token() throws IOException {
            Matcher found = Pattern.compile("token=(\\d+)").matcher(line("lease"));
            assertThat(found.find()).isTrue();
            return Long.parseLong(found.group(1));
        }

        int waitFor() throws InterruptedException {
            assertThat(process.waitFor(3, TimeUnit.MINUTES)).as("the worker exited").isTrue();
            return process.exitValue();
        }

        void signal(String signal) throws IOException, InterruptedException {
            if (process.isAlive()) {
                new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start().waitFor();
            }
        }
    }
}
