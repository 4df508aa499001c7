package dev.fencedwrites.schemas.registry;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.Schema;

/**
 * A {@link SchemaRegistryClient} over the Confluent schema registry REST API (JDK HttpClient +
 * Jackson). Calls used: {@code POST /subjects/{subject}/versions} and {@code GET /schemas/ids/{id}},
 * content type {@code application/vnd.schemaregistry.v1+json}; errors are
 * {@code {"error_code": ..., "message": ...}}. Thread-safe.
 */
public final class RestSchemaRegistryClient implements SchemaRegistryClient {
    private static final String CONTENT_TYPE = "application/vnd.schemaregistry.v1+json";
    private static final ObjectMapper JSON = new ObjectMapper();

    private final URI baseUrl;
    private final Duration timeout;
    private final HttpClient http;
    private final Map<String, Map<Schema, Integer>> idsBySubject = new ConcurrentHashMap<>();
    private final Map<Integer, Schema> schemasById = new ConcurrentHashMap<>();

    /**
     * @param baseUrl the registry's base URL, e.g. {@code http://127.0.0.1:8081} or Apicurio's
     *                {@code http://127.0.0.1:8080/apis/ccompat/v7}
     * @param timeout per-request timeout
     */
    public RestSchemaRegistryClient(String baseUrl, Duration timeout) {
        String trimmed = baseUrl.endsWith("/") ? baseUrl.substring(0, baseUrl.length() - 1) : baseUrl;
        this.baseUrl = URI.create(trimmed);
        this.timeout = timeout;
        this.http = HttpClient.newBuilder().connectTimeout(timeout).build();
    }

    @Override
    public int register(String subject, Schema schema) {
        Map<Schema, Integer> ids = idsBySubject.computeIfAbsent(subject, s -> new ConcurrentHashMap<>());
        Integer cached = ids.get(schema);
        if (cached != null) {
            return cached;
        }
        String body;
        try {
            body = JSON.writeValueAsString(Map.of("schema", schema.toString()));
        } catch (IOException e) {
            throw new IllegalStateException("cannot encode schema as JSON", e);
        }
        JsonNode response = call(HttpRequest.newBuilder(path("/subjects/" + encode(subject) + "/versions"))
                .POST(HttpRequest.BodyPublishers.ofString(body)), "register schema under subject " + subject);
        int id = response.path("id").asInt(-1);
        if (id < 0) {
            throw new SchemaRegistryException("registry at " + baseUrl + " answered without an id: " + response, 200, -1, null);
        }
        ids.put(schema, id);
        schemasById.putIfAbsent(id, schema);
        return id;
    }

    @Override
    public Schema getById(int id) {
        Schema cached = schemasById.get(id);
        if (cached != null) {
            return cached;
        }
        JsonNode response = call(HttpRequest.newBuilder(path("/schemas/ids/" + id)).GET(), "fetch schema id " + id);
        Schema schema;
        try {
            schema = new Schema.Parser().parse(response.path("schema").asText());
        } catch (org.apache.avro.SchemaParseException e) {
            throw new SchemaRegistryException("schema registry at " + baseUrl + " answered schema id " + id + " with no valid Avro schema: "
                    + e.getMessage(), 200, -1, e);
        }
        schemasById.putIfAbsent(id, schema);
        return schema;
    }

    private URI path(String suffix) {
        return URI.create(baseUrl + suffix);
    }

    private static String encode(String subject) {
        return URLEncoder.encode(subject, StandardCharsets.UTF_8).replace("+", "%20");
    }

    private JsonNode call(HttpRequest.Builder request, String what) {
        HttpResponse<String> response;
        try {
            response = http.send(request.timeout(timeout)
                    .header("Content-Type", CONTENT_TYPE)
                    .header("Accept", CONTENT_TYPE + ", application/json")
                    .build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new SchemaRegistryException("cannot " + what + ": schema registry at " + baseUrl + " unreachable: " + e, -1, -1, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SchemaRegistryException("interrupted while trying to " + what, -1, -1, e);
        }
        JsonNode body;
        try {
            body = JSON.readTree(response.body());
        } catch (IOException e) {
            body = JSON.createObjectNode().put("message", response.body());
        }
        if (response.statusCode() / 100 != 2) {
            throw new SchemaRegistryException("cannot " + what + ": schema registry at " + baseUrl + " answered HTTP "
                    + response.statusCode() + " error_code=" + body.path("error_code").asInt(-1) + ": " + body.path("message").asText(response.body()),
                    response.statusCode(), body.path("error_code").asInt(-1), null);
        }
        return body;
    }
}
