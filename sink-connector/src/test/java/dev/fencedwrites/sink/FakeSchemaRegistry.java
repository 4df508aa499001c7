package dev.fencedwrites.sink;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.Map;
import org.apache.avro.Schema;

/**
 * A Confluent-compatible schema registry on 127.0.0.1 that knows one schema id: answers
 * {@code GET /schemas/ids/{id}} with {@code {"schema": ...}} and every other request with 404
 * {@code {"error_code":40403,...}}.
 */
final class FakeSchemaRegistry implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpServer server;

    private FakeSchemaRegistry(HttpServer server) {
        this.server = server;
    }

    static FakeSchemaRegistry serving(int id, Schema schema) throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        byte[] found = JSON.writeValueAsBytes(Map.of("schema", schema.toString()));
        byte[] notFound = JSON.writeValueAsBytes(Map.of("error_code", 40403, "message", "not found"));
        byte[] subjects = JSON.writeValueAsBytes(java.util.List.of());
        server.createContext("/", exchange -> {
            String path = exchange.getRequestURI().getPath();
            boolean get = exchange.getRequestMethod().equals("GET");
            if (get && path.equals("/subjects")) {
                respond(exchange, 200, subjects);
                return;
            }
            boolean known = get && path.equals("/schemas/ids/" + id);
            respond(exchange, known ? 200 : 404, known ? found : notFound);
        });
        server.start();
        return new FakeSchemaRegistry(server);
    }

    /** The base URL, e.g. {@code http://127.0.0.1:41234}. */
    String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    private static void respond(HttpExchange exchange, int status, byte[] body) throws IOException {
        exchange.getResponseHeaders().set("Content-Type", "application/vnd.schemaregistry.v1+json");
        exchange.sendResponseHeaders(status, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
