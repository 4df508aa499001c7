package dev.fencedwrites.avro;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.SchemaParseException;
import org.apache.kafka.common.config.ConfigException;

/**
 * A {@link SchemaRegistryClient} over the Confluent schema registry REST API (JDK HttpClient +
 * Jackson). Calls used: {@code POST /subjects/{subject}/versions} (register),
 * {@code POST /subjects/{subject}} (look up), {@code GET /subjects/{subject}/versions/latest} and
 * {@code GET /schemas/ids/{id}}, content type {@code application/vnd.schemaregistry.v1+json};
 * errors are {@code {"error_code": ..., "message": ...}}. Thread-safe.
 *
 * <p>Configured with Confluent's setting names (see {@link AvroSerdeConfig}): several URLs with
 * failover, HTTP basic auth, TLS, retries with exponential backoff, bounded caches.
 *
 * <p>A call goes to the URL that last answered; an I/O error or an HTTP 5xx moves it to the next
 * URL. When every URL failed so, the call waits ({@value AvroSerdeConfig#RETRIES_WAIT_MS}, doubling,
 * at most {@value AvroSerdeConfig#RETRIES_MAX_WAIT_MS}) and goes round again, at most
 * {@value AvroSerdeConfig#MAX_RETRIES} more times. A 4xx answer is final: it is never retried.
 * The HTTP calls, failover and retries are {@link RegistryTransport}'s; this class caches and parses.
 */
public final class RestSchemaRegistryClient implements SchemaRegistryClient {
    private static final ObjectMapper JSON = RegistryTransport.JSON;

    private final ClientSettings settings;
    private final RegistryTransport transport;
    /** subject → (schema → id), for register and lookup; both levels bounded. */
    private final Cache<String, Cache<Schema, Integer>> idsBySubject;
    private final Cache<Integer, Schema> schemasById;
    /** Ids whose schema is not valid Avro: an id names the same content for good, so it is not fetched again. */
    private final Cache<Integer, SchemaRegistryException> invalidById;
    private final Cache<String, RegisteredSchema> latestBySubject;

    /**
     * A client with default settings (3 retries, caches of 1000, no auth, the JVM's TLS trust).
     *
     * @param baseUrl one or more registry base URLs, comma-separated, e.g. {@code http://127.0.0.1:8081}
     *                or Apicurio's {@code http://127.0.0.1:8080/apis/ccompat/v7}; credentials in a URL's
     *                user info are used for basic auth
     * @param timeout connect and response timeout per request
     * @throws ConfigException if a URL is not an http(s) URL
     */
    public RestSchemaRegistryClient(String baseUrl, Duration timeout) {
        this(Map.of(AvroSerdeConfig.SCHEMA_REGISTRY_URL, baseUrl,
                AvroSerdeConfig.HTTP_CONNECT_TIMEOUT_MS, timeout.toMillis(), AvroSerdeConfig.HTTP_READ_TIMEOUT_MS,
                timeout.toMillis()));
    }

    /**
     * A client from Confluent-named settings (see {@link AvroSerdeConfig}); unknown keys are ignored.
     *
     * @throws ConfigException if the URL is missing or a setting is invalid or unsupported
     */
    public RestSchemaRegistryClient(Map<String, ?> configs) {
        this.settings = ClientSettings.from(configs);
        this.transport = new RegistryTransport(settings);
        int bound = settings.maxSchemasPerSubject;
        this.idsBySubject = Caffeine.newBuilder().maximumSize(bound).build();
        this.schemasById = Caffeine.newBuilder().maximumSize(bound).build();
        this.invalidById = Caffeine.newBuilder().maximumSize(bound).build();
        Caffeine<Object, Object> latest = Caffeine.newBuilder().maximumSize(settings.latestCacheSize);
        if (settings.latestCacheTtlSec >= 0) {
            latest.expireAfterWrite(Duration.ofSeconds(settings.latestCacheTtlSec));
        }
        this.latestBySubject = latest.build();
    }

    /** The registry URLs in failover order (credentials removed). */
    public List<URI> urls() {
        return transport.urls();
    }

    /**
     * {@inheritDoc}
     *
     * <p>Registered once more after an HTTP 409: Apicurio 2.6 answers 409 ("an artifact with ID ... already exists") to
     * the loser of two first registrations under one subject at the same moment, e.g. writers that start together;
     * the second attempt finds the subject and registers (or finds) the schema in it. A schema that is
     * really incompatible gets its 409 again, and that one is thrown.
     */
    @Override
    public int register(String subject, Schema schema) {
        Cache<Schema, Integer> ids = subjectCache(subject);
        String path = "/subjects/" + encode(subject) + "/versions";
        try {
            return idUnder(ids, subject, schema, path, "register", "registering");
        } catch (SchemaRegistryException e) {
            if (e.httpStatus() != 409) {
                throw e;
            }
            return idUnder(ids, subject, schema, path, "register", "registering");
        }
    }

    @Override
    public int lookup(String subject, Schema schema) {
        Cache<Schema, Integer> ids = subjectCache(subject);
        return idUnder(ids, subject, schema, "/subjects/" + encode(subject), "look up", "looking up");
    }

