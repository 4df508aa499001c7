package dev.fencedwrites.localstack;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.services.ChildProcess;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.testing.BillingSummary;
import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.Jvm;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Needs real services: {@code ./fence up} is only useful if every address it prints answers, and nothing outlives SIGTERM. */
@Timeout(value = 6, unit = TimeUnit.MINUTES)
class FenceUpIT {
    private static final List<String> ENV = List.of("KAFKA_BOOTSTRAP", "ETCD_ENDPOINTS", "SCHEMA_REGISTRY_URL", "POSTGRES_URL", "CONNECT_URL",
            "CONNECT_METRICS_URL", "ENFORCER_URL");
    private static final String SINK = "connector=\"" + BillingConnectors.SINK_CONNECTOR + "\"";

    @TempDir
    Path dir;

    @Test
    void printsWhereEveryServiceAnswersAndStopsThemOnSigterm() throws Exception {
        Path envFile = dir.resolve("stack.env");
        ChildProcess up = ChildProcess.start("fence up", Jvm.command(List.of(), null, LocalStackMain.class.getName(),
                List.of("--dir", dir.resolve("stack").toString(), "--env-file", envFile.toString())), dir, dir.resolve("up.log"), Map.of());
        Map<String, String> env;
        try {
            await().atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(250))
                    .failFast("fence up exited", () -> !up.isAlive())
                    .until(() -> Files.exists(envFile) && Files.readAllLines(envFile).size() == ENV.size());
            env = sourced(envFile);
            assertThat(env).containsOnlyKeys(ENV);
            assertThat(Files.readString(up.log())).contains(Files.readString(envFile));
            assertThat(env.get("POSTGRES_URL")).startsWith("jdbc:postgresql://127.0.0.1:").endsWith("?user=postgres&password=postgres");

            assertThat(clusterNodes(env.get("KAFKA_BOOTSTRAP"))).isEqualTo(1);
            assertThat(Http.get(env.get("ETCD_ENDPOINTS") + "/health").body()).contains("\"health\":\"true\"");
            assertThat(Http.get(env.get("SCHEMA_REGISTRY_URL") + "/subjects").statusCode()).isEqualTo(200);
            try (Connection connection = DriverManager.getConnection(env.get("POSTGRES_URL"))) {
                assertThat(connection.isValid(5)).isTrue();
            }
            assertThat(Http.get(env.get("CONNECT_URL") + "/connectors/" + BillingConnectors.SINK_CONNECTOR + "/status").body()).contains("RUNNING");
            assertThat(Http.get(env.get("ENFORCER_URL") + "/health").statusCode()).isEqualTo(200);
            sinkMetricsCountWhatTheSinkDid(env);
            keywordNamesLandInAKeywordTable(env);
        } finally {
            if (up.isAlive()) { // a fence up that died already would hide why behind a failed kill
                up.signal("TERM");
            } else {
                System.out.println("[fence up exited early; its log]\n" + Files.readString(up.log()));
            }
        }
        // 143 = 128 + SIGTERM: the JVM ran its shutdown hooks (which stop the stack) and exited; -1 would mean it hung.
        assertThat(up.waitFor(Duration.ofSeconds(90))).isEqualTo(143);
        for (String url : List.of(env.get("ETCD_ENDPOINTS"), env.get("SCHEMA_REGISTRY_URL"), env.get("CONNECT_URL"), env.get("CONNECT_METRICS_URL"), env.get("ENFORCER_URL"),
                "tcp://" + env.get("KAFKA_BOOTSTRAP"))) {
            assertThat(listening(URI.create(url))).as("%s still listening after SIGTERM", url).isFalse();
        }
        assertThat(envFile).doesNotExist();
    }

    /**
     * Two records straight onto the accepted topic (around the enforcer, as a misrouted producer
     * would): the sink writes the first and fences the stale second itself, and its Prometheus
     * series on the Connect worker count exactly that.
     */
    private static void sinkMetricsCountWhatTheSinkDid(Map<String, String> env) throws Exception {
        assertThat(scrape(env, "fence_sink_rows_written_total{" + SINK + ",task=\"0\"}")).isZero();
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, env.get("KAFKA_BOOTSTRAP"));
        AvroSerializer<BillingSummary> values = new AvroSerializer<>(new RestSchemaRegistryClient(env.get("SCHEMA_REGISTRY_URL"), Duration.ofSeconds(10)), false);
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(props, new StringSerializer(), new ByteArraySerializer())) {
            for (long token : new long[] {9, 3}) {
                BillingSummary summary = new BillingSummary("metrics-probe", "2026-11", 100 * token, "EUR", 1, Instant.now(), "fence-up-it");
                ProducerRecord<String, byte[]> record = new ProducerRecord<>(FenceTopics.ACCEPTED, "metrics-probe", values.serialize(FenceTopics.ACCEPTED, summary));
                record.headers().add(FenceHeaders.TOKEN, FenceHeaders.encode(token)).add(FenceHeaders.SEQ, FenceHeaders.encode(1));
                producer.send(record).get(30, TimeUnit.SECONDS);
            }
        }
        await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(500)).untilAsserted(() -> {
            assertThat(scrape(env, "fence_sink_rows_written_total{" + SINK + ",task=\"0\"}")).isEqualTo(1.0);
            assertThat(scrape(env, "fence_sink_records_fenced_total{" + SINK + ",reason=\"STALE_TOKEN\",task=\"0\"}")).isEqualTo(1.0);
        });
        assertThat(scrape(env, "fence_sink_records_fenced_total{" + SINK + ",reason=\"DUPLICATE\",task=\"0\"}")).isZero();
    }

    /**
     * Issue 13: a user-defined Avro type whose field names are SQL keywords, on a topic named
     * {@code order}, through a second connector created on the stack's Connect worker with
     * {@code table.name=${topic}}: the rows land in table "order" with the right values (a stale write
     * beside them is fenced), and the task stays RUNNING.
     */
    private static void keywordNamesLandInAKeywordTable(Map<String, String> env) throws Exception {
        org.apache.avro.Schema keywords = new org.apache.avro.Schema.Parser().parse("""
                {"type": "record", "name": "KeywordOrder", "namespace": "dev.fencedwrites.it", "fields": [
                  {"name": "order", "type": "string"}, {"name": "user", "type": "string"}, {"name": "group", "type": ["null", "string"]},
                  {"name": "offset", "type": "long"}, {"name": "limit", "type": "int"}, {"name": "from", "type": "string"},
                  {"name": "select", "type": "boolean"}, {"name": "whereTo", "type": "string"}]}""");
        SinkProbe probe = new SinkProbe(env.get("KAFKA_BOOTSTRAP"), env.get("CONNECT_URL"), env.get("POSTGRES_URL"), env.get("SCHEMA_REGISTRY_URL"));
        probe.createTopics("order", "order-dlq");
        probe.createSink("order-sink", "order", "order-dlq", Map.of());
        AvroSerializer<org.apache.avro.generic.GenericRecord> values = new AvroSerializer<>(
                new RestSchemaRegistryClient(env.get("SCHEMA_REGISTRY_URL"), Duration.ofSeconds(10)), false);
        try (KafkaProducer<byte[], byte[]> producer = probe.producer()) {
            Object[][] rows = {{"o-1", "first", 9L}, {"o-2", "second", 9L}, {"o-1", "stale", 3L}};
            for (Object[] row : rows) {
                org.apache.avro.generic.GenericRecord value = new org.apache.avro.generic.GenericData.Record(keywords);
                value.put("order", row[1]);
                value.put("user", "user-" + row[1]);
                value.put("group", "g");
                value.put("offset", 40L);
                value.put("limit", 5);
                value.put("from", "warehouse");
                value.put("select", true);
                value.put("whereTo", "dock");
                probe.send(producer, "order", ((String) row[0]).getBytes(java.nio.charset.StandardCharsets.UTF_8), values.serialize("order", value),
                        FenceHeaders.TOKEN, row[2].toString(), FenceHeaders.SEQ, "1");
            }
        }
        await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(500)).untilAsserted(() -> {
            assertThat(probe.rows("SELECT resource_key, \"order\", \"user\", \"group\", \"offset\", \"limit\", \"from\", \"select\"::text, where_to,"
                    + " fence_token FROM \"order\" ORDER BY 1"))
                    .containsExactly("o-1|first|user-first|g|40|5|warehouse|true|dock|9", "o-2|second|user-second|g|40|5|warehouse|true|dock|9");
            assertThat(probe.deadLetters("order-dlq")).extracting(SinkProbe.DeadLetter::reason).containsExactly("STALE_TOKEN");
        });
        assertThat(probe.taskState("order-sink")).isEqualTo("RUNNING");
    }

    /** The value of one series (labels in the exporter's order, sorted by name) on the Connect worker's Prometheus endpoint; fails if it is not there. */
    private static double scrape(Map<String, String> env, String series) throws Exception {
        String body = Http.get(env.get("CONNECT_METRICS_URL")).body();
        return body.lines().filter(line -> line.startsWith(series + " ")).findFirst()
                .map(line -> Double.parseDouble(line.substring(series.length() + 1).trim()))
                .orElseThrow(() -> new AssertionError("no series " + series + " on " + env.get("CONNECT_METRICS_URL") + "; fence_sink lines: "
                        + body.lines().filter(l -> l.startsWith("fence_sink")).toList()));
    }

    /** The variables as a shell sees them after {@code source FILE}, the way the README uses the file. */
    private static Map<String, String> sourced(Path envFile) throws Exception {
        Process bash = new ProcessBuilder("bash", "-c", "set -a; source \"$1\"; env", "bash", envFile.toString())
                .redirectErrorStream(true).start();
        List<String> lines = new String(bash.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).lines().toList();
        assertThat(bash.waitFor()).isZero();
        Map<String, String> env = new LinkedHashMap<>();
        for (String name : ENV) {
            lines.stream().filter(l -> l.startsWith(name + "=")).findFirst().ifPresent(l -> env.put(name, l.substring(name.length() + 1)));
        }
        return env;
    }

    private static int clusterNodes(String bootstrap) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            return admin.describeCluster().nodes().get(30, TimeUnit.SECONDS).size();
        }
    }

    private static boolean listening(URI url) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(url.getHost(), url.getPort()), 1000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
