package dev.fencedwrites.schemas;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.networknt.schema.Error;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import dev.fencedwrites.demo.BillingSummary;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.apache.avro.Schema;
import org.apache.avro.SchemaNormalization;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The shipped files are well formed; that real output matches them is tested where the output is made. */
class SchemaFilesTest {
    private static final Path DIR = Path.of(System.getProperty("user.dir"));
    private static final SchemaRegistry REGISTRY = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12);

    static Stream<Path> jsonSchemas() throws IOException {
        try (Stream<Path> files = Files.list(DIR.resolve("json"))) {
            return files.filter(f -> f.toString().endsWith(".schema.json")).sorted().toList().stream();
        }
    }

    @ParameterizedTest
    @MethodSource("jsonSchemas")
    void eachJsonSchemaIsValidUnderTheDraft202012MetaSchema(Path file) throws IOException {
        JsonNode schema = new ObjectMapper().readTree(file.toFile());
        List<Error> errors = REGISTRY.getSchema(SchemaLocation.of(SpecificationVersion.DRAFT_2020_12.getDialectId()))
                .validate(schema);
        assertThat(errors).as(file.toString()).isEmpty();
        assertThat(schema.path("$schema").asText()).isEqualTo(SpecificationVersion.DRAFT_2020_12.getDialectId());
        assertThat(schema.path("$id").asText()).endsWith("/" + file.getFileName());
    }

    @Test
    void everyOpenApiResponseNamesASchemaInComponents() throws IOException {
        JsonNode api = new ObjectMapper(new YAMLFactory()).readTree(DIR.resolve("openapi/enforcer-http.yaml").toFile());
        assertThat(api.path("openapi").asText()).startsWith("3.1.");
        List<String> problems = new ArrayList<>();
        api.path("paths").properties().forEach(path -> path.getValue().path("get").path("responses").properties()
                .forEach(status -> {
                    JsonNode response = status.getValue();
                    String where = path.getKey() + " " + status.getKey();
                    if (response.has("$ref")) {
                        response = resolve(api, response.get("$ref").asText(), where, problems);
                    }
                    response.path("content").properties().forEach(media -> resolve(api,
                            media.getValue().path("schema").path("$ref").asText(""), where + " " + media.getKey(), problems));
                }));
        assertThat(problems).isEmpty();
        assertThat(api.path("paths").properties()).extracting(e -> e.getKey())
                .containsExactlyInAnyOrder("/metrics", "/health/live", "/health/ready", "/health", "/fences/{key}", "/fences/",
                        "/health/{other}");
    }

    @Test
    void billingSummaryClassIsTheAvscFile() throws IOException {
        Schema file = new Schema.Parser().parse(DIR.resolve("avro/BillingSummary.avsc").toFile());
        Schema generated = BillingSummary.getClassSchema();
        // Parsing Canonical Form (Avro specification): the class adds only avro.java.string properties.
        assertThat(SchemaNormalization.toParsingForm(generated)).isEqualTo(SchemaNormalization.toParsingForm(file));
        assertThat(generated.getFields()).extracting(Schema.Field::doc)
                .containsExactlyElementsOf(file.getFields().stream().map(Schema.Field::doc).toList());
        assertThat(file.getFullName()).isEqualTo("dev.fencedwrites.demo.BillingSummary");
    }

    @Test
    void eachFileIsOnTheClassPath() {
        for (String file : List.of("avro/BillingSummary.avsc", "openapi/enforcer-http.yaml", "json/fence-rejected.schema.json",
                "json/fence-inspect.schema.json", "json/fence-verify.schema.json")) {
            assertThat(getClass().getClassLoader().getResource("dev/fencedwrites/schemas/" + file)).as(file).isNotNull();
        }
    }

    private static JsonNode resolve(JsonNode api, String ref, String where, List<String> problems) {
        JsonNode target = ref.startsWith("#/components/") ? api.at(ref.substring(1)) : MissingNode.getInstance();
        if (target.isMissingNode()) {
            problems.add(where + ": '" + ref + "' is not a $ref into #/components/");
        }
        return target;
    }
}
