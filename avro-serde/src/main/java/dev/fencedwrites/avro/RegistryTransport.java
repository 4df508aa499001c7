package dev.fencedwrites.avro;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The HTTP side of {@link RestSchemaRegistryClient}: one JDK {@link HttpClient} with the settings'
 * timeouts and TLS, failover across the registry URLs and retries with exponential backoff, as the
 * client's Javadoc describes. Answers are JSON ({@code application/vnd.schemaregistry.v1+json});
 * a body that is not JSON is read as {@code {"message": body}}. Thread-safe.
 */
final class RegistryTransport {
    private static final String CONTENT_TYPE = "application/vnd.schemaregistry.v1+json";
    static final ObjectMapper JSON = new ObjectMapper();

    private final ClientSettings settings;
    private final HttpClient http;
    /** The index of the URL that last answered, tried first. */
    private final AtomicInteger current = new AtomicInteger();

    RegistryTransport(ClientSettings settings) {
        this.settings = settings;
        HttpClient.Builder builder = HttpClient.newBuilder().connectTimeout(settings.connectTimeout);
        if (settings.sslContext != null) {
            builder.sslContext(settings.sslContext);
        }
        this.http = builder.build();
    }

    /** The registry URLs in failover order (credentials removed). */
    List<URI> urls() {
        return settings.endpoints.stream().map(ClientSettings.Endpoint::uri).toList();
    }

    /** The URL that answered last (the first one before any answer), for messages. */
    URI currentUrl() {
        return urls().get(current.get());
    }

    /**
     * Sends one call with failover and retries; returns the JSON body of a 2xx answer.
     *
     * @throws SchemaRegistryException for a 4xx at once, or when every URL failed on the last try
     */
    JsonNode call(String method, String path, String body, String what, String subject, String version, Integer id) {
        List<ClientSettings.Endpoint> endpoints = settings.endpoints;
        for (int retry = 0;; retry++) {
            List<String> failures = new ArrayList<>();
            int lastStatus = -1;
            int lastCode = -1;
            Throwable lastCause = null;
            int start = current.get();
            for (int i = 0; i < endpoints.size(); i++) {
                int index = (start + i) % endpoints.size();
                ClientSettings.Endpoint endpoint = endpoints.get(index);
                HttpResponse<String> response;
                try {
                    response = http.send(request(endpoint, method, path, body), HttpResponse.BodyHandlers.ofString());
                } catch (IOException e) {
                    failures.add(endpoint + ": " + e);
                    lastStatus = -1;
                    lastCode = -1;
                    lastCause = e;
                    continue;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new SchemaRegistryException("interrupted while trying to " + what, -1, -1, e);
                }
                JsonNode json = json(response.body());
                int status = response.statusCode();
                if (status >= 500) {
                    lastStatus = status;
                    lastCode = json.path("error_code").asInt(-1);
                    lastCause = null;
                    failures.add(endpoint + ": " + describe(status, json, response.body(), subject, version, id));
                    continue;
                }
                current.set(index);
                if (status / 100 == 2) {
                    return json;
                }
                int code = json.path("error_code").asInt(-1);
                throw new SchemaRegistryException(
                        "cannot " + what + ": " + describe(status, json, response.body(), subject, version, id)
                                + " (schema registry at " + endpoint + ")",
                        status, code, null);
            }
            if (retry >= settings.maxRetries) {
                throw new SchemaRegistryException("cannot " + what + ": no schema registry URL answered"
                        + (settings.maxRetries > 0 ? " after " + (retry + 1) + " tries" : "") + " (" + String.join("; ", failures)
                        + ")",
                        lastStatus, lastCode, lastCause);
            }
            try {
                Thread.sleep(Backoff.delayMs(retry, settings.retriesWaitMs, settings.retriesMaxWaitMs));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SchemaRegistryException("interrupted while waiting to retry: " + what, -1, -1, e);
            }
        }
    }

    private HttpRequest request(ClientSettings.Endpoint endpoint, String method, String path, String body) {
        HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create(endpoint.uri() + path))
                .timeout(settings.readTimeout)
                .header("Accept", CONTENT_TYPE + ", application/json");
        if (endpoint.authorization() != null) {
            builder.header("Authorization", endpoint.authorization());
        }
        if (body == null) {
            builder.GET();
        } else {
            builder.header("Content-Type", CONTENT_TYPE).method(method, HttpRequest.BodyPublishers.ofString(body));
        }
        return builder.build();
    }

    private static JsonNode json(String body) {
        try {
            JsonNode node = JSON.readTree(body);
            return node == null ? JSON.createObjectNode() : node;
        } catch (IOException e) {
            Map<String, String> text = new HashMap<>();
            text.put("message", body);
            return JSON.valueToTree(text);
        }
    }

    private static String describe(int status, JsonNode json, String raw, String subject, String version, Integer id) {
        int code = json.path("error_code").asInt(-1);
        String message = json.path("message").asText(raw);
        if (message.length() > 300) {
            message = message.substring(0, 300) + "...";
        }
        return SchemaRegistryException.meaning(status, code, subject, version, id) + " (HTTP " + status
                + (code >= 0 ? ", error_code " + code : "") + (message.isBlank() ? "" : ": " + message) + ")";
    }
}
