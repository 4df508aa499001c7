package dev.fencedwrites.distribution;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.services.EtcdNode;
import dev.fencedwrites.services.FreePorts;
import dev.fencedwrites.services.KafkaBroker;
import dev.fencedwrites.services.Log4j2Config;
import dev.fencedwrites.services.PostgresServer;
import dev.fencedwrites.services.SchemaRegistryServer;
import dev.fencedwrites.services.Service;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: the enforcer and the command line of the unpacked archive, started by its own launchers from a
 * directory outside the repository, against a real broker, etcd, registry and PostgreSQL (first acceptance
 * point: a stale write rejected, produce and inspect working, with nothing of the build tree on their class path).
 */
@Timeout(value = 8, unit = TimeUnit.MINUTES)
class DistributionPipelineIT {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    static Path outside;
    static Installed dist;
    static final List<AutoCloseable> SERVICES = new ArrayList<>();
    static Service kafka;
    static Service etcd;
    /** A second etcd, whose revisions are far behind the first's: a writer that locks there holds a stale token. */
    static Service staleEtcd;
    static Service registry;
    static PostgresServer postgres;
    static Process enforcer;
    static Path enforcerLog;
    static String enforcerUrl;
    static Path cliEnv;

    @BeforeAll
    static void installAndStart() throws Exception {
        dist = Installed.unpack(Files.createDirectory(outside.resolve("opt")));
        Path services = Files.createDirectory(outside.resolve("services"));
        Path log4j2 = Log4j2Config.write(services.resolve("log4j2.properties"), "WARN");
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            Future<Service> kafkaStart = pool.submit(started(() -> KafkaBroker.start(services.resolve("kafka"), log4j2)));
            Future<Service> etcdStart = pool.submit(started(() -> EtcdNode.start(services.resolve("etcd"))));
            Future<Service> registryStart = pool.submit(started(() -> SchemaRegistryServer.start(services.resolve("registry"))));
            Future<PostgresServer> postgresStart = pool.submit(started(() -> PostgresServer.start(services.resolve("postgres"))));
            staleEtcd = started(() -> EtcdNode.start(services.resolve("stale-etcd"))).call();
            kafka = kafkaStart.get();
            etcd = etcdStart.get();
            registry = registryStart.get();
            postgres = postgresStart.get();
        } finally {
            pool.shutdownNow();
        }
        startEnforcer();
        cliEnv = cliEnvFile();
        // The sink, which is not in this archive, creates its table with its first write: here the table stands empty, so
        // that inspect's database half has a table to read.
        try (Connection db = DriverManager.getConnection(postgres.jdbcUrl()); Statement ddl = db.createStatement()) {
            ddl.execute("CREATE TABLE billing_summary (resource_key TEXT PRIMARY KEY, fence_token BIGINT NOT NULL, "
                    + "fence_seq BIGINT, deleted BOOLEAN NOT NULL DEFAULT false, updated_at TIMESTAMPTZ)");
        }
    }

    /**
     * {@code bin/fence-enforcer FILE}, FILE being the shipped sample with this test's addresses appended (a later line of a
     * properties file wins), run from a directory outside the repository; returns once {@code /health} answers 200.
     */
    private static void startEnforcer() throws Exception {
        int port = FreePorts.pick();
        Path config = outside.resolve("enforcer.properties");
        Files.writeString(config, Installed.read(dist.home.resolve("config/enforcer.properties")) + String.join("\n",
                "", "bootstrap.servers=" + kafka.address(), "application.id=dist-enforcer", "etcd.endpoints=" + etcd.address(),
                "state.dir=" + outside.resolve("enforcer-state"), "http.host=127.0.0.1", "http.port=" + port,
                "topics.create.enable=true", "topics.create.replication.factor=1", ""));
        enforcerLog = outside.resolve("enforcer.log");
        enforcer = Installed.withEnvironment(new ProcessBuilder(dist.home.resolve("bin/fence-enforcer").toString(),
                config.toString()), Map.of("FENCE_HEAP_OPTS", "-Xmx256m")).directory(outside.toFile())
                .redirectErrorStream(true).redirectOutput(enforcerLog.toFile()).start();
        enforcerUrl = "http://127.0.0.1:" + port;
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        await().atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(500)).ignoreExceptionsInstanceOf(IOException.class)
                .untilAsserted(() -> {
                    assertThat(enforcer.isAlive()).as("the enforcer runs%n%s", Installed.read(enforcerLog)).isTrue();
                    HttpResponse<String> health = http.send(HttpRequest.newBuilder(URI.create(enforcerUrl + "/health"))
                            .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
                    assertThat(health.statusCode()).as(health.body()).isEqualTo(200);
                });
    }

    /** The shipped cli.properties with each address replaced by this test's, in the same KEY=value form. */
    private static Path cliEnvFile() throws Exception {
        Map<String, String> addresses = Map.of("KAFKA_BOOTSTRAP", kafka.address(), "ETCD_ENDPOINTS", etcd.address(),
                "SCHEMA_REGISTRY_URL", registry.address(), "ENFORCER_URL", enforcerUrl,
                "POSTGRES_URL", "'" + postgres.jdbcUrl() + "'");
        List<String> lines = new ArrayList<>();
        for (String line : Installed.read(dist.home.resolve("config/cli.properties")).lines().toList()) {
            int eq = line.indexOf('=');
            String name = line.startsWith("#") || eq < 0 ? null : line.substring(0, eq);
            assertThat(name == null || addresses.containsKey(name)).as("a setting this test fills in: %s", line).isTrue();
            lines.add(name == null ? line : name + "=" + addresses.get(name));
        }
        return Files.writeString(outside.resolve("cli.properties"), String.join("\n", lines) + "\n");
    }

    @AfterAll
    static void stop() throws Exception {
        if (enforcer != null) {
            enforcer.destroy(); // SIGTERM: the launchers exec java, so the JVM gets it and closes Kafka Streams
            if (!enforcer.waitFor(2, TimeUnit.MINUTES)) {
                enforcer.destroyForcibly();
            }
        }
        for (int i = SERVICES.size() - 1; i >= 0; i--) {
            SERVICES.get(i).close();
        }
    }

    /**
     * The demo's story with the archive's own programs: two writers take the key's lease in turn (the second supersedes
     * the first), then a writer whose lock came from an etcd far behind writes with a lower token, and the enforcer
     * started by {@code bin/fence-enforcer} rejects it STALE_TOKEN onto the rejected topic.
     */
    @Test
    void theEnforcerFromTheArchiveRejectsAStaleWriteThatTheCommandLineMadeAndReportsIt() throws Exception {
        String key = "customer-" + UUID.randomUUID();
        long first = acceptedToken(fence("produce", key, "--amount", "1999", "--writer", "worker-A"), key);
        long holder = acceptedToken(fence("produce", key, "--amount", "2550", "--writer", "worker-B"), key);
        assertThat(holder).as("the later lease's fencing token").isGreaterThan(first);

        Installed.Run stale = fence("--etcd", staleEtcd.address(), "produce", key, "--amount", "100", "--writer", "worker-C");
        assertThat(stale.exit()).as(stale.output()).isEqualTo(3);
        Matcher rejected = Pattern.compile("rejected " + Pattern.quote(key) + "  token=(\\d+)\\.1  STALE_TOKEN  highest="
                + holder + "\\.1  stage=enforcer").matcher(stale.out());
        assertThat(rejected.find()).as(stale.output()).isTrue();
        long staleToken = Long.parseLong(rejected.group(1));
        assertThat(staleToken).isLessThan(holder);

        // On the topic: the stale writer's FENCE marker (seq 0) and its write (seq 1), each with its reason and the fence
        // that refused it (read committed: the enforcer writes in transactions).
        List<ConsumerRecord<String, byte[]>> copies = records(FenceTopics.REJECTED).stream()
                .filter(r -> key.equals(r.key())).toList();
        assertThat(copies).extracting(copy -> header(copy, FenceHeaders.SEQ)).containsExactlyInAnyOrder("0", "1");
        assertThat(copies).allSatisfy(copy -> {
            assertThat(header(copy, FenceHeaders.REJECTED_REASON)).isEqualTo("STALE_TOKEN");
            assertThat(header(copy, FenceHeaders.TOKEN)).isEqualTo(Long.toString(staleToken));
            assertThat(header(copy, FenceHeaders.REJECTED_HIGHEST)).isEqualTo(holder + ".1");
            assertThat(header(copy, FenceHeaders.WRITER)).isEqualTo("worker-C");
        });
        assertThat(
                records(FenceTopics.ACCEPTED).stream().filter(r -> key.equals(r.key())).map(r -> header(r, FenceHeaders.TOKEN)))
                .containsExactly(Long.toString(first), Long.toString(holder));

        Installed.Run report = fence("rejected", "--json");
        assertThat(report.exit()).as(report.output()).isZero();
        List<JsonNode> lines = new ArrayList<>();
        for (String line : report.out().lines().toList()) {
            JsonNode object = JSON.readTree(line);
            if (key.equals(object.path("key").asText())) {
                lines.add(object);
            }
        }
        assertThat(lines).extracting(line -> line.path("seq").asText()).containsExactlyInAnyOrder("0", "1");
        assertThat(lines).allSatisfy(line -> {
            assertThat(line.path("reason").asText()).isEqualTo("STALE_TOKEN");
            assertThat(line.path("token").asText()).isEqualTo(Long.toString(staleToken));
            assertThat(line.path("highest").asText()).isEqualTo(holder + ".1");
        });

        Installed.Run inspected = fence("inspect", key, "--json");
        assertThat(inspected.exit()).as(inspected.output()).isZero();
        JsonNode view = JSON.readTree(inspected.out());
        assertThat(view.path("enforcer").path("fence").asText()).isEqualTo(holder + ".1");
        assertThat(view.path("database").path("fence").isNull()).as("no sink here: the table has no row").isTrue();

        Installed.Run consumed = fence("consume", "--since", "10m");
        assertThat(consumed.exit()).as(consumed.output()).isZero();
        List<Long> amounts = new ArrayList<>();
        for (String line : consumed.out().lines().filter(line -> line.contains("\"" + key + "\"")).toList()) {
            amounts.add(JSON.readTree(line).path("value").path("amountMinor").asLong());
        }
        assertThat(amounts).as("the accepted writes, decoded from Avro").containsExactly(1999L, 2550L);
    }

    /**
     * {@code bin/fence --env-file <the filled-in sample> ARGS...}, from a directory outside the repository; through
     * FENCE_OPTS, JVM options that start a short-lived command faster on a loaded machine (the C1 compiler only).
     */
    private static Installed.Run fence(String... args) throws Exception {
        List<String> all = new ArrayList<>(List.of("--env-file", cliEnv.toString()));
        all.addAll(List.of(args));
        return dist.launch(outside, Map.of("FENCE_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"), "fence",
                all.toArray(String[]::new));
    }

    private static long acceptedToken(Installed.Run produced, String key) {
        assertThat(produced.exit()).as(produced.output()).isZero();
        Matcher accepted = Pattern.compile("accepted " + Pattern.quote(key) + "  token=(\\d+)\\.1  -> fenced-writes-accepted-")
                .matcher(produced.out());
        assertThat(accepted.find()).as(produced.output()).isTrue();
        return Long.parseLong(accepted.group(1));
    }

    /** Every committed record of {@code topic}, from the beginning to the end it had when asked. */
    private static List<ConsumerRecord<String, byte[]>> records(String topic) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.address());
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        List<ConsumerRecord<String, byte[]>> all = new ArrayList<>();
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(props, new StringDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions, Duration.ofSeconds(30));
            await().atMost(Duration.ofMinutes(1)).until(() -> {
                consumer.poll(Duration.ofMillis(500)).forEach(all::add);
                return partitions.stream().allMatch(p -> consumer.position(p) >= end.get(p));
            });
        }
        return all;
    }

    private static String header(ConsumerRecord<String, byte[]> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    private static <T extends AutoCloseable> Callable<T> started(Callable<T> start) {
        return () -> {
            T service = start.call();
            synchronized (SERVICES) {
                SERVICES.add(service);
            }
            return service;
        };
    }
}
