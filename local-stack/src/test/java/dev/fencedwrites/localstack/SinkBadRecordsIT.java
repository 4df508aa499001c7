package dev.fencedwrites.localstack;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.localstack.SinkProbe.DeadLetter;
import dev.fencedwrites.services.Http;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Needs real services: "no single record may stop the pipeline" is about what a real
 * Connect worker does with the sink task's outcome (task state, dead-letter topic through its errant
 * record reporter, offsets), records from a real broker, and what real PostgreSQL refuses.
 */
@Timeout(value = 8, unit = TimeUnit.MINUTES)
class SinkBadRecordsIT {
    private static final Schema SUMMARY = new Schema.Parser().parse("""
            {"type": "record", "name": "Summary", "namespace": "dev.fencedwrites.it", "fields": [
              {"name": "customerId", "type": "string"}, {"name": "amountMinor", "type": "long"},
              {"name": "lineItems", "type": "int"}, {"name": "computedBy", "type": "string"}]}""");

    @TempDir
    static Path dir;
    static LocalStack stack;
    static SinkProbe probe;
    static AvroSerializer<GenericRecord> values;

    @BeforeAll
    static void startStack() throws Exception {
        stack = LocalStack.builder(dir).connectors(BillingConnectors.set(false))
                .progress(line -> System.out.println("[stack] " + line)).start();
        probe = new SinkProbe(stack.kafkaBootstrap(), stack.connectUrl(), stack.postgresUrl(), stack.schemaRegistryUrl());
        values = AvroSerializer.forValues(new RestSchemaRegistryClient(stack.schemaRegistryUrl(), Duration.ofSeconds(10)));
    }

    @AfterAll
    static void stopStack() {
        if (stack != null) {
            stack.close();
        }
    }

    /**
     * A batch of only rows the database refuses (NUL in the key and in a value, a key too long for the
     * index, a number out of the column's range, NULL into NOT NULL, a CHECK), then the same kinds mixed
     * with good rows: every bad one is on the dead-letter topic with its reason, the good ones are in the
     * table, and the task stays RUNNING.
     */
    @Test
    void rowsTheDatabaseRefusesAreDeadLetteredOneByOneAndTheTaskKeepsRunning() throws Exception {
        String topic = "data_errors";
        probe.createTopics(topic, topic + "-dlq");
        probe.execute("CREATE TABLE " + topic
                + " (resource_key TEXT PRIMARY KEY, deleted BOOLEAN NOT NULL DEFAULT FALSE, fence_token BIGINT NOT NULL,"
                + " fence_seq BIGINT NOT NULL, updated_at TIMESTAMPTZ NOT NULL DEFAULT now(), customer_id TEXT, amount_minor "
                + "NUMERIC(5),"
                + " line_items INTEGER CHECK (line_items >= 0), computed_by TEXT)");
        probe.createSink("data-errors-sink", topic, topic + "-dlq", Map.of());
        try (KafkaProducer<byte[], byte[]> producer = probe.producer()) {
            sendBadRows(producer, topic, "first");
            await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofSeconds(1))
                    .untilAsserted(() -> assertThat(probe.deadLetters(topic + "-dlq")).hasSize(6));

            send(producer, topic, "good-1", summary("good-1", 100, 1, "a"), 5, 1);
            sendBadRows(producer, topic, "second");
            send(producer, topic, "good-2", summary("good-2", 200, 2, "b"), 5, 1);
        }

