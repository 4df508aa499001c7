package dev.fencedwrites.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.services.ConnectWorker;
import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.Service;
import dev.fencedwrites.testing.BundledLicences;
import dev.fencedwrites.testing.CommittedRecords;
import dev.fencedwrites.testing.KafkaBrokerExtension;
import dev.fencedwrites.testing.PostgresExtension;
import dev.fencedwrites.testing.SchemaRegistryExtension;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Needs real services: only a real Connect worker (plain connect-runtime on its class path) shows that the component
 * archive alone, unzipped into {@code plugin.path}, loads in both discovery modes and writes to a real PostgreSQL.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class ComponentArchiveIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** The pom's version, and the archive and worker class path the build made (failsafe's system properties). */
    private static final String BUILD_VERSION = System.getProperty("project.version");
    private static final Path ARCHIVE = Path.of(System.getProperty("component.archive", "missing-component.archive"));
    private static final Path WORKER_CLASS_PATH = Path.of(
            System.getProperty("connect.runtime.classpath", "missing-connect.runtime.classpath"));
    /** The oldest supported Connect runtime (the parent's {@code kafka.oldest.version}) and its worker's class path. */
    private static final String OLDEST_VERSION = System.getProperty("kafka.oldest.version");
    private static final Path OLDEST_WORKER_CLASS_PATH = Path.of(
            System.getProperty("connect.runtime.oldest.classpath", "missing-connect.runtime.oldest.classpath"));
    private static final String COMPONENT = "fencedwrites-fenced-jdbc-sink-" + BUILD_VERSION;
    private static final String CONVERTER = "dev.fencedwrites.avro.connect.AvroConverter";

    @RegisterExtension
    static final KafkaBrokerExtension kafka = new KafkaBrokerExtension();
    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();
    @RegisterExtension
    static final SchemaRegistryExtension registry = new SchemaRegistryExtension();

    @TempDir
    static Path work;
    private static Path pluginPath;

    @BeforeAll
    static void unzipTheArchiveAloneIntoAPluginPath() throws IOException {
        assertThat(ARCHIVE).as("the component archive (mvn package in sink-connector)").isRegularFile();
        pluginPath = Files.createDirectories(work.resolve("plugins"));
        unzip(ARCHIVE, pluginPath);
    }

    @Test
    void theArchiveIsAConfluentHubComponentNamedOwnerNameVersion() throws IOException {
        assertThat(ARCHIVE.getFileName().toString()).isEqualTo(COMPONENT + ".zip");
        try (Stream<Path> top = Files.list(pluginPath)) {
            assertThat(top.map(p -> p.getFileName().toString())).containsExactly(COMPONENT);
        }
        Path component = pluginPath.resolve(COMPONENT);
        JsonNode manifest = JSON.readTree(component.resolve("manifest.json").toFile());
        assertThat(manifest.path("name").asText()).isEqualTo("fenced-jdbc-sink");
        assertThat(manifest.path("version").asText()).isEqualTo(BUILD_VERSION);
        assertThat(manifest.path("owner").path("username").asText()).isEqualTo("fencedwrites");
        assertThat(manifest.path("component_types")).extracting(JsonNode::asText).containsExactly("sink", "converter");
        assertThat(manifest.path("license").get(0).path("name").asText()).contains("Apache License");
        assertThat(manifest.path("release_date").asText()).matches("\\d{4}-\\d{2}-\\d{2}");
        assertThat(component.resolve("doc/README.md")).isRegularFile();
        assertThat(component.resolve("doc/LICENSE")).isRegularFile();
        assertThat(component.resolve("doc/CONFIGURATION.rst")).isRegularFile();
        assertThat(component.resolve("etc/fenced-jdbc-sink.properties")).isRegularFile();
    }

    /** Section 4(d) of the Apache License 2.0, and the other licences: the component carries what its jars ask. */
    @Test
    void theComponentCarriesTheNoticeAndTheLicenceOfEveryBundledJar() throws IOException {
        Path component = pluginPath.resolve(COMPONENT);
        int carried = BundledLicences.assertNoticeCarriesEveryBundledNotice(component.resolve("lib"),
                component.resolve("doc/NOTICE"));
        assertThat(carried).as("avro, commons-* and jackson ship one").isGreaterThanOrEqualTo(8);
        BundledLicences.assertEveryBundledLibraryIsListed(component.resolve("lib"), component.resolve("doc/licenses"),
                jar -> jar.endsWith("-" + BUILD_VERSION + ".jar"));
    }

    @Test
    void theArchiveShipsTheSinkAndItsLibrariesButNotWhatTheWorkerProvides() throws IOException {
        List<String> jars;
        try (Stream<Path> lib = Files.list(pluginPath.resolve(COMPONENT).resolve("lib"))) {
            jars = lib.map(p -> p.getFileName().toString()).toList();
        }
        assertThat(jars).contains("sink-connector-" + BUILD_VERSION + ".jar", "avro-serde-" + BUILD_VERSION + ".jar",
                "contract-" + BUILD_VERSION + ".jar").anyMatch(jar -> jar.startsWith("postgresql-"));
        assertThat(jars).noneMatch(jar -> jar.startsWith("kafka-clients-") || jar.startsWith("connect-api-")
                || jar.startsWith("slf4j-"));
        // Apicurio's jar only as the copy without its own converters (src/assembly/avrodata.xml).
        assertThat(jars).filteredOn(jar -> jar.startsWith("apicurio-")).singleElement().asString().endsWith("-avrodata.jar");
    }

    /**
     * On this build's Connect runtime in both discovery modes, and on the oldest runtime the sink supports
     * ({@code kafka.oldest.version}), where converters report no version (before KIP-891's converter versions) and the
     * task has no plugin metrics (before KIP-877).
     */
    @ParameterizedTest(name = "{0} runtime, plugin.discovery={1}")
    @CsvSource({"current, only_scan", "current, service_load", "oldest, service_load"})
    void aPlainWorkerLoadsTheConnectorAndConverterFromTheArchiveWithTheirVersionAndWritesARow(String runtime,
            String discovery) throws Exception {
        boolean oldest = runtime.equals("oldest");
        String classPath = oldest
                ? workerClassPath(OLDEST_WORKER_CLASS_PATH, OLDEST_VERSION)
                : workerClassPath(
                        WORKER_CLASS_PATH, null);
        String topic = "archive-" + runtime + "-" + discovery.replace('_', '-');
        String table = "archive_" + runtime + "_" + discovery;
        Map<String, Map<String, String>> connectors = Map.of("sink-" + topic, sampleConfig(topic, table));
        kafka.admin().createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(60, TimeUnit.SECONDS);
        Path dir = work.resolve("connect-" + runtime + "-" + discovery);
        try (Service worker = ConnectWorker.start(dir, kafka.log4j2(), kafka.bootstrapServers(),
                new ConnectWorker.Plugins(pluginPath, discovery, classPath), connectors, null, Map.of())) {
            JsonNode plugins = JSON.readTree(Http.get(worker.address() + "/connector-plugins?connectorsOnly=false").body());
            assertThat(versionOf(plugins, FencedJdbcSinkConnector.class.getName(), "sink")).isEqualTo(BUILD_VERSION);
            assertThat(versionOf(plugins, CONVERTER, "converter")).isEqualTo(oldest ? "" : BUILD_VERSION);
            // The same plugins in every mode, so hybrid_warn and hybrid_fail find no plugin without a manifest.
            assertThat(pluginsNotFromKafka(plugins)).containsExactlyInAnyOrder(
                    "sink " + FencedJdbcSinkConnector.class.getName(), "converter " + CONVERTER);

            send(topic, "customer-7", 12_550L);
            await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(250))
                    .untilAsserted(() -> assertThat(row(table, "customer-7")).containsExactly(5L, 1L, 12_550L));
            // A stale write goes to the dead-letter topic (errors.deadletterqueue.topic.name), not to the table.
            send(topic, "customer-7", 1L, 4L);
            send(topic, "customer-8", 300L);
            await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(250))
                    .untilAsserted(() -> assertThat(row(table, "customer-8")).containsExactly(5L, 1L, 300L));
            assertThat(row(table, "customer-7")).containsExactly(5L, 1L, 12_550L);
            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(500)).untilAsserted(() -> assertThat(
                    CommittedRecords.read(kafka.bootstrapServers(), topic + "-rejected", key -> true)).singleElement()
                    .satisfies(rejected -> {
                        assertThat(rejected.key()).isEqualTo("customer-7");
                        assertThat(text(rejected.headers().lastHeader(FenceHeaders.REJECTED_REASON).value()))
                                .isEqualTo("STALE_TOKEN");
                        assertThat(text(rejected.headers().lastHeader(FenceHeaders.SOURCE_OFFSET).value())).isEqualTo("1");
                    }));
        }
    }

    /**
     * A plain worker's class path: connect-runtime's own dependencies, nothing of this build.
     *
     * @param connectVersion the connect-runtime version it must hold, or {@code null} for any
     */
    private static String workerClassPath(Path file, String connectVersion) throws IOException {
        assertThat(file).as("connect-runtime-classpath's class path file (build with -am)").isRegularFile();
        String classPath = Files.readString(file).strip();
        List<String> entries = List.of(classPath.split(File.pathSeparator));
        List<String> jars = entries.stream().map(entry -> Path.of(entry).getFileName().toString()).toList();
        assertThat(jars).anyMatch(jar -> connectVersion == null
                ? jar.startsWith("connect-runtime-")
                : jar.equals("connect-runtime-" + connectVersion + ".jar"));
        assertThat(entries).noneMatch(entry -> entry.contains("/dev/fencedwrites/") || entry.contains("/target/"));
        assertThat(jars)
                .noneMatch(jar -> jar.startsWith("postgresql-") || jar.startsWith("HikariCP-") || jar.startsWith("avro-"));
        return classPath;
    }

    /** etc/'s sample configuration, pointed at this test's services, its values decoded by the archive's converter. */
    private static Map<String, String> sampleConfig(String topic, String table) throws IOException {
        Properties sample = new Properties();
        try (Reader in = Files.newBufferedReader(pluginPath.resolve(COMPONENT).resolve("etc/fenced-jdbc-sink.properties"))) {
            sample.load(in);
        }
        Map<String, String> config = new LinkedHashMap<>();
        sample.stringPropertyNames().forEach(key -> config.put(key, sample.getProperty(key)));
        config.remove("name");
        config.remove("connection.user"); // the URL carries the user and password
        config.remove("connection.password");
        config.put("topics", topic);
        config.put("table.name", table);
        config.put("connection.url", postgres.jdbcUrl());
        config.put("schema.registry.url", registry.url());
        config.put("value.converter", CONVERTER);
        config.put("value.converter.schema.registry.url", registry.url());
        config.put("errors.deadletterqueue.topic.name", topic + "-rejected");
        config.put("errors.deadletterqueue.topic.replication.factor", "1");
        return config;
    }

    /** "type class" of each listed plugin that is not Kafka's own: what the worker found in the archive. */
    private static List<String> pluginsNotFromKafka(JsonNode plugins) {
        List<String> found = new ArrayList<>();
        plugins.forEach(plugin -> {
            if (!plugin.path("class").asText().startsWith("org.apache.kafka.")) {
                found.add(plugin.path("type").asText() + " " + plugin.path("class").asText());
            }
        });
        return found;
    }

    private static String versionOf(JsonNode plugins, String className, String type) {
        List<String> versions = new ArrayList<>();
        plugins.forEach(plugin -> {
            if (plugin.path("class").asText().equals(className) && plugin.path("type").asText().equals(type)) {
                versions.add(plugin.path("version").asText());
            }
        });
        assertThat(versions).as("%s %s in GET /connector-plugins?connectorsOnly=false: %s", type, className, plugins)
                .hasSize(1);
        return versions.get(0);
    }

    private static String text(byte[] bytes) {
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static void send(String topic, String key, long amountMinor) throws Exception {
        send(topic, key, amountMinor, 5L);
    }

    private static void send(String topic, String key, long amountMinor, long token) throws Exception {
        AvroSerializer<BillingSummary> serializer = AvroSerializer
                .forValues(new RestSchemaRegistryClient(registry.url(), Duration.ofSeconds(10)));
        BillingSummary summary = BillingSummary.newBuilder().setCustomerId(key).setBillingPeriod("2026-12")
                .setAmountMinor(amountMinor).setCurrency("EUR").setLineItems(3).setComputedAt(Instant.now())
                .setComputedBy("component-archive-it").build();
        ProducerRecord<String, byte[]> record = new ProducerRecord<>(topic, key, serializer.serialize(topic, summary));
        record.headers().add(FenceHeaders.TOKEN, Long.toString(token).getBytes(StandardCharsets.UTF_8));
        record.headers().add(FenceHeaders.SEQ, "1".getBytes(StandardCharsets.UTF_8));
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(
                Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()), new StringSerializer(),
                new ByteArraySerializer())) {
            producer.send(record).get(30, TimeUnit.SECONDS);
        }
    }

    /** The row's fence token, fence seq and amount, or an empty list while there is no such row (or table) yet. */
    private static List<Long> row(String table, String key) throws Exception {
        try (Connection connection = postgres.dataSource().getConnection();
                ResultSet tables = connection.getMetaData().getTables(null, "public", table, null)) {
            if (!tables.next()) {
                return List.of();
            }
            // SELECT *: the sink creates the table at start and adds the data columns at the first record.
            try (PreparedStatement select = connection.prepareStatement("SELECT * FROM " + table + " WHERE resource_key = ?")) {
                select.setString(1, key);
                try (ResultSet row = select.executeQuery()) {
                    return row.next()
                            ? List.of(row.getLong("fence_token"), row.getLong("fence_seq"), row.getLong("amount_minor"))
                            : List.of();
                }
            }
        }
    }

    private static void unzip(Path archive, Path into) throws IOException {
        try (InputStream file = Files.newInputStream(archive); ZipInputStream zip = new ZipInputStream(file)) {
            for (ZipEntry entry = zip.getNextEntry(); entry != null; entry = zip.getNextEntry()) {
                Path target = into.resolve(entry.getName()).normalize();
                assertThat(target.startsWith(into)).as("zip entry %s stays inside %s", entry.getName(), into).isTrue();
                if (entry.isDirectory()) {
                    Files.createDirectories(target);
                } else {
                    Files.createDirectories(target.getParent());
                    Files.copy(zip, target);
                }
            }
        }
    }
}
