package dev.fencedwrites.enforcer;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.fencedwrites.schemas.Fence;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Executors;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * The enforcer's HTTP endpoints: {@code GET /metrics} (Prometheus text), {@code GET /health}
 * (200 only while Kafka Streams is RUNNING, else 503) and {@code GET /fences/{key}} (the key's
 * fence as JSON from this instance's state store through interactive queries; 404 when unknown).
 */
final class EnforcerHttpServer implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpServer server;

    EnforcerHttpServer(String host, int port, KafkaStreams streams, PrometheusMeterRegistry registry) throws IOException {
        server = HttpServer.create(new InetSocketAddress(host, port), 0);
        server.setExecutor(Executors.newFixedThreadPool(2, r -> {
            Thread thread = new Thread(r, "enforcer-http");
            thread.setDaemon(true);
            return thread;
        }));
        server.createContext("/metrics", exchange -> respond(exchange, 200, "text/plain; version=0.0.4; charset=utf-8", registry.scrape()));
        server.createContext("/health", exchange -> {
            KafkaStreams.State state = streams.state();
            int status = state == KafkaStreams.State.RUNNING ? 200 : 503;
            respond(exchange, status, "application/json", JSON.writeValueAsString(Map.of("state", state.name())));
        });
        server.createContext("/fences/", exchange -> fence(exchange, streams));
    }

    private static void fence(HttpExchange exchange, KafkaStreams streams) throws IOException {
        // Percent-decoded path, not form decoding: '+' stays '+'.
        String key = exchange.getRequestURI().getPath().substring("/fences/".length());
        if (key.isEmpty()) {
            respond(exchange, 400, "application/json", "{\"error\":\"usage: GET /fences/{key}\"}");
            return;
        }
        Fence fence;
        try {
            ReadOnlyKeyValueStore<Bytes, Fence> store = streams.store(
                    StoreQueryParameters.fromNameAndType(FenceEnforcerTopology.STORE, QueryableStoreTypes.keyValueStore()));
            fence = store.get(Bytes.wrap(key.getBytes(StandardCharsets.UTF_8)));
        } catch (RuntimeException e) {
            respond(exchange, 503, "application/json", JSON.writeValueAsString(Map.of("error", "state store not queryable: " + e.getMessage())));
            return;
        }
        if (fence == null) {
            respond(exchange, 404, "application/json", JSON.writeValueAsString(Map.of("key", key, "error", "no fence for this key")));
            return;
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("key", key);
        body.put("token", fence.token());
        body.put("seq", fence.hasSeq() ? fence.seq() : null);
        respond(exchange, 200, "application/json", JSON.writeValueAsString(body));
    }

    private static void respond(HttpExchange exchange, int status, String contentType, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", contentType);
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }

    void start() {
        server.start();
    }

    int port() {
        return server.getAddress().getPort();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
