package dev.fencedwrites.demo;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.testing.CommittedRecords;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.List;
import java.util.function.Predicate;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * What the pipeline on a {@link LocalStack} shows from outside: committed topic records, the enforcer's fences and counters, the
 * table's rows.
 */
final class StackProbe {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    private final LocalStack stack;

    StackProbe(LocalStack stack) {
        this.stack = stack;
    }

    /**
     * Every committed record of {@code topic} whose key passes {@code keys}, read from the beginning to the end offsets
     * (read_committed).
     */
    List<ConsumerRecord<String, byte[]>> read(String topic, Predicate<String> keys) {
        return CommittedRecords.read(stack.kafkaBootstrap(), topic, keys);
    }

    /**
     * The enforcer's fence of {@code key} as {@code token.seq} ({@code token} without a seq), or {@code "none"} when it has none
     * (404).
     */
    String fence(String key) throws Exception {
        HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(URI.create(stack.enforcerUrl() + "/fences/"
                + URLEncoder.encode(key, StandardCharsets.UTF_8).replace("+", "%20"))).timeout(Duration.ofSeconds(30)).build(),
                HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() == 404) {
            return "none";
        }
        if (response.statusCode() != 200) {
            throw new IllegalStateException("GET /fences/" + key + " answered " + response.statusCode() + ": " + response.body());
        }
        JsonNode body = JSON.readTree(response.body());
        return body.path("token").asText() + (body.path("seq").isNull() ? "" : "." + body.path("seq").asText());
    }

    /**
     * The sum of the enforcer's Prometheus samples of {@code name} carrying the label {@code label="value"} (any, with a null
     * label); 0 when there is none.
     */
    double metric(String name, String label, String value) throws Exception {
        String body = HTTP.send(
                HttpRequest.newBuilder(URI.create(stack.enforcerUrl() + "/metrics")).timeout(Duration.ofSeconds(30)).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        String tag = label == null ? "" : label + "=\"" + value + "\"";
        return body.lines().filter(line -> (line.startsWith(name + "{") || line.startsWith(name + " ")) && line.contains(tag))
                .mapToDouble(line -> Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1))).sum();
    }

    /** The enforcer's health: {@code RUNNING}, or the Kafka Streams state it reports. */
    String health() throws Exception {
        HttpResponse<String> response = HTTP.send(
                HttpRequest.newBuilder(URI.create(stack.enforcerUrl() + "/health")).timeout(Duration.ofSeconds(30)).build(),
                HttpResponse.BodyHandlers.ofString());
        return JSON.readTree(response.body()).path("state").asText();
    }

    /**
     * The fenced table's row of {@code key} as {@code "<fence_token>.<fence_seq> <computed_by>"}, or {@code null} when there is
     * none.
     */
    String row(String key) throws Exception {
        try (Connection connection = DriverManager.getConnection(stack.postgresUrl());
                PreparedStatement statement = connection
                        .prepareStatement("SELECT fence_token, fence_seq, computed_by FROM " + BillingConnectors.TABLE
                                + " WHERE resource_key = ?")) {
            statement.setString(1, key);
            try (ResultSet rows = statement.executeQuery()) {
                return rows.next() ? rows.getLong(1) + "." + rows.getLong(2) + " " + rows.getString(3) : null;
            }
        }
    }

    /** The decoded value of the last header {@code name}, or {@code null}. */
    static String header(ConsumerRecord<?, ?> record, String name) {
        var header = record.headers().lastHeader(name);
        return header == null ? null : FenceHeaders.decode(header.value());
    }
}
