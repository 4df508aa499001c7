package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The enforcer's HTTP server with http.auth.basic.*: /metrics and /fences/{key} ask for the credentials, probes never. */
class EnforcerHttpAuthTest {
    private static final HttpClient CLIENT = HttpClient.newHttpClient();
    private EnforcerHttpServer server;
    private String base;

    @BeforeEach
    void start() throws Exception {
        server = new EnforcerHttpServer("127.0.0.1", 0, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT),
                new FenceEnforcerConfig.HttpCredentials("prometheus", "s3cret"));
        server.start();
        base = "http://127.0.0.1:" + server.port();
    }

    @AfterEach
    void stop() {
        server.close();
    }

    @ParameterizedTest
    @ValueSource(strings = {"/metrics", "/fences/acct-1"})
    void protectedEndpointsAnswer401WithoutOrWithWrongCredentials(String path) throws Exception {
        assertThat(get(path, null).statusCode()).isEqualTo(401);
        assertThat(get(path, null).headers().firstValue("WWW-Authenticate")).hasValueSatisfying(
                challenge -> assertThat(challenge).startsWith("Basic realm=\"fence-enforcer\""));
        assertThat(get(path, "prometheus:wrong").statusCode()).isEqualTo(401);
        assertThat(get(path, "prometheu:s3cret").statusCode()).isEqualTo(401);
    }

    @Test
    void metricsAnswerWithTheCredentials() throws Exception {
        assertThat(get("/metrics", "prometheus:s3cret").statusCode()).isEqualTo(200);
    }

    @ParameterizedTest
    @ValueSource(strings = {"/health/live", "/health/ready", "/health"})
    void probesNeverAskForCredentials(String path) throws Exception {
        assertThat(get(path, null).statusCode()).isNotEqualTo(401);
    }

    private HttpResponse<String> get(String path, String userAndPassword) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path));
        if (userAndPassword != null) {
            request.header("Authorization",
                    "Basic " + Base64.getEncoder().encodeToString(userAndPassword.getBytes(StandardCharsets.UTF_8)));
        }
        return CLIENT.send(request.GET().build(), HttpResponse.BodyHandlers.ofString());
    }
}
