package dev.fencedwrites.testing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.testing.FakeSchemaRegistry.Answer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;

/** The HTTP fake registry answers as scripted and records what it received. */
class FakeSchemaRegistryTest {
    private final HttpClient http = HttpClient.newHttpClient();

    @Test
    void servingAnswersItsOneSchemaAsAJsonStringAndEverythingElse40403() throws Exception {
        String schema = "{\"type\":\"record\",\"name\":\"R\",\"doc\":\"a \\\"quoted\\\" doc\\nline\",\"fields\":[]}";
        try (FakeSchemaRegistry registry = FakeSchemaRegistry.serving(5, schema)) {
            HttpResponse<String> found = get(registry, "/schemas/ids/5");
            HttpResponse<String> missing = get(registry, "/schemas/ids/6");

            assertThat(found.statusCode()).isEqualTo(200);
            assertThat(found.body()).isEqualTo("{\"schema\":" + FakeSchemaRegistry.jsonString(schema) + "}")
                    .contains("\\\"type\\\":\\\"record\\\"").contains("\\\\\\\"quoted\\\\\\\"").contains("\\\\nline");
            assertThat(missing.statusCode()).isEqualTo(404);
            assertThat(missing.body()).isEqualTo("{\"error_code\":40403,\"message\":\"not found\"}");
            assertThat(get(registry, "/subjects").body()).isEqualTo("[]");
        }
    }

    @Test
    void recordsEachRequestWithItsRawPathAndAuthorization() throws Exception {
        try (FakeSchemaRegistry registry = FakeSchemaRegistry.http(r -> Answer.error(503, 50301, "down \"now\""))) {
            HttpRequest post = HttpRequest.newBuilder(URI.create(registry.url() + "/subjects/a%20b/versions"))
                    .header("Authorization", "Basic eDp5").POST(HttpRequest.BodyPublishers.ofString("{}")).build();
            HttpResponse<String> answer = http.send(post, HttpResponse.BodyHandlers.ofString());

            assertThat(answer.statusCode()).isEqualTo(503);
            assertThat(answer.body()).isEqualTo("{\"error_code\":50301,\"message\":\"down \\\"now\\\"\"}");
            assertThat(registry.received())
                    .containsExactly(new FakeSchemaRegistry.Received("POST", "/subjects/a%20b/versions", "Basic eDp5", "{}"));
            assertThat(registry.count("/subjects/a%20b/versions")).isEqualTo(1);
        }
    }

    @Test
    void jsonStringEscapesQuotesBackslashesAndControlCharacters() {
        assertThat(FakeSchemaRegistry.jsonString("a\"b\\c\nd\te\u0001")).isEqualTo("\"a\\\"b\\\\c\\nd\\te\\u0001\"");
    }

    private HttpResponse<String> get(FakeSchemaRegistry registry, String path) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create(registry.url() + path)).GET().build();
        return http.send(request, HttpResponse.BodyHandlers.ofString());
    }
}