        await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
            assertThat(probe.rows("SELECT resource_key, amount_minor, line_items, computed_by, fence_token, fence_seq FROM "
                    + topic + " ORDER BY 1"))
                    .containsExactly("good-1|100|1|a|5|1", "good-2|200|2|b|5|1");
            assertThat(probe.deadLetters(topic + "-dlq")).hasSize(12);
        });
        List<DeadLetter> letters = probe.deadLetters(topic + "-dlq");
        assertThat(letters).allSatisfy(letter -> {
            assertThat(letter.reason()).isEqualTo("MALFORMED_VALUE");
            assertThat(letter.stage()).isEqualTo(FenceHeaders.STAGE_SINK);
            assertThat(letter.error()).contains("the database refused the record");
        });
        assertThat(letters).extracting(DeadLetter::error).anyMatch(e -> e.contains("0x00"))
                .anyMatch(e -> e.contains("numeric field overflow"))
                .anyMatch(e -> e.contains("fence_seq")).anyMatch(e -> e.contains("line_items_check"))
                .anyMatch(e -> e.contains("index row"));
        assertThat(probe.taskState("data-errors-sink")).isEqualTo("RUNNING");
    }

    /**
     * A real worker refuses a connector whose own configuration leaves the fence headers or the isolation level to the
     * worker's defaults (SimpleHeaderConverter parses header values; read_uncommitted delivers aborted enforcer outputs), or
     * whose key converter never gives text, with HTTP 400 naming the setting (a converter's class once made it HTTP 500).
     */
    @ParameterizedTest
    @CsvSource({"header.converter, org.apache.kafka.connect.storage.SimpleHeaderConverter, "
            + "got org.apache.kafka.connect.storage.SimpleHeaderConverter",
            "consumer.override.isolation.level, read_uncommitted, got read_uncommitted",
            "key.converter, org.apache.kafka.connect.converters.LongConverter, gives keys that are not text"})
    void aConnectorTheSinkCannotWorkWithIsRefusedNamingTheSetting(String key, String value, String says) throws Exception {
        String topic = "refused_" + key.replace('.', '_');
        probe.createTopics(topic, topic + "-dlq");

        assertThatThrownBy(() -> probe.createSink(topic.replace('_', '-'), topic, topic + "-dlq", Map.of(key, value)))
                .isInstanceOf(SinkProbe.RefusedConnector.class).hasMessageContaining("HTTP 400").hasMessageContaining(key)
                .hasMessageContaining(says);
    }

    /**
     * A ${topic} table whose fence_token is TEXT: made before the connector, Connect refuses the
     * connector naming the column; made after it, the task fails at its first write naming the column
     * (not with a bare SQL error), and nothing is written.
     */
    @Test
    void anExistingPerTopicTableThatDoesNotFitFailsTheTaskNamingTheMismatch() throws Exception {
        String topic = "misfit_table";
        String misfit = "CREATE TABLE " + topic
                + " (resource_key TEXT PRIMARY KEY, deleted BOOLEAN NOT NULL DEFAULT FALSE, fence_token TEXT NOT NULL,"
                + " fence_seq BIGINT, updated_at TIMESTAMPTZ NOT NULL DEFAULT now())";
        probe.createTopics(topic, topic + "-dlq");
        probe.execute(misfit);
        assertThatThrownBy(() -> probe.createSink("misfit-sink", topic, topic + "-dlq", Map.of()))
                .isInstanceOf(SinkProbe.RefusedConnector.class)
                .hasMessageContaining("HTTP 400")
                .hasMessageContaining("column misfit_table.fence_token is text, expected bigint or numeric");

        probe.execute("DROP TABLE " + topic);
        probe.createSink("misfit-sink", topic, topic + "-dlq", Map.of());
        await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofSeconds(1))
                .until(() -> probe.taskState("misfit-sink").equals("RUNNING"));
        probe.execute(misfit);
        try (KafkaProducer<byte[], byte[]> producer = probe.producer()) {
            send(producer, topic, "k", summary("k", 1, 1, "a"), 1, 1);
        }

        await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofSeconds(1))
                .untilAsserted(() -> assertThat(probe.taskState("misfit-sink"))
                        .startsWith("FAILED").contains("table misfit_table does not fit the sink")
                        .contains("column misfit_table.fence_token is text, expected bigint or numeric")
                        .contains("CREATE TABLE IF NOT EXISTS \"misfit_table\""));
        assertThat(probe.rows("SELECT count(*) FROM " + topic)).containsExactly("0");
        assertThat(probe.deadLetters(topic + "-dlq")).isEmpty();
    }

    /**
     * key.converter=ByteArrayConverter: the key's bytes are read as UTF-8, so a stale write to the same
     * resource is fenced by its row (before, each record had a row of its own); a key that is not UTF-8
     * is dead-lettered MALFORMED_KEY.
     */
    @Test
    void bytesKeysShareTheirResourcesRowAndGuardAndAKeyNotInUtf8IsDeadLettered() throws Exception {
        String topic = "bytes_keys";
        probe.createTopics(topic, topic + "-dlq");
        probe.createSink("bytes-keys-sink", topic, topic + "-dlq",
                Map.of("key.converter", "org.apache.kafka.connect.converters.ByteArrayConverter"));
        try (KafkaProducer<byte[], byte[]> producer = probe.producer()) {
            send(producer, topic, "resource-\u00e9", summary("holder", 700, 1, "holder"), 7, 1);
            send(producer, topic, "resource-\u00e9", summary("stale", 500, 1, "stale"), 5, 1);
            probe.send(producer, topic, new byte[]{'k', (byte) 0xC3, '('}, values.serialize(topic, summary("bad", 1, 1, "bad")),
                    FenceHeaders.TOKEN, "1", FenceHeaders.SEQ, "1");
        }

        await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
            assertThat(probe.rows("SELECT resource_key, computed_by, fence_token FROM " + topic))
                    .containsExactly("resource-\u00e9|holder|7");
            assertThat(probe.deadLetters(topic + "-dlq")).extracting(DeadLetter::reason).containsExactly("STALE_TOKEN",
                    "MALFORMED_KEY");
        });
        assertThat(probe.deadLetters(topic + "-dlq").get(1).error()).contains("not valid UTF-8");
        assertThat(probe.taskState("bytes-keys-sink")).isEqualTo("RUNNING");
    }

    /**
     * A rejected copy (it carries fence.rejected.* headers) on the sink's topic is dead-lettered ALREADY_REJECTED, not written;
     * the fresh record beside it is.
     */
    @Test
    void aRejectedCopyOnTheSinksTopicIsDeadLetteredNotWritten() throws Exception {
        String topic = "rejected_copies";
        probe.createTopics(topic, topic + "-dlq");
        probe.createSink("rejected-copies-sink", topic, topic + "-dlq", Map.of());
        try (KafkaProducer<byte[], byte[]> producer = probe.producer()) {
            probe.send(producer, topic, "stale".getBytes(StandardCharsets.UTF_8),
                    values.serialize(topic, summary("stale", 1, 1, "stale")),
                    FenceHeaders.TOKEN, "3", FenceHeaders.SEQ, "1", FenceHeaders.REJECTED_REASON, "STALE_TOKEN",
                    FenceHeaders.REJECTED_STAGE, FenceHeaders.STAGE_ENFORCER, FenceHeaders.REJECTED_HIGHEST, "9.1");
            send(producer, topic, "fresh", summary("fresh", 2, 1, "fresh"), 9, 2);
        }

        await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
            assertThat(probe.rows("SELECT resource_key, computed_by FROM " + topic)).containsExactly("fresh|fresh");
            assertThat(probe.deadLetters(topic + "-dlq")).singleElement().satisfies(letter -> {
                assertThat(letter.key()).isEqualTo("stale");
                assertThat(letter.reason()).isEqualTo("ALREADY_REJECTED");
                assertThat(letter.error()).contains("fence.rejected.reason=STALE_TOKEN");
            });
        });
        assertThat(probe.taskState("rejected-copies-sink")).isEqualTo("RUNNING");
    }

    /**
     * On a real worker reading the markers topic beside the accepted topic (unordered against each other), a takeover marker
     * that arrives before the previous holder's last accepted write waits for it instead of being skipped, then raises the
     * row's fence, so a later write below it is dead-lettered at the database.
     */
    @Test
    void aTakeoverMarkerAheadOfThePreviousHoldersWriteWaitsForItThenRaisesTheRow() throws Exception {
        String topic = "takeover";
        String markers = "takeover-markers";
        String connector = "takeover-sink";
        probe.createTopics(topic, markers, topic + "-dlq");
        probe.createSink(connector, topic, topic + "-dlq", Map.of("topics", topic + "," + markers));
        String waiting = "fence_sink_markers_waiting{connector=\"" + connector + "\",task=\"0\"}";
        String sql = "SELECT amount_minor, fence_token, fence_seq FROM " + topic;
        try (KafkaProducer<byte[], byte[]> producer = probe.producer()) {
            send(producer, topic, "acct", summary("acct", 100, 1, "holder"), 8, 3);
            await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(500))
                    .untilAsserted(() -> assertThat(probe.rows(sql)).containsExactly("100|8|3"));

            probe.send(producer, markers, "acct".getBytes(StandardCharsets.UTF_8), null, FenceHeaders.TOKEN, "9",
                    FenceHeaders.SEQ, "0", FenceHeaders.OP, "FENCE", FenceHeaders.MARKER_TARGET_TOPIC, topic,
                    FenceHeaders.MARKER_PREVIOUS, "8.4");
            await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(500))
                    .untilAsserted(() -> assertThat(scrape(stack.env(), waiting)).isEqualTo(1.0));
            assertThat(probe.rows(sql)).as("the marker must not overtake (8, 4)").containsExactly("100|8|3");

            send(producer, topic, "acct", summary("acct", 200, 1, "holder"), 8, 4);
            await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(500))
                    .untilAsserted(() -> assertThat(probe.rows(sql)).containsExactly("200|9|0"));
            send(producer, topic, "acct", summary("acct", 300, 1, "holder"), 8, 5);
        }
        await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(500))
                .untilAsserted(() -> assertThat(probe.deadLetters(topic + "-dlq")).singleElement().satisfies(letter -> {
                    assertThat(letter.reason()).isEqualTo("STALE_TOKEN");
                    assertThat(letter.stage()).isEqualTo(FenceHeaders.STAGE_SINK);
                }));
        assertThat(probe.rows(sql)).containsExactly("200|9|0");
        assertThat(scrape(stack.env(), waiting)).isZero();
        assertThat(probe.taskState(connector)).isEqualTo("RUNNING");
    }

    /** The six kinds of row PostgreSQL refuses, keys prefixed with {@code prefix}. */
    private static void sendBadRows(KafkaProducer<byte[], byte[]> producer, String topic, String prefix) throws Exception {
        String tooLong = prefix + new Random(prefix.hashCode()).ints(9_000, 33, 127)
                .collect(StringBuilder::new, StringBuilder::appendCodePoint, StringBuilder::append);
        send(producer, topic, prefix + "-nul\u0000key", summary("a", 1, 1, "a"), 5, 1);
        send(producer, topic, prefix + "-nul-value", summary("b", 1, 1, "nul\u0000value"), 5, 1);
        send(producer, topic, tooLong, summary("c", 1, 1, "c"), 5, 1);
        send(producer, topic, prefix + "-out-of-range", summary("d", 10_000_000, 1, "d"), 5, 1);
        probe.send(producer, topic, (prefix + "-no-seq").getBytes(StandardCharsets.UTF_8),
                values.serialize(topic, summary("e", 1, 1, "e")),
                FenceHeaders.TOKEN, "5");
        send(producer, topic, prefix + "-negative-items", summary("f", 1, -1, "f"), 5, 1);
    }

    private static void send(KafkaProducer<byte[], byte[]> producer, String topic, String key, GenericRecord value, long token,
            long seq) throws Exception {
        probe.send(producer, topic, key.getBytes(StandardCharsets.UTF_8), values.serialize(topic, value), FenceHeaders.TOKEN,
                Long.toString(token),
                FenceHeaders.SEQ, Long.toString(seq));
    }

    private static GenericRecord summary(String customer, long amountMinor, int lineItems, String computedBy) {
        GenericRecord record = new GenericData.Record(SUMMARY);
        record.put("customerId", customer);
        record.put("amountMinor", amountMinor);
        record.put("lineItems", lineItems);
        record.put("computedBy", computedBy);
        return record;
    }

    private static final String SINK = "connector=\"" + BillingConnectors.SINK_CONNECTOR + "\"";

    /**
     * Two records straight onto the accepted topic (around the enforcer, as a misrouted producer
     * would): the sink writes the first and fences the stale second itself, and its Prometheus
     * series on the Connect worker count exactly that (moved from FenceUpIT, which now tests {@code fence up} in fence-cli).
     */
    @Test
    void sinkMetricsCountWhatTheSinkDid() throws Exception {
        Map<String, String> env = stack.env();
        assertThat(scrape(env, "fence_sink_rows_written_total{" + SINK + ",task=\"0\"}")).isZero();
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, env.get("KAFKA_BOOTSTRAP"));
        AvroSerializer<BillingSummary> values = AvroSerializer
                .forValues(new RestSchemaRegistryClient(env.get("SCHEMA_REGISTRY_URL"), Duration.ofSeconds(10)));
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(props, new StringSerializer(),
                new ByteArraySerializer())) {
            for (long token : new long[]{9, 3}) {
                BillingSummary summary = new BillingSummary("metrics-probe", "2026-11", 100 * token, "EUR", 1, Instant.now(),
                        "fence-up-it");
                ProducerRecord<String, byte[]> record = new ProducerRecord<>(FenceTopics.ACCEPTED, "metrics-probe",
                        values.serialize(FenceTopics.ACCEPTED, summary));
                record.headers().add(FenceHeaders.TOKEN, FenceHeaders.encode(token)).add(FenceHeaders.SEQ,
                        FenceHeaders.encode(1));
                producer.send(record).get(30, TimeUnit.SECONDS);
            }
        }
        await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(500)).untilAsserted(() -> {
            assertThat(scrape(env, "fence_sink_rows_written_total{" + SINK + ",task=\"0\"}")).isEqualTo(1.0);
            assertThat(scrape(env, "fence_sink_records_fenced_total{" + SINK + ",reason=\"STALE_TOKEN\",task=\"0\"}"))
                    .isEqualTo(1.0);
        });
        assertThat(scrape(env, "fence_sink_records_fenced_total{" + SINK + ",reason=\"DUPLICATE\",task=\"0\"}")).isZero();
    }

    /**
     * A user-defined Avro type whose field names are SQL keywords, on a topic named
     * {@code order}, through a second connector created on the stack's Connect worker with
     * {@code table.name=${topic}}: the rows land in table "order" with the right values (a stale write
     * beside them is fenced), and the task stays RUNNING.
     */
    @Test
    void keywordNamesLandInAKeywordTable() throws Exception {
        Map<String, String> env = stack.env();
        Schema keywords = new Schema.Parser()
                .parse("""
                        {"type": "record", "name": "KeywordOrder", "namespace": "dev.fencedwrites.it", "fields": [
                          {"name": "order", "type": "string"}, {"name": "user", "type": "string"},
                          {"name": "group", "type": ["null", "string"]},
                          {"name": "offset", "type": "long"}, {"name": "limit", "type": "int"},
                          {"name": "from", "type": "string"},
                          {"name": "select", "type": "boolean"}, {"name": "whereTo", "type": "string"}]}""");
        SinkProbe probe = new SinkProbe(env.get("KAFKA_BOOTSTRAP"), env.get("CONNECT_URL"), env.get("POSTGRES_URL"),
                env.get("SCHEMA_REGISTRY_URL"));
        probe.createTopics("order", "order-dlq");
        probe.createSink("order-sink", "order", "order-dlq", Map.of());
        AvroSerializer<GenericRecord> values = AvroSerializer
                .forValues(new RestSchemaRegistryClient(env.get("SCHEMA_REGISTRY_URL"), Duration.ofSeconds(10)));
        try (KafkaProducer<byte[], byte[]> producer = probe.producer()) {
            Object[][] rows = {{"o-1", "first", 9L}, {"o-2", "second", 9L}, {"o-1", "stale", 3L}};
            for (Object[] row : rows) {
                GenericRecord value = new GenericData.Record(keywords);
                value.put("order", row[1]);
                value.put("user", "user-" + row[1]);
                value.put("group", "g");
                value.put("offset", 40L);
                value.put("limit", 5);
                value.put("from", "warehouse");
                value.put("select", true);
                value.put("whereTo", "dock");
                probe.send(producer, "order", ((String) row[0]).getBytes(StandardCharsets.UTF_8),
                        values.serialize("order", value),
                        FenceHeaders.TOKEN, row[2].toString(), FenceHeaders.SEQ, "1");
            }
        }
        await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(500)).untilAsserted(() -> {
            assertThat(probe.rows(
                    "SELECT resource_key, \"order\", \"user\", \"group\", \"offset\", \"limit\", \"from\", \"select\"::text, "
                            + "where_to,"
                            + " fence_token FROM \"order\" ORDER BY 1"))
                    .containsExactly("o-1|first|user-first|g|40|5|warehouse|true|dock|9",
                            "o-2|second|user-second|g|40|5|warehouse|true|dock|9");
            assertThat(probe.deadLetters("order-dlq")).extracting(SinkProbe.DeadLetter::reason).containsExactly("STALE_TOKEN");
        });
        assertThat(probe.taskState("order-sink")).isEqualTo("RUNNING");
    }

    /**
     * Every sink and Connect metric the Grafana dashboard and the alert rules in {@code docker/} name is on the real
     * Connect worker's scrape (the JMX exporter with {@code config/connect-jmx-exporter.yml}), labelled by connector.
     */
    @Test
    void everyConnectMetricTheDashboardAndTheAlertRulesNameIsOnTheWorkersScrape() throws Exception {
        Set<String> names = new TreeSet<>();
        Pattern metric = Pattern.compile("\\b(fence_sink_[a-z0-9_]+|kafka_connect_[a-z0-9_]+)");
        for (String file : List.of("../docker/grafana/dashboards/fenced-writes.json", "../docker/prometheus/alerts.yml")) {
            Matcher found = metric.matcher(Files.readString(Path.of(file)));
            while (found.find()) {
                names.add(found.group(1));
            }
        }
        assertThat(names).contains("fence_sink_records_fenced_total", "kafka_connect_worker_connector_running_task_count",
                "kafka_connect_sink_consumer_records_lag_max", "kafka_connect_task_error_deadletterqueue_produce_requests");
        String url = stack.env().get("CONNECT_METRICS_URL");
        await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
            List<String> lines = Http.get(url).body().lines().filter(l -> !l.startsWith("#")).toList();
            assertThat(names).allSatisfy(name -> assertThat(lines).as("series of %s on %s", name, url)
                    .anyMatch(l -> l.startsWith(name + "{") && l.contains(SINK)));
        });
    }

    /** The JMX exporter agent also serves the Connect worker JVM's and process's metrics, beside the sink's. */
    @Test
    void theConnectWorkerServesItsJvmAndProcessMetrics() throws Exception {
        List<String> lines = Http.get(stack.env().get("CONNECT_METRICS_URL")).body().lines().toList();
        assertThat(lines).anyMatch(l -> l.startsWith("jvm_memory_used_bytes{"))
                .anyMatch(l -> l.startsWith("jvm_gc_collection_seconds"))
                .anyMatch(l -> l.startsWith("process_cpu_seconds_total"));
    }

    /**
     * The value of one series (labels in the exporter's order, sorted by name) on the Connect worker's Prometheus endpoint; fails
     * if it is not there.
     */
    private static double scrape(Map<String, String> env, String series) throws Exception {
        String body = Http.get(env.get("CONNECT_METRICS_URL")).body();
        return body.lines().filter(line -> line.startsWith(series + " ")).findFirst()
                .map(line -> Double.parseDouble(line.substring(series.length() + 1).trim()))
                .orElseThrow(() -> new AssertionError(
                        "no series " + series + " on " + env.get("CONNECT_METRICS_URL") + "; fence_sink lines: "
                                + body.lines().filter(l -> l.startsWith("fence_sink")).toList()));
    }
}