    /**
     * The id of {@code schema} under {@code subject} from {@code ids}, else from a POST to {@code path} (register or look up),
     * remembered both ways.
     */
    private int idUnder(Cache<Schema, Integer> ids, String subject, Schema schema, String path, String verb, String doing) {
        Integer cached = ids.getIfPresent(schema);
        if (cached != null) {
            return cached;
        }
        JsonNode response = transport.call("POST", path, schemaBody(schema),
                verb + " schema " + schema.getFullName() + " under subject '" + subject + "'", subject, null, null);
        int id = requireId(response, doing + " under subject '" + subject + "'");
        ids.put(schema, id);
        schemasById.asMap().putIfAbsent(id, schema);
        return id;
    }

    @Override
    public RegisteredSchema latest(String subject) {
        RegisteredSchema cached = latestBySubject.getIfPresent(subject);
        if (cached != null) {
            return cached;
        }
        JsonNode response = transport.call("GET", "/subjects/" + encode(subject) + "/versions/latest", null,
                "fetch the latest version of subject '" + subject + "'", subject, "latest", null);
        int id = requireId(response, "the latest version of subject '" + subject + "'");
        Schema schema = parse(response, "the latest version of subject '" + subject + "'");
        RegisteredSchema latest = new RegisteredSchema(subject, response.path("version").asInt(-1), id, schema);
        latestBySubject.put(subject, latest);
        schemasById.asMap().putIfAbsent(id, schema);
        return latest;
    }

    @Override
    public Schema getById(int id) {
        Schema cached = schemasById.getIfPresent(id);
        if (cached != null) {
            return cached;
        }
        SchemaRegistryException invalid = invalidById.getIfPresent(id);
        if (invalid != null) {
            throw new SchemaRegistryException(invalid.getMessage(), invalid.httpStatus(), invalid.errorCode(),
                    invalid.getCause());
        }
        JsonNode response = transport.call("GET", "/schemas/ids/" + id, null, "fetch schema id " + id, null, null, id);
        Schema schema;
        try {
            schema = parse(response, "schema id " + id);
        } catch (SchemaRegistryException e) {
            invalidById.put(id, e);
            throw e;
        }
        schemasById.asMap().putIfAbsent(id, schema);
        return schema;
    }

    /**
     * The registry's subjects ({@code GET /subjects}), not cached; e.g. to check that the URLs,
     * credentials and TLS settings work.
     *
     * @throws SchemaRegistryException if the registry refuses or cannot be reached
     */
    public List<String> subjects() {
        JsonNode response = transport.call("GET", "/subjects", null, "list the subjects", null, null, null);
        List<String> subjects = new ArrayList<>();
        response.forEach(node -> subjects.add(node.asText()));
        return subjects;
    }

    /** Entries in the id cache after pending evictions; for tests of the bound. */
    long cachedIds() {
        schemasById.cleanUp();
        return schemasById.estimatedSize();
    }

    /** Subjects in the registration cache and the largest per-subject entry count; for tests of the bounds. */
    long[] cachedSubjectsAndLargest() {
        idsBySubject.cleanUp();
        long largest = 0;
        for (Cache<Schema, Integer> inner : idsBySubject.asMap().values()) {
            inner.cleanUp();
            largest = Math.max(largest, inner.estimatedSize());
        }
        return new long[]{idsBySubject.estimatedSize(), largest};
    }

    private Cache<Schema, Integer> subjectCache(String subject) {
        return idsBySubject.get(subject, s -> Caffeine.newBuilder().maximumSize(settings.maxSchemasPerSubject).build());
    }

    private static String schemaBody(Schema schema) {
        try {
            return JSON.writeValueAsString(Map.of("schema", schema.toString()));
        } catch (IOException e) {
            throw new IllegalStateException("cannot encode schema as JSON", e);
        }
    }

    private int requireId(JsonNode response, String what) {
        int id = response.path("id").asInt(-1);
        if (!response.path("id").isInt() || id < 0) {
            throw new SchemaRegistryException(
                    "schema registry at " + transport.currentUrl() + " answered " + what + " without a schema id: "
                            + response,
                    200, -1, null);
        }
        return id;
    }

    /**
     * The Avro schema in a registry answer. Anything else is a {@link SchemaRegistryException}
     * (status 200: the registry answered, the content is unusable): a {@code schemaType} other than
     * AVRO, no schema text, or text Avro's parser refuses. The parser throws more than
     * {@link SchemaParseException}: {@code AvroTypeException} for a default of the wrong type,
     * {@link NullPointerException} for JSON that is not a schema, so every runtime
     * exception, and a stack overflow on absurdly nested text, is caught here.
     */
    private Schema parse(JsonNode response, String what) {
        String type = response.path("schemaType").asText("AVRO");
        if (!type.equalsIgnoreCase("AVRO")) {
            throw invalid("says " + what + " is a " + type + " schema, not Avro", null);
        }
        JsonNode text = response.get("schema");
        if (text == null || !text.isTextual()) {
            throw invalid("answered " + what + " without a schema", null);
        }
        try {
            return new Schema.Parser().parse(text.asText());
        } catch (SchemaParseException e) {
            throw invalid("answered " + what + " with no valid Avro schema: " + e.getMessage(), e);
        } catch (RuntimeException | StackOverflowError e) {
            throw invalid("answered " + what + " with no valid Avro schema: " + e, e);
        }
    }

    private SchemaRegistryException invalid(String problem, Throwable cause) {
        return new SchemaRegistryException("schema registry at " + transport.currentUrl() + " " + problem, 200, -1, cause);
    }

    private static String encode(String subject) {
        return URLEncoder.encode(subject, StandardCharsets.UTF_8).replace("+", "%20");
    }
}
