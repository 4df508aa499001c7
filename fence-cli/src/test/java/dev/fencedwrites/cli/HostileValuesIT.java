package dev.fencedwrites.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.contract.NewTopics;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.localstack.testing.SharedBillingStack;
import dev.fencedwrites.testing.CommittedRecords;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.avro.Schema;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Needs real services: an OutOfMemoryError or StackOverflowError in decoding only shows as a
 * FAILED task of a real Connect worker (512 MB heap, its own error handling and dead-letter
 * reporter), fed by a real broker, resolving schema ids in the real registry and writing to
 * PostgreSQL. Hostile values go straight to the sinks' topics between good records,
 * along three paths: the stack's sink (values as bytes, decoded by the sink), a sink behind the
 * project's AvroConverter as value.converter, and a bytes sink whose registry serves broken schemas.
 */
@Timeout(value = 12, unit = TimeUnit.MINUTES)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@ExtendWith(SharedBillingStack.class)
class HostileValuesIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String CONVERTER_SINK = "hostile-converter-sink";
    private static final String CONVERTER_TOPIC = "hostile-converter";
    private static final String PROXY_SINK = "hostile-proxy-sink";
    private static final String PROXY_TOPIC = "hostile-proxy";
    /** Ids the in-test registry answers itself; every other call goes to the stack's registry. */
    private static final int INVALID_DEFAULT_ID = 900_001;
    private static final int UNPARSABLE_ID = 900_002;
    private static final long[] GOOD_AMOUNTS = {101, 202, 303};

    static LocalStack stack;
    static HttpServer brokenRegistry;
    static Map<String, Integer> ids = new LinkedHashMap<>();
    static AvroSerializer<BillingSummary> serializer;

    /**
     * A value written to hurt; the text its refusal must contain (null: the reason is enough); whether it is valid Avro
     * (so {@code ./fence consume} prints it as a value); whether only the sink task, not the converter, can refuse it.
     */
    private record Hostile(String kind, byte[] value, String error, boolean validAvro, boolean refusedByTask) {
        Hostile(String kind, byte[] value, String error) {
            this(kind, value, error, false, false);
        }
    }

    /**
     * On the stack OperatorCommandsIT uses too: this class's keys (stack-, converter-, proxy-), tables and connectors are
     * its own, and it finds its records among the others' by key.
     */
    @BeforeAll
    static void startSinks(LocalStack shared) throws Exception {
        stack = shared;
        RestSchemaRegistryClient registry = new RestSchemaRegistryClient(stack.schemaRegistryUrl(), Duration.ofSeconds(10));
        register(registry, "string",
                "{\"type\":\"record\",\"name\":\"HostileString\",\"namespace\":\"hostile\",\"fields\":[{\"name\":\"s\","
                        + "\"type\":\"string\"}]}");
        register(registry, "bytes",
                "{\"type\":\"record\",\"name\":\"HostileBytes\",\"namespace\":\"hostile\",\"fields\":[{\"name\":\"b\","
                        + "\"type\":\"bytes\"}]}");
        register(registry, "fixed",
                "{\"type\":\"record\",\"name\":\"HostileFixed\",\"namespace\":\"hostile\",\"fields\":[{\"name\":\"f\",\"type\":"
                        + "{\"type\":\"fixed\",\"name\":\"Huge\",\"size\":2147483000}}]}");
        register(registry, "ints",
                "{\"type\":\"record\",\"name\":\"HostileInts\",\"namespace\":\"hostile\",\"fields\":[{\"name\":\"xs\",\"type\":"
                        + "{\"type\":\"array\",\"items\":\"int\"}}]}");
        register(registry, "nulls",
                "{\"type\":\"record\",\"name\":\"HostileNulls\",\"namespace\":\"hostile\",\"fields\":[{\"name\":\"xs\",\"type\":"
                        + "{\"type\":\"array\",\"items\":\"null\"}}]}");
        register(registry, "map",
                "{\"type\":\"record\",\"name\":\"HostileMap\",\"namespace\":\"hostile\",\"fields\":[{\"name\":\"m\",\"type\":"
                        + "{\"type\":\"map\",\"values\":\"int\"}}]}");
        register(registry, "enum",
                "{\"type\":\"record\",\"name\":\"HostileEnum\",\"namespace\":\"hostile\",\"fields\":[{\"name\":\"c\",\"type\":"
                        + "{\"type\":\"enum\",\"name\":\"Color\",\"symbols\":[\"RED\",\"GREEN\",\"BLUE\"]}}]}");
        register(registry, "union",
                "{\"type\":\"record\",\"name\":\"HostileUnion\",\"namespace\":\"hostile\",\"fields\":[{\"name\":\"u\","
                        + "\"type\":[\"null\",\"string\"]}]}");
        register(registry, "node",
                "{\"type\":\"record\",\"name\":\"Node\",\"namespace\":\"hostile\",\"fields\":[{\"name\":\"v\",\"type\":\"int\"},"
                        + "{\"name\":\"next\",\"type\":[\"null\",\"Node\"]}]}");
        register(registry, "decimal",
                "{\"type\":\"record\",\"name\":\"HostileDecimal\",\"namespace\":\"hostile\",\"fields\":[{\"name\":\"d\",\"type\":"
                        + "{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":4,\"scale\":2}}]}");
        register(registry, "time",
                "{\"type\":\"record\",\"name\":\"HostileTime\",\"namespace\":\"hostile\",\"fields\":[{\"name\":\"t\",\"type\":"
                        + "{\"type\":\"int\",\"logicalType\":\"time-millis\"}}]}");
        register(registry, "date",
                "{\"type\":\"record\",\"name\":\"HostileDate\",\"namespace\":\"hostile\",\"fields\":[{\"name\":\"day\",\"type\":"
                        + "{\"type\":\"int\",\"logicalType\":\"date\"}}]}");
        register(registry, "not-a-record", "\"string\"");
        ids.put("json-schema", registerJsonSchema());
        serializer = AvroSerializer.forValues(registry);
        brokenRegistry = brokenRegistry(stack.schemaRegistryUrl());
        String brokenUrl = "http://127.0.0.1:" + brokenRegistry.getAddress().getPort();

        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap()))) {
            admin.createTopics(List.of(new NewTopic(CONVERTER_TOPIC, 1, (short) 1), new NewTopic(PROXY_TOPIC, 1, (short) 1)))
                    .all().get(60, TimeUnit.SECONDS);
            NewTopics.awaitWritable(admin, List.of(CONVERTER_TOPIC, PROXY_TOPIC), Duration.ofSeconds(60));
        }
        Map<String, String> converterSink = sinkConfig(CONVERTER_TOPIC, "hostile_converter", brokenUrl);
        converterSink.put("value.converter", "dev.fencedwrites.avro.connect.AvroConverter");
        converterSink.put("value.converter.schema.registry.url", brokenUrl);
        createConnector(CONVERTER_SINK, converterSink);
        createConnector(PROXY_SINK, sinkConfig(PROXY_TOPIC, "hostile_proxy", brokenUrl));
        await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofSeconds(1)).ignoreExceptions().untilAsserted(() -> {
            assertThat(taskState(CONVERTER_SINK)).isEqualTo("RUNNING");
            assertThat(taskState(PROXY_SINK)).isEqualTo("RUNNING");
        });

        send(FenceTopics.ACCEPTED, "stack", hostileValues(false));
        send(CONVERTER_TOPIC, "converter", hostileValues(true));
        send(PROXY_TOPIC, "proxy", hostileValues(true));
    }

    @AfterAll
    static void stopBrokenRegistry() {
        if (brokenRegistry != null) {
            brokenRegistry.stop(0);
        }
    }

    /** The stack's sink: values as bytes (ByteArrayConverter), decoded by the sink task, schemas from the real registry. */
    @Test
    @Order(1)
    void theBytesSinkDeadLettersEveryHostileValueAsMalformedAndWritesTheGoodOnes() throws Exception {
        assertDeadLetteredAndGoodRowsWritten("stack", hostileValues(false), BillingConnectors.SINK_CONNECTOR,
                BillingConnectors.TABLE, false);
    }

    /**
     * A sink behind AvroConverter as the worker's value.converter: a value the converter cannot decode never reaches
     * the task; Connect dead-letters it, and the converter's fence.rejected.* headers ride along.
     */
    @Test
    @Order(2)
    void behindTheAvroConverterConnectDeadLettersEveryHostileValueMarkedMalformed() throws Exception {
        List<Hostile> hostile = hostileValues(true);
        assertDeadLetteredAndGoodRowsWritten("converter", hostile, CONVERTER_SINK, "hostile_converter", true);
        List<ConsumerRecord<String, byte[]>> rejected = readAll(FenceTopics.REJECTED);
        ConsumerRecord<String, byte[]> string = only(rejected, "converter-string-2gb");
        assertThat(header(string, "__connect.errors.stage")).isEqualTo("VALUE_CONVERTER");
        assertThat(header(string, "__connect.errors.topic")).isEqualTo(CONVERTER_TOPIC);
        assertThat(header(string, FenceHeaders.SOURCE_TOPIC)).isEqualTo(CONVERTER_TOPIC);
    }

    /**
     * A bytes sink whose registry serves a schema with an invalid default and one that does not parse, besides the real
     * registry's.
     */
    @Test
    @Order(3)
    void aRegistryServingBrokenSchemasStopsNothing() throws Exception {
        assertDeadLetteredAndGoodRowsWritten("proxy", hostileValues(true), PROXY_SINK, "hostile_proxy", false);
    }

    /** {@code ./fence consume} prints each hostile value of the accepted topic with its error, and the good ones around them. */
    @Test
    @Order(4)
    void fenceConsumePrintsEachHostileValueWithItsErrorAndGoesOn() throws Exception {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        picocli.CommandLine line = FenceMain.commandLine();
        line.setOut(new PrintWriter(out));
        line.setErr(new PrintWriter(err));

        int exit = line.execute("consume", "--bootstrap", stack.kafkaBootstrap(), "--schema-registry", stack.schemaRegistryUrl());

        assertThat(exit).as(err.toString()).isZero();
        Map<String, JsonNode> byKey = new LinkedHashMap<>();
        for (String text : out.toString().lines().toList()) {
            JsonNode object = JSON.readTree(text);
            byKey.put(object.path("key").asText(), object);
        }
        for (Hostile hostile : hostileValues(false)) {
            JsonNode object = byKey.get("stack-" + hostile.kind());
            assertThat(object).as(hostile.kind()).isNotNull();
            if (!hostile.validAvro()) {
                assertThat(object.path("value_error").asText()).as(hostile.kind()).contains(hostile.error());
            }
        }
        for (int i = 0; i < GOOD_AMOUNTS.length; i++) {
            assertThat(byKey.get("stack-good-" + i).path("value").path("amountMinor").asLong()).isEqualTo(GOOD_AMOUNTS[i]);
        }
    }

    /** {@code ./fence rejected} prints one line per dead-lettered hostile value, with the reason and the sink's error. */
    @Test
    @Order(5)
    void fenceRejectedPrintsEachHostileValueWithItsError() {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        picocli.CommandLine line = FenceMain.commandLine();
        line.setOut(new PrintWriter(out));
        line.setErr(new PrintWriter(err));

        int exit = line.execute("rejected", "--bootstrap", stack.kafkaBootstrap());

        assertThat(exit).as(err.toString()).isZero();
        List<String> lines = out.toString().lines().toList();
        for (String path : List.of("stack", "converter", "proxy")) {
            for (Hostile hostile : hostileValues(!path.equals("stack"))) {
                assertThat(lines).as(path + "-" + hostile.kind())
                        .filteredOn(text -> text.contains("  " + path + "-" + hostile.kind() + "  "))
                        .singleElement().asString().contains("MALFORMED_VALUE", "stage=sink", "error=")
                        .contains(hostile.error() == null ? "MALFORMED_VALUE" : hostile.error());
            }
        }
    }

    private static void assertDeadLetteredAndGoodRowsWritten(String path, List<Hostile> hostile, String connector, String table,
            boolean converter)
            throws Exception {
        await().atMost(Duration.ofSeconds(180)).pollInterval(Duration.ofSeconds(2)).untilAsserted(() -> {
            String state = taskState(connector);
            if (state.startsWith("FAILED")) {
                // no waiting out a dead task
                throw new IllegalStateException("the sink task of " + connector + " died on a hostile value: " + state);
            }
            List<ConsumerRecord<String, byte[]>> rejected = readAll(FenceTopics.REJECTED);
            for (Hostile h : hostile) {
                ConsumerRecord<String, byte[]> record = only(rejected, path + "-" + h.kind());
                assertThat(header(record, FenceHeaders.REJECTED_REASON)).as(h.kind()).isEqualTo("MALFORMED_VALUE");
                assertThat(header(record, FenceHeaders.REJECTED_STAGE)).as(h.kind()).isEqualTo(FenceHeaders.STAGE_SINK);
                if (h.error() != null) {
                    assertThat(header(record, "__connect.errors.exception.message")).as(h.kind()).contains(h.error());
                }
                if (!(converter && h.refusedByTask())) {
                    // A record refused by the task behind the converter is re-encoded by the converter for the dead-letter topic.
                    assertThat(record.value()).as(h.kind() + ": the original bytes").isEqualTo(h.value());
                }
            }
        });
        assertThat(taskState(connector)).as("the sink task survived every hostile value").isEqualTo("RUNNING");
        List<ConsumerRecord<String, byte[]>> rejected = readAll(FenceTopics.REJECTED);
        hostile.forEach(h -> System.out.println("[" + path + "] " + h.kind() + ": "
                + header(only(rejected, path + "-" + h.kind()), "__connect.errors.exception.message")));
        await().atMost(Duration.ofSeconds(60)).ignoreExceptions().untilAsserted(() -> {
            for (int i = 0; i < GOOD_AMOUNTS.length; i++) {
                assertThat(amount(table, path + "-good-" + i)).isEqualTo(GOOD_AMOUNTS[i]);
            }
        });
        try (Connection connection = DriverManager.getConnection(stack.postgresUrl());
                PreparedStatement statement = connection
                        .prepareStatement("SELECT count(*) FROM " + table + " WHERE resource_key LIKE ?")) {
            statement.setString(1, path + "-%");
            try (ResultSet rows = statement.executeQuery()) {
                rows.next();
                assertThat(rows.getLong(1)).as("rows of path %s: only the good records", path).isEqualTo(GOOD_AMOUNTS.length);
            }
        }
    }

    /** Every kind of hostile value, as bytes; {@code brokenRegistry} adds the ids only the in-test registry serves. */
    private static List<Hostile> hostileValues(boolean brokenRegistry) {
        List<Hostile> all = new ArrayList<>();
        all.add(new Hostile("string-2gb", wire("string").varint(2_147_483_000L).raw('a', 'b', 'c').bytes(),
                "string of 2147483000 bytes"));
        all.add(new Hostile("bytes-2gb", wire("bytes").varint(2_000_000_000L).raw(1, 2).bytes(), "bytes of 2000000000 bytes"));
        all.add(new Hostile("fixed-2gb", wire("fixed").raw(1, 2, 3).bytes(), "fixed hostile.Huge of 2147483000 bytes"));
        all.add(new Hostile("array-count", wire("ints").varint(2_000_000_000L).varint(1).varint(2).varint(0).bytes(),
                "2000000000 items"));
        all.add(new Hostile("null-items", wire("nulls").varint(2_000_000_000L).varint(0).bytes(), "items that take no bytes"));
        all.add(new Hostile("map-count", wire("map").varint(1_500_000_000L).varint(1).raw('k').varint(3).varint(0).bytes(),
                "1500000000 items"));
        all.add(new Hostile("negative-length", wire("string").varint(-1).raw(0, 0).bytes(), "string length -1 is negative"));
        all.add(new Hostile("negative-count", wire("ints").varint(Long.MIN_VALUE).varint(0).varint(0).bytes(),
                "block count " + Long.MIN_VALUE));
        all.add(new Hostile("enum-index", wire("enum").varint(7).bytes(), "enum index 7 is out of range"));
        all.add(new Hostile("union-index", wire("union").varint(5).varint(1).raw('x').bytes(), "union index 5 is out of range"));
        byte[] good = serializer.serialize(FenceTopics.ACCEPTED, summary("template", 1));
        all.add(new Hostile("truncated", Arrays.copyOf(good, good.length - 1), "truncated"));
        byte[] padded = Arrays.copyOf(good, good.length + 3);
        all.add(new Hostile("trailing-bytes", padded, "3 bytes left after the end of the value"));
        Payload deep = wire("node");
        for (int i = 0; i < 200_000; i++) {
            deep.varint(i).varint(1);
        }
        all.add(new Hostile("deep-nesting", deep.varint(0).varint(0).bytes(), "nested deeper than 100"));
        all.add(new Hostile("recursive-schema", wire("node").varint(1).varint(1).varint(2).varint(0).bytes(),
                "recursive record schema", true, true));
        all.add(new Hostile("decimal-no-bytes", wire("decimal").varint(0).bytes(), "decimal(4,2) with no bytes"));
        all.add(new Hostile("decimal-precision", wire("decimal").varint(3).raw(0x01, 0xE2, 0x40).bytes(),
                "more digits than its precision 4"));
        all.add(new Hostile("time-of-day", wire("time").varint(90_000_000).bytes(), "is not a time of day"));
        // Any int is an Avro date; PostgreSQL's dates end in 5874897 AD, so the database refuses this one.
        all.add(new Hostile("date-out-of-range", wire("date").varint(Integer.MAX_VALUE).bytes(), "out of range", true, true));
        all.add(new Hostile("not-a-record", wire("not-a-record").varint(1).raw('x').bytes(), "not a record but a STRING", true,
                false));
        all.add(new Hostile("unknown-schema-id", new Payload(987_654).varint(1).bytes(), "schema id 987654"));
        all.add(new Hostile("json-schema-id", wire("json-schema").raw('{', '}').bytes(), "JSON schema, not Avro"));
        all.add(new Hostile("not-wire-format", "plain text".getBytes(StandardCharsets.UTF_8), "magic byte"));
        if (brokenRegistry) {
            all.add(new Hostile("invalid-default", new Payload(INVALID_DEFAULT_ID).varint(1).bytes(),
                    "Invalid default for field n"));
            all.add(new Hostile("unparsable-schema", new Payload(UNPARSABLE_ID).varint(1).bytes(), "no valid Avro schema"));
        }
        return all;
    }

    /**
     * Good records, then the hostile ones in two halves with a good one between, then a last good one; keys are {@code
     * <path>-<kind>}.
     */
    private static void send(String topic, String path, List<Hostile> hostile) throws Exception {
        Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap());
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(config, new StringSerializer(),
                new ByteArraySerializer())) {
            List<ProducerRecord<String, byte[]>> records = new ArrayList<>();
            records.add(record(topic, path + "-good-0", serializer.serialize(topic, summary(path + "-good-0", GOOD_AMOUNTS[0]))));
            for (int i = 0; i < hostile.size(); i++) {
                if (i == hostile.size() / 2) {
                    records.add(record(topic, path + "-good-1",
                            serializer.serialize(topic, summary(path + "-good-1", GOOD_AMOUNTS[1]))));
                }
                records.add(record(topic, path + "-" + hostile.get(i).kind(), hostile.get(i).value()));
            }
            records.add(record(topic, path + "-good-2", serializer.serialize(topic, summary(path + "-good-2", GOOD_AMOUNTS[2]))));
            for (ProducerRecord<String, byte[]> record : records) {
                producer.send(record).get(30, TimeUnit.SECONDS);
            }
        }
    }

    private static ProducerRecord<String, byte[]> record(String topic, String key, byte[] value) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, FenceHeaders.encode(3));
        headers.add(FenceHeaders.SEQ, FenceHeaders.encode(1));
        return new ProducerRecord<>(topic, null, key, value, headers);
    }

    private static BillingSummary summary(String customer, long amountMinor) {
        return BillingSummary.newBuilder().setCustomerId(customer).setBillingPeriod("2026-12").setAmountMinor(amountMinor)
                .setCurrency("EUR").setLineItems(1).setComputedAt(Instant.parse("2026-12-01T10:00:00Z"))
                .setComputedBy("hostile-it").build();
    }

    private static void register(RestSchemaRegistryClient registry, String name, String schema) {
        ids.put(name, registry.register("hostile-" + name + "-value", new Schema.Parser().parse(schema)));
    }

    /**
     * A JSON Schema in the real registry: its id is valid, its text is no Avro schema (Avro's parser throws a
     * NullPointerException on it).
     */
    private static int registerJsonSchema() throws Exception {
        HttpResponse<String> response = HttpClient.newHttpClient().send(HttpRequest
                .newBuilder(URI.create(stack.schemaRegistryUrl() + "/subjects/hostile-json-value/versions"))
                .header("Content-Type", "application/vnd.schemaregistry.v1+json")
                .POST(HttpRequest.BodyPublishers.ofString(
                        "{\"schemaType\":\"JSON\",\"schema\":\"{\\\"type\\\":\\\"object\\\","
                                + "\\\"properties\\\":{\\\"a\\\":{\\\"type\\\":\\\"string\\\"}}}\"}"))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        return JSON.readTree(response.body()).path("id").asInt();
    }

    /**
     * A Confluent-compatible registry on loopback that answers two schema ids itself, a schema with a default of the wrong type
     * and text that is no JSON (real registries refuse to store either today; older ones and other tools did not), and forwards
     * every other request to {@code upstream}.
     */
    private static HttpServer brokenRegistry(String upstream) throws Exception {
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        HttpClient client = HttpClient.newHttpClient();
        Map<String, String> broken = Map.of(
                "/schemas/ids/" + INVALID_DEFAULT_ID, JSON.writeValueAsString(Map.of("schema",
                        "{\"type\":\"record\",\"name\":\"BadDefault\",\"fields\":[{\"name\":\"n\",\"type\":\"int\","
                                + "\"default\":\"abc\"}]}")),
                "/schemas/ids/" + UNPARSABLE_ID, JSON.writeValueAsString(Map.of("schema", "{not json")));
        server.createContext("/", exchange -> {
            String path = exchange.getRequestURI().getRawPath();
            byte[] body;
            int status;
            if (broken.containsKey(path)) {
                status = 200;
                body = broken.get(path).getBytes(StandardCharsets.UTF_8);
            } else {
                HttpRequest.Builder forward = HttpRequest.newBuilder(URI.create(upstream + path));
                byte[] sent = exchange.getRequestBody().readAllBytes();
                String type = exchange.getRequestHeaders().getFirst("Content-Type");
                if (type != null) {
                    forward.header("Content-Type", type);
                }
                forward.method(exchange.getRequestMethod(),
                        sent.length == 0 ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(sent));
                try {
                    HttpResponse<byte[]> answer = client.send(forward.build(), HttpResponse.BodyHandlers.ofByteArray());
                    status = answer.statusCode();
                    body = answer.body();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    status = 503;
                    body = new byte[0];
                }
            }
            exchange.getResponseHeaders().set("Content-Type", "application/vnd.schemaregistry.v1+json");
            exchange.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        server.start();
        return server;
    }

    private static Map<String, String> sinkConfig(String topic, String table, String registryUrl) {
        Map<String, String> config = new LinkedHashMap<>();
        config.put("connector.class", "dev.fencedwrites.sink.FencedJdbcSinkConnector");
        config.put("tasks.max", "1");
        config.put("topics", topic);
        config.put("connection.url", stack.postgresUrl());
        config.put("schema.registry.url", registryUrl);
        config.put("table.name", table);
        config.put("header.converter", "org.apache.kafka.connect.converters.ByteArrayConverter");
        config.put("consumer.override.isolation.level", "read_committed");
        config.put("errors.tolerance", "all");
        config.put("errors.deadletterqueue.topic.name", FenceTopics.REJECTED);
        config.put("errors.deadletterqueue.topic.replication.factor", "1");
        config.put("errors.deadletterqueue.context.headers.enable", "true");
        return config;
    }

    private static void createConnector(String name, Map<String, String> config) throws Exception {
        HttpResponse<String> response = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create(stack.connectUrl() + "/connectors"))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers
                                .ofString(JSON.writeValueAsString(Map.of("name", name, "config", config))))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).as(response.body()).isEqualTo(201);
    }

    /** The state of the connector's task 0, with its trace when it failed. */
    private static String taskState(String connector) throws Exception {
        HttpResponse<String> response = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create(stack.connectUrl() + "/connectors/" + connector + "/status")).build(),
                HttpResponse.BodyHandlers.ofString());
        JsonNode task = JSON.readTree(response.body()).path("tasks").path(0);
        String state = task.path("state").asText();
        return "FAILED".equals(state) ? state + ": " + task.path("trace").asText() : state;
    }

    private static long amount(String table, String key) throws Exception {
        try (Connection connection = DriverManager.getConnection(stack.postgresUrl());
                PreparedStatement statement = connection
                        .prepareStatement("SELECT amount_minor FROM " + table + " WHERE resource_key = ?")) {
            statement.setString(1, key);
            try (ResultSet rows = statement.executeQuery()) {
                return rows.next() ? rows.getLong(1) : -1;
            }
        }
    }

    private static ConsumerRecord<String, byte[]> only(List<ConsumerRecord<String, byte[]>> records, String key) {
        List<ConsumerRecord<String, byte[]>> found = records.stream().filter(r -> key.equals(r.key())).toList();
        assertThat(found).as("dead-letter records with key %s", key).hasSize(1);
        return found.get(0);
    }

    /** Every committed record of {@code topic} with a key, from the beginning to the end offsets. */
    private static List<ConsumerRecord<String, byte[]>> readAll(String topic) {
        return CommittedRecords.read(stack.kafkaBootstrap(), topic, key -> true);
    }

    private static String header(ConsumerRecord<?, ?> record, String name) {
        var header = record.headers().lastHeader(name);
        return header == null ? null : FenceHeaders.decode(header.value());
    }

    private static Payload wire(String schema) {
        return new Payload(ids.get(schema));
    }

    /** The Confluent wire format written by hand, so lengths, counts and indexes can lie. */
    private static final class Payload {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();

        Payload(int schemaId) {
            out.write(0);
            out.writeBytes(ByteBuffer.allocate(4).putInt(schemaId).array());
        }

        Payload varint(long value) {
            long zigzag = (value << 1) ^ (value >> 63);
            while ((zigzag & ~0x7FL) != 0) {
                out.write((int) ((zigzag & 0x7F) | 0x80));
                zigzag >>>= 7;
            }
            out.write((int) zigzag);
            return this;
        }

        Payload raw(int... bytes) {
            for (int b : bytes) {
                out.write(b);
            }
            return this;
        }

        byte[] bytes() {
            return out.toByteArray();
        }
    }
}
