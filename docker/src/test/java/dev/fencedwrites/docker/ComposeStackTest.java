package dev.fencedwrites.docker;

import static dev.fencedwrites.docker.StackFiles.DIR;
import static dev.fencedwrites.docker.StackFiles.ROOT;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.enforcer.FenceEnforcerApp;
import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.services.Tools;
import dev.fencedwrites.sink.FencedJdbcSinkConfig;
import dev.fencedwrites.sink.FencedJdbcSinkConnector;
import java.io.IOException;
import java.io.StringReader;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Checks docker/compose.yaml and the files it mounts, parsed, against each other and the project's code. */
@Tag("process")
class ComposeStackTest {
    /** The sink metrics' exporter configuration, written by the sink-metrics work; checked in DashboardTest once it exists. */
    static final String JMX_EXPORTER_CONFIG = "../config/connect-jmx-exporter.yml";

    /** The project's version, from the build (surefire's systemPropertyVariables). */
    static final String PROJECT_VERSION = System.getProperty("project.version", "unknown");

    private final JsonNode compose = StackFiles.compose();
    private final JsonNode services = compose.path("services");

    /** Compose's own reading of the file: Debian's docker-compose (v1) validates it without a Docker daemon. */
    @Test
    void dockerComposeAcceptsTheFile() throws Exception {
        Path dockerCompose = Tools.require("docker-compose", "apt-get install -y docker-compose");
        Process check = new ProcessBuilder(dockerCompose.toString(), "-f", StackFiles.DIR.resolve("compose.yaml").toString(),
                "config", "-q").redirectErrorStream(true).start();
        String output = new String(check.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(check.waitFor(60, TimeUnit.SECONDS)).as("docker-compose config finished").isTrue();
        assertThat(check.exitValue()).as("docker-compose -f docker/compose.yaml config -q: %s", output).isZero();
    }

    @Test
    void everyPublishedPortBindsLoopbackOnly() {
        List<String> ports = new ArrayList<>();
        services.forEach(service -> service.path("ports").forEach(port -> ports.add(port.asText())));
        assertThat(ports).hasSizeGreaterThanOrEqualTo(9);
        assertThat(ports).allSatisfy(port -> assertThat(port).matches("127\\.0\\.0\\.1:\\d+:\\d+"));
        // No host port is published twice.
        List<Integer> hostPorts = StackFiles.publishedPorts(compose).values().stream().flatMap(List::stream).toList();
        assertThat(hostPorts).doesNotHaveDuplicates();
    }

    @Test
    void everyImageIsPinnedToATag() {
        assertThat(StackFiles.services(compose)).hasSizeGreaterThanOrEqualTo(10);
        services.fields().forEachRemaining(entry -> {
            String image = entry.getValue().path("image").asText("");
            assertThat(image).as("image of service %s", entry.getKey()).isNotEmpty().doesNotContain("${");
            int slash = image.lastIndexOf('/');
            int colon = image.lastIndexOf(':');
            assertThat(colon).as("tag of %s (%s)", entry.getKey(), image).isGreaterThan(slash);
            String tag = image.substring(colon + 1);
            assertThat(tag).as("tag of %s", entry.getKey()).isNotEmpty().isNotEqualToIgnoringCase("latest")
                    .matches(".*\\d.*"); // a version, not a moving name like "stable" or "lts"
        });
    }

    @Test
    void dockerfilesPinTheirBaseImages() {
        String dockerfile = StackFiles.text(DIR.resolve("enforcer/Dockerfile"));
        List<String> froms = new ArrayList<>();
        Matcher from = Pattern.compile("(?m)^FROM\\s+(\\S+)").matcher(dockerfile);
        while (from.find()) {
            froms.add(from.group(1));
        }
        assertThat(froms).hasSize(1)
                .allSatisfy(image -> assertThat(image).matches("[a-z0-9./-]+:[A-Za-z0-9._-]*\\d[A-Za-z0-9._-]*"));
        assertThat(dockerfile).contains("HEALTHCHECK").contains("/health/ready");
    }

    /**
     * The enforcer's image unpacks the distribution archive the build made (the docker module depends on the
     * distribution module, so it exists here) and runs its launcher, which runs FenceEnforcerApp; no Maven in the image.
     */
    @Test
    void theEnforcerImageRunsTheDistributionArchive() throws Exception {
        String dockerfile = StackFiles.text(DIR.resolve("enforcer/Dockerfile"));
        assertThat(dockerfile).doesNotContainPattern("(?m)^RUN .*\\bmvn\\b")
                .contains("ARG FENCED_WRITES_VERSION=" + PROJECT_VERSION + "\n")
                .contains("ADD distribution/target/fenced-writes-${FENCED_WRITES_VERSION}.tar.gz /opt/\n")
                .contains("RUN ln -s /opt/fenced-writes-${FENCED_WRITES_VERSION} /opt/fenced-writes\n")
                .contains("ENTRYPOINT [\"/opt/fenced-writes/bin/fence-enforcer\"]");
        Path archive = ROOT.resolve("distribution/target/fenced-writes-" + PROJECT_VERSION + ".tar.gz");
        assertThat(archive).as("built by mvn package (the distribution module)").isRegularFile();
        Process list = new ProcessBuilder("tar", "-tzf", archive.toString()).redirectError(ProcessBuilder.Redirect.DISCARD)
                .start();
        String entries = new String(list.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(list.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String top = "fenced-writes-" + PROJECT_VERSION + "/";
        assertThat(entries.lines()).contains(top + "bin/fence-enforcer", top + "config/log4j2.properties")
                .anyMatch(entry -> entry.matches(Pattern.quote(top) + "lib/fence-enforcer-streams-.*\\.jar"));
        String launcher = StackFiles.text(ROOT.resolve("distribution/src/bin/fence-enforcer"));
        assertThat(launcher).contains("dev.fencedwrites.enforcer.FenceEnforcerApp").contains("exec ");
        assertThat(services.path("enforcer").path("image").asText()).isEqualTo("fenced-writes/fence-enforcer:" + PROJECT_VERSION);
        // BuildKit sends only what the image needs from the repository root.
        assertThat(StackFiles.text(DIR.resolve("enforcer/Dockerfile.dockerignore")).lines())
                .contains("*", "!distribution/target/fenced-writes-*.tar.gz", "!docker/healthcheck/http-ok.sh");
    }

    /** `docker stop` sends SIGTERM, then SIGKILL after the grace period: the enforcer must have its shutdown timeout first. */
    @Test
    void theEnforcersStopGracePeriodIsLongerThanItsShutdownTimeout() {
        String grace = services.path("enforcer").path("stop_grace_period").asText();
        Matcher seconds = Pattern.compile("(\\d+)s").matcher(grace);
        assertThat(seconds.matches()).as("stop_grace_period in seconds, e.g. 45s: %s", grace).isTrue();
        assertThat(Duration.ofSeconds(Long.parseLong(seconds.group(1))))
                .isGreaterThan(FenceEnforcerApp.SHUTDOWN_TIMEOUT.plusSeconds(5));
    }

    /** The compose stack verifies tokens against the etcd its workers lock with, once that etcd is healthy. */
    @Test
    void theEnforcerVerifiesTokensAgainstTheStacksEtcd() {
        JsonNode enforcer = services.path("enforcer");
        assertThat(enforcer.path("environment").path("FENCE_ETCD_ENDPOINTS").asText()).isEqualTo("http://etcd:2379");
        assertThat(enforcer.path("environment").has("FENCE_ENFORCER_TOKEN_VERIFICATION_ENABLE"))
                .as("on by default with endpoints").isFalse();
        assertThat(enforcer.path("depends_on").path("etcd").path("condition").asText()).isEqualTo("service_healthy");
        assertThat(services.path("etcd").path("command").toString()).contains("--advertise-client-urls=http://etcd:2379");
    }

    @Test
    void everyLongRunningServiceHasAHealthcheckAndOneShotsDoNotRestart() {
        services.fields().forEachRemaining(entry -> {
            JsonNode service = entry.getValue();
            if (service.path("restart").asText().equals("no")) {
                return;
            }
            boolean inCompose = service.has("healthcheck");
            boolean inDockerfile = service.has("build")
                    && StackFiles.text(ROOT.resolve(service.path("build").path("dockerfile").asText())).contains("HEALTHCHECK");
            assertThat(inCompose || inDockerfile).as("healthcheck of %s", entry.getKey()).isTrue();
        });
        assertThat(services.path("kafka-init").path("restart").asText()).isEqualTo("no");
        assertThat(services.path("connect-register").path("restart").asText()).isEqualTo("no");
    }

    @Test
    void dependenciesWaitForHealthyServicesAndFinishedOneShots() {
        Set<String> names = new LinkedHashSet<>(StackFiles.services(compose));
        int conditions = 0;
        for (Iterator<Map.Entry<String, JsonNode>> it = services.fields(); it.hasNext();) {
            Map.Entry<String, JsonNode> entry = it.next();
            for (Iterator<Map.Entry<String, JsonNode>> deps = entry.getValue().path("depends_on").fields(); deps.hasNext();) {
                Map.Entry<String, JsonNode> dep = deps.next();
                assertThat(names).as("%s depends on %s", entry.getKey(), dep.getKey()).contains(dep.getKey());
                JsonNode target = services.path(dep.getKey());
                String condition = dep.getValue().path("condition").asText();
                if (target.path("restart").asText().equals("no")) {
                    assertThat(condition).as("%s -> %s", entry.getKey(), dep.getKey())
                            .isEqualTo("service_completed_successfully");
                } else {
                    assertThat(condition).as("%s -> %s", entry.getKey(), dep.getKey()).isEqualTo("service_healthy");
                }
                conditions++;
            }
        }
        assertThat(conditions).isGreaterThanOrEqualTo(10);
    }

    @Test
    void everyMountedHostPathExists() {
        // target/connect-plugins and target/jmx-exporter are made by this module's build (generate-resources).
        List<String> missing = new ArrayList<>();
        services.forEach(service -> StackFiles.bindMounts(service).forEach(mount -> {
            if (!Files.exists(DIR.resolve(mount[0])) && !mount[0].equals(JMX_EXPORTER_CONFIG)) {
                missing.add(mount[0]);
            }
        }));
        assertThat(missing).isEmpty();
        // The sink's component archive, unzipped: one plugin directory, fencedwrites-fenced-jdbc-sink-<version>/.
        try (var plugins = Files.list(DIR.resolve("target/connect-plugins"))) {
            List<Path> components = plugins.toList();
            assertThat(components).hasSize(1);
            assertThat(components.get(0).getFileName().toString()).startsWith("fencedwrites-fenced-jdbc-sink-");
            try (var jars = Files.list(components.get(0).resolve("lib"))) {
                assertThat(jars.map(p -> p.getFileName().toString())).anyMatch(name -> name.startsWith("sink-connector-"));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        assertThat(DIR.resolve("target/jmx-exporter/jmx_prometheus_javaagent.jar")).isRegularFile();
    }

    @Test
    void theTopicsAreThoseOfTheLocalStack() {
        String script = StackFiles.text(DIR.resolve("kafka/create-topics.sh"));
        for (String topic : List.of(FenceTopics.INPUT, FenceTopics.ACCEPTED, FenceTopics.REJECTED, FenceTopics.MARKERS)) {
            assertThat(script).containsPattern("(?m)^create " + Pattern.quote(topic) + "( |$)");
        }
        assertThat(script).contains("--partitions " + LocalStack.PARTITIONS);
        assertThat(script).contains("create " + FenceTopics.REJECTED + " --config max.message.bytes=" + (1048588 + 64 * 1024));
        JsonNode init = services.path("kafka-init");
        assertThat(init.path("image").asText()).isEqualTo(services.path("kafka").path("image").asText());
        String mounted = StackFiles.mountTarget(init, "./kafka/create-topics.sh").orElseThrow();
        assertThat(init.path("command").toString()).contains(mounted).contains(internalKafka());
    }

    @Test
    void theSinkConnectorConfigIsValidAndPointsAtTheStack() throws Exception {
        JsonNode config = StackFiles.json("connect/billing-summary-sink.json");
        Map<String, String> props = new HashMap<>();
        config.fields().forEachRemaining(e -> props.put(e.getKey(), e.getValue().asText()));
        assertThat(props).containsEntry("connector.class", FencedJdbcSinkConnector.class.getName())
                .containsEntry("topics", FenceTopics.ACCEPTED + "," + FenceTopics.MARKERS)
                .containsEntry("errors.tolerance", "all")
                .containsEntry("errors.deadletterqueue.topic.name", FenceTopics.REJECTED)
                .containsEntry(FencedJdbcSinkConfig.TABLE_NAME, BillingConnectors.TABLE);
        // Every key that is not Connect's own belongs to the sink, and the connector starts with the values.
        Set<String> sinkKeys = FencedJdbcSinkConfig.DEFINITION.names();
        Set<String> connectKeys = Set.of("connector.class", "tasks.max", "topics", "header.converter",
                "consumer.override.isolation.level");
        props.keySet().stream().filter(key -> !key.startsWith("errors.") && !connectKeys.contains(key))
                .forEach(key -> assertThat(sinkKeys).as("sink setting %s", key).contains(key));
        new FencedJdbcSinkConnector().start(props);
        // The database and the registry are the stack's services, on their container ports.
        URI database = URI.create(props.get(FencedJdbcSinkConfig.CONNECTION_URL).substring("jdbc:".length()));
        assertThat(database.getHost()).isEqualTo("postgres");
        assertThat(database.getPort()).isEqualTo(5432);
        assertThat(services.path("postgres").path("environment").path("POSTGRES_PASSWORD").asText())
                .isEqualTo(props.get(FencedJdbcSinkConfig.CONNECTION_PASSWORD));
        URI registry = URI.create(props.get(FencedJdbcSinkConfig.SCHEMA_REGISTRY_URL));
        assertThat(registry.getHost()).isEqualTo("schema-registry");
        assertThat(services.path("schema-registry").path("environment").path("SCHEMA_REGISTRY_LISTENERS").asText())
                .endsWith(":" + registry.getPort());

        JsonNode register = services.path("connect-register");
        String command = register.path("command").toString();
        assertThat(command).contains("PUT")
                .contains("http://connect:8083/connectors/" + BillingConnectors.SINK_CONNECTOR + "/config")
                .contains("@" + StackFiles.mountTarget(register, "./connect/billing-summary-sink.json").orElseThrow());
    }

    @Test
    void theConnectWorkerLoadsTheMountedPluginAndRunsTheExporterAgent() throws IOException {
        JsonNode connect = services.path("connect");
        Properties worker = new Properties();
        worker.load(new StringReader(StackFiles.text(DIR.resolve("connect/worker.properties"))));
        assertThat(worker.getProperty("plugin.path"))
                .isEqualTo(StackFiles.mountTarget(connect, "./target/connect-plugins").orElseThrow());
        assertThat(worker.getProperty("bootstrap.servers")).isEqualTo(internalKafka());
        assertThat(worker.getProperty("value.converter")).isEqualTo("org.apache.kafka.connect.converters.ByteArrayConverter");
        assertThat(worker.getProperty("consumer.isolation.level")).isEqualTo("read_committed");
        assertThat(connect.path("command").toString())
                .contains(StackFiles.mountTarget(connect, "./connect/worker.properties").orElseThrow());
        String agent = StackFiles.mountTarget(connect, "./target/jmx-exporter/jmx_prometheus_javaagent.jar").orElseThrow();
        String exporterConfig = StackFiles.mountTarget(connect, JMX_EXPORTER_CONFIG).orElseThrow();
        assertThat(connect.path("environment").path("KAFKA_OPTS").asText())
                .isEqualTo("-javaagent:" + agent + "=9404:" + exporterConfig);
    }

    @Test
    void prometheusScrapesTheEnforcerAndTheConnectExporter() {
        JsonNode prometheus = StackFiles.yaml("prometheus/prometheus.yml");
        Map<String, String> targets = new HashMap<>();
        prometheus.path("scrape_configs").forEach(job -> job.path("static_configs")
                .forEach(sc -> sc.path("targets").forEach(t -> targets.put(job.path("job_name").asText(), t.asText()))));
        assertThat(targets).containsEntry("fence-enforcer", "enforcer:8090").containsEntry("kafka-connect", "connect:9404");
        assertThat(StackFiles.text(DIR.resolve("enforcer/Dockerfile"))).contains("FENCE_ENFORCER_HTTP_PORT=8090");
        assertThat(StackFiles.mountTarget(services.path("prometheus"), "./prometheus/prometheus.yml"))
                .contains("/etc/prometheus/prometheus.yml");
    }

    @Test
    void theComposeGuideAndTheDockerPageNameEveryServiceAndPort() {
        String dockerReadme = StackFiles.text(DIR.resolve("COMPOSE.md"));
        String dockerSection = StackFiles.text(ROOT.resolve("docs/operate/docker.md"));
        StackFiles.publishedPorts(compose).forEach((service, ports) -> {
            for (String text : List.of(dockerReadme, dockerSection)) {
                assertThat(text).as("COMPOSE.md and docs/operate/docker.md mention service %s", service)
                        .contains("`" + service + "`");
                ports.forEach(
                        port -> assertThat(text).as("COMPOSE.md and docs/operate/docker.md mention port %s of %s", port, service)
                                .containsPattern("\\b" + port + "\\b"));
            }
        });
        services.fields().forEachRemaining(e -> assertThat(dockerReadme).contains("`" + e.getKey() + "`")
                .contains(e.getValue().path("image").asText()));
    }

    @Test
    void theHealthcheckScriptPassesOnlyOn200() throws Exception {
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/health", exchange -> {
            exchange.sendResponseHeaders(200, -1);
            exchange.close();
        });
        server.createContext("/starting", exchange -> {
            exchange.sendResponseHeaders(503, -1);
            exchange.close();
        });
        server.start();
        try {
            int port = server.getAddress().getPort();
            assertThat(runHealthcheck(port, "/health")).isZero();
            assertThat(runHealthcheck(port, "/starting")).isEqualTo(1);
        } finally {
            server.stop(0);
        }
        int closed;
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closed = socket.getLocalPort();
        }
        assertThat(runHealthcheck(closed, "/health")).isEqualTo(1);
    }

    private static int runHealthcheck(int port, String path) throws Exception {
        Process process = new ProcessBuilder("bash", DIR.resolve("healthcheck/http-ok.sh").toString(), Integer.toString(port),
                path)
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        assertThat(process.waitFor(20, TimeUnit.SECONDS)).isTrue();
        return process.exitValue();
    }

    /** The address containers use for Kafka: the INTERNAL advertised listener. */
    private String internalKafka() {
        String advertised = services.path("kafka").path("environment").path("KAFKA_ADVERTISED_LISTENERS").asText();
        Matcher internal = Pattern.compile("INTERNAL://([^,]+)").matcher(advertised);
        assertThat(internal.find()).isTrue();
        return internal.group(1);
    }
}
