package dev.fencedwrites.testing;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SchemaRegistryConfig;
import com.networknt.schema.dialect.Dialect;
import com.networknt.schema.dialect.Dialects;
import com.networknt.schema.keyword.NonValidationKeyword;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Real output checked against the files of the {@code schemas} module (in its jar under {@code dev/fencedwrites/schemas/}):
 * a CLI's {@code --json} output against its JSON Schema (draft 2020-12, formats asserted), an enforcer's HTTP answer
 * against the OpenAPI 3.1 description {@code openapi/enforcer-http.yaml} (path, status, media type and body).
 *
 * <p>OpenAPI 3.1's schema objects are JSON Schema 2020-12 (<a href="https://spec.openapis.org/oas/v3.1.0#schema-object">the
 * specification's Schema Object</a>), so a response body is validated by the same validator, against a schema made of the
 * response's {@code $ref} and the document's {@code components}.
 */
public final class ShippedSchemas {
    /** {@code fence rejected --json}, one object per line. */
    public static final String REJECTED = "json/fence-rejected.schema.json";
    /** {@code fence inspect KEY --json}. */
    public static final String INSPECT = "json/fence-inspect.schema.json";
    /** {@code fence verify --json}, and a chaos run's {@code verify.json}. */
    public static final String VERIFY = "json/fence-verify.schema.json";
    /** The enforcer's HTTP API. */
    public static final String ENFORCER_HTTP = "openapi/enforcer-http.yaml";

    private static final String ROOT = "dev/fencedwrites/schemas/";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    /**
     * Draft 2020-12 with formats asserted, OpenAPI's {@code components} as a known keyword, and every other unknown keyword
     * refused: a misspelt keyword (or a YAML flow mapping split at a comma) would otherwise be ignored.
     */
    private static final SchemaRegistry REGISTRY = SchemaRegistry.withDefaultDialect(
            Dialect.builder(Dialects.getDraft202012()).keyword(new NonValidationKeyword("components"))
                    .unknownKeywordFactory((keyword, context) -> {
                        throw new IllegalArgumentException("unknown JSON Schema keyword '" + keyword + "'");
                    }).build(),
            builder -> builder.schemaRegistryConfig(SchemaRegistryConfig.builder().formatAssertionsEnabled(true).build()));

    private ShippedSchemas() {
    }

    /** A shipped file, parsed (JSON, or YAML for {@code .yaml}); {@code file} is relative to the schemas' root. */
    public static JsonNode file(String file) {
        try (InputStream in = ShippedSchemas.class.getClassLoader().getResourceAsStream(ROOT + file)) {
            assertThat(in).as("%s%s on the class path (the schemas module)", ROOT, file).isNotNull();
            return (file.endsWith(".yaml") ? YAML : JSON).readTree(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** What is wrong with {@code json} against the JSON Schema {@code schemaFile}; empty when it matches. */
    public static List<String> problems(String schemaFile, String json) {
        return problems(REGISTRY.getSchema(file(schemaFile)), parse(json));
    }

    /** Fails, naming each problem and the output, unless {@code json} matches the JSON Schema {@code schemaFile}. */
    public static void assertMatches(String schemaFile, String json) {
        assertThat(problems(schemaFile, json)).as("%s against %s", json, schemaFile).isEmpty();
    }

    /** Fails unless the enforcer's answer {@code response} is one {@code enforcer-http.yaml} describes. */
    public static void assertEnforcerAnswer(HttpResponse<String> response) {
        assertThat(response.request().method()).as("the description has GET operations only").isEqualTo("GET");
        String contentType = response.headers().firstValue("Content-Type").orElse(null);
        List<String> problems = enforcerAnswerProblems(response.request().uri().getPath(), response.statusCode(), contentType,
                response.body());
        assertThat(problems).as("%s %s answered %d %s: %s", response.request().method(), response.request().uri(),
                response.statusCode(), contentType, response.body()).isEmpty();
    }

    /**
     * What is wrong with a GET of {@code path} (percent-decoded) answered {@code status}, {@code contentType} and {@code body}
     * against {@code enforcer-http.yaml}; empty when the description has it.
     */
    public static List<String> enforcerAnswerProblems(String path, int status, String contentType, String body) {
        JsonNode api = file(ENFORCER_HTTP);
        JsonNode operation = operation(api, path);
        if (operation == null) {
            return List.of("no GET operation for the path " + path);
        }
        JsonNode answer = operation.path("responses").path(Integer.toString(status));
        if (answer.isMissingNode()) {
            return List.of("status " + status + " is not described for " + path);
        }
        if (answer.has("$ref")) {
            answer = api.at(answer.get("$ref").asText().substring(1));
        }
        if (!answer.has("content")) {
            return body == null || body.isEmpty() ? List.of() : List.of("a body where the description has none");
        }
        String mediaType = contentType == null ? "" : contentType.split(";")[0].trim();
        JsonNode content = answer.path("content").path(mediaType);
        if (content.isMissingNode()) {
            return List.of("media type '" + contentType + "' is not described; described: " + answer.path("content").properties()
                    .stream().map(Map.Entry::getKey).toList());
        }
        ObjectNode schema = JSON.createObjectNode();
        schema.set("$ref", content.path("schema").path("$ref"));
        schema.set("components", api.path("components"));
        JsonNode instance = mediaType.equals("application/json") ? parse(body) : TextNode.valueOf(body);
        return problems(REGISTRY.getSchema(schema), instance);
    }

    /** The GET operation whose path template matches {@code path}: an exact path first, then templates in order. */
    private static JsonNode operation(JsonNode api, String path) {
        JsonNode paths = api.path("paths");
        if (paths.has(path)) {
            return paths.get(path).get("get");
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = paths.fields(); it.hasNext();) {
            Map.Entry<String, JsonNode> entry = it.next();
            // A parameter matches the rest of the path: a key may hold '/'.
            String regex = Pattern.quote(entry.getKey()).replaceAll("\\{[^}]+}", "\\\\E.+\\\\Q");
            if (path.matches(regex)) {
                return entry.getValue().get("get");
            }
        }
        return null;
    }

    private static List<String> problems(Schema schema, JsonNode instance) {
        List<String> problems = new ArrayList<>();
        for (Error error : schema.validate(instance)) {
            problems.add(error.getInstanceLocation() + ": " + error.getMessage());
        }
        return problems;
    }

    private static JsonNode parse(String json) {
        try {
            return JSON.readerFor(JsonNode.class).with(DeserializationFeature.FAIL_ON_TRAILING_TOKENS).readValue(json);
        } catch (IOException e) {
            throw new AssertionError("not JSON: " + json, e);
        }
    }
}
