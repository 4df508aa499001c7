package dev.fencedwrites.localstack;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.NewTopics;
import dev.fencedwrites.services.Http;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * What the sink ITs do to a running stack: topics, a fenced sink connector of their own through the
 * Connect worker's REST API, records straight onto its topic, and reads of its task state, its
 * dead-letter topic and its table.
 */
final class SinkProbe {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    private final String bootstrap;
    private final String connectUrl;
    private final String postgresUrl;
    private final String registryUrl;

    SinkProbe(String bootstrap, String connectUrl, String postgresUrl, String registryUrl) {
        this.bootstrap = bootstrap;
        this.connectUrl = connectUrl;
        this.postgresUrl = postgresUrl;
        this.registryUrl = registryUrl;
    }

    /** Creates the topics, one partition each. */
    void createTopics(String... topics) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            List<NewTopic> created = new ArrayList<>();
            for (String topic : topics) {
                created.add(new NewTopic(topic, 1, (short) 1));
            }
            admin.createTopics(created).all().get(60, TimeUnit.SECONDS);
            NewTopics.awaitWritable(admin, List.of(topics), Duration.ofSeconds(60));
        }
    }

    /**
     * Creates (PUT) a fenced sink connector reading {@code topic} into {@code table.name=${topic}} with
     * its own dead-letter topic {@code dlq}; {@code overrides} win.
     */
    void createSink(String name, String topic, String dlq, Map<String, String> overrides) throws Exception {
        Map<String, String> config = new LinkedHashMap<>();
        config.put("connector.class", "dev.fencedwrites.sink.FencedJdbcSinkConnector");
        config.put("tasks.max", "1");
        config.put("topics", topic);
        config.put("connection.url", postgresUrl);
        config.put("schema.registry.url", registryUrl);
        config.put("table.name", "${topic}");
        config.put("header.converter", "org.apache.kafka.connect.converters.ByteArrayConverter");
        config.put("consumer.override.isolation.level", "read_committed");
        config.put("max.retries", "0");
        config.put("errors.tolerance", "all");
        config.put("errors.deadletterqueue.topic.name", dlq);
        config.put("errors.deadletterqueue.topic.replication.factor", "1");
        config.put("errors.deadletterqueue.context.headers.enable", "true");
        config.putAll(overrides);
        HttpResponse<String> response = HTTP.send(
                HttpRequest.newBuilder(URI.create(connectUrl + "/connectors/" + name + "/config"))
                        .header("Content-Type", "application/json").timeout(Duration.ofSeconds(60))
                        .PUT(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(config))).build(),
                HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() / 100 != 2) {
            throw new RefusedConnector(response.statusCode(), response.body());
        }
    }

    /** Connect's answer to a connector configuration it refused. */
    static final class RefusedConnector extends AssertionError {
        RefusedConnector(int status, String body) {
            super("HTTP " + status + " " + body);
        }
    }

    /** The connector's first task as {@code STATE} or {@code FAILED: trace}; {@code NONE} before it has one. */
    String taskState(String name) throws Exception {
        HttpResponse<String> response = Http.get(connectUrl + "/connectors/" + name + "/status");
        JsonNode tasks = JSON.readTree(response.body()).path("tasks");
        if (tasks.size() == 0) {
            return "NONE";
        }
        JsonNode task = tasks.get(0);
        return task.path("state").asText() + (task.has("trace") ? ": " + task.path("trace").asText() : "");
    }

    /** Sends one record with a UTF-8 key and the given headers (name, value pairs), and waits for the broker. */
    void send(KafkaProducer<byte[], byte[]> producer, String topic, byte[] key, byte[] value, String... headers)
            throws Exception {
        ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, key, value);
        for (int i = 0; i < headers.length; i += 2) {
            record.headers().add(headers[i], FenceHeaders.encode(headers[i + 1]));
        }
        producer.send(record).get(30, TimeUnit.SECONDS);
    }

    KafkaProducer<byte[], byte[]> producer() {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** One record of a dead-letter topic: its key as text, its reason, stage and Connect's exception message. */
    record DeadLetter(String key, String reason, String stage, String error) {
    }

    /** Everything on {@code topic} now, from the beginning. */
    List<DeadLetter> deadLetters(String topic) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, "probe-" + UUID.randomUUID());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        List<DeadLetter> letters = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            int empty = 0;
            while (System.nanoTime() < deadline && empty < 3) {
                var polled = consumer.poll(Duration.ofMillis(500));
                if (polled.isEmpty() && !consumer.assignment().isEmpty()) {
                    empty++;
                }
                for (ConsumerRecord<byte[], byte[]> record : polled) {
                    letters.add(new DeadLetter(record.key() == null ? null : new String(record.key(), StandardCharsets.UTF_8),
                            text(record, FenceHeaders.REJECTED_REASON), text(record, FenceHeaders.REJECTED_STAGE),
                            text(record, "__connect.errors.exception.message")));
                }
            }
        }
        return letters;
    }

    private static String text(ConsumerRecord<byte[], byte[]> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null || header.value() == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    void execute(String sql) throws SQLException {
        try (Connection connection = DriverManager.getConnection(postgresUrl);
                Statement statement = connection.createStatement()) {
            statement.execute(sql);
        }
    }

    /** Each row as its columns' text joined with |; an empty list when the table does not exist yet. */
    List<String> rows(String sql) throws SQLException {
        List<String> rows = new ArrayList<>();
        try (Connection connection = DriverManager.getConnection(postgresUrl);
                PreparedStatement statement = connection.prepareStatement(sql);
                ResultSet result = statement.executeQuery()) {
            int columns = result.getMetaData().getColumnCount();
            while (result.next()) {
                List<String> cells = new ArrayList<>();
                for (int i = 1; i <= columns; i++) {
                    cells.add(result.getString(i));
                }
                rows.add(String.join("|", cells));
            }
        } catch (SQLException e) {
            if ("42P01".equals(e.getSQLState())) {
                return List.of();
            }
            throw e;
        }
        return rows;
    }
}
