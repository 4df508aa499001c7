package dev.fencedwrites.testing;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsParameters;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

/**
 * A schema registry speaking the Confluent REST API's subset the project's clients use, over HTTP or
 * HTTPS on 127.0.0.1, for tests: each request is answered as a test's script says (status and raw
 * JSON body, including the broken answers no real registry gives on demand), and every request is
 * recorded. {@link #serving(int, String)} scripts the common case of a registry that knows one schema.
 *
 * <p>It speaks raw JSON on purpose: test-support sits below the Avro module, so the fake cannot use
 * the project's own client types. For an in-memory registry client without HTTP, use avro-serde's
 * {@code InMemorySchemaRegistryClient}. Close it to stop the server.
 */
public final class FakeSchemaRegistry implements AutoCloseable {
    /** A request as received: method, raw path (still percent-encoded), {@code Authorization} header or null, body. */
    public record Received(String method, String path, String authorization, String body) {
    }

    /** An answer: HTTP status and JSON body (an empty body is sent as none). */
    public record Answer(int status, String body) {
        /** A 200 answer with {@code body}. */
        public static Answer ok(String body) {
            return new Answer(200, body);
        }

        /** An error in the registry's shape: {@code {"error_code": errorCode, "message": message}}. */
        public static Answer error(int status, int errorCode, String message) {
            return new Answer(status, "{\"error_code\":" + errorCode + ",\"message\":" + jsonString(message) + "}");
        }
    }

    private final HttpServer server;
    private final String scheme;
    private final List<Received> received = new CopyOnWriteArrayList<>();

    private FakeSchemaRegistry(HttpServer server, String scheme, Function<Received, Answer> script) {
        this.server = server;
        this.scheme = scheme;
        server.createContext("/", exchange -> {
            Received request = new Received(exchange.getRequestMethod(), exchange.getRequestURI().getRawPath(),
                    exchange.getRequestHeaders().getFirst("Authorization"),
                    new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
            received.add(request);
            respond(exchange, script.apply(request));
        });
        server.start();
    }

    /** An HTTP registry on an ephemeral port answering each request with {@code script}'s answer. */
    public static FakeSchemaRegistry http(Function<Received, Answer> script) {
        try {
            return new FakeSchemaRegistry(HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0), "http", script);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open a port on 127.0.0.1 for the fake schema registry", e);
        }
    }

    /**
     * An HTTPS registry with {@code context}'s certificate; with {@code needClientAuth} the TLS handshake
     * demands a client certificate.
     */
    public static FakeSchemaRegistry https(SSLContext context, boolean needClientAuth, Function<Received, Answer> script) {
        try {
            HttpsServer server = HttpsServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
            server.setHttpsConfigurator(new HttpsConfigurator(context) {
                @Override
                public void configure(HttpsParameters params) {
                    SSLParameters ssl = context.getDefaultSSLParameters();
                    ssl.setNeedClientAuth(needClientAuth);
                    params.setSSLParameters(ssl);
                }
            });
            return new FakeSchemaRegistry(server, "https", script);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open a port on 127.0.0.1 for the fake schema registry", e);
        }
    }

    /**
     * A registry that knows one schema: {@code GET /schemas/ids/{id}} answers {@code {"schema": schemaJson}},
     * {@code GET /subjects} answers {@code []}, and every other request 404 with error code 40403.
     *
     * @param schemaJson the schema's text (an Avro schema's {@code toString()})
     */
    public static FakeSchemaRegistry serving(int id, String schemaJson) {
        String found = "{\"schema\":" + jsonString(schemaJson) + "}";
        return http(request -> {
            boolean get = request.method().equals("GET");
            if (get && request.path().equals("/subjects")) {
                return Answer.ok("[]");
            }
            if (get && request.path().equals("/schemas/ids/" + id)) {
                return Answer.ok(found);
            }
            return Answer.error(404, 40403, "not found");
        });
    }

    /** The base URL, e.g. {@code http://127.0.0.1:41234}. */
    public String url() {
        return scheme + "://127.0.0.1:" + server.getAddress().getPort();
    }

    /** Every request received so far, in order of arrival. */
    public List<Received> received() {
        return List.copyOf(received);
    }

    /** How many requests had the raw path {@code path}. */
    public long count(String path) {
        return received.stream().filter(r -> r.path().equals(path)).count();
    }

    /** {@code text} as a JSON string literal, quotes included. */
    public static String jsonString(String text) {
        StringBuilder json = new StringBuilder(text.length() + 2).append('"');
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"' -> json.append("\\\"");
                case '\\' -> json.append("\\\\");
                case '\n' -> json.append("\\n");
                case '\r' -> json.append("\\r");
                case '\t' -> json.append("\\t");
                default -> {
                    if (c < 0x20) {
                        json.append(String.format("\\u%04x", (int) c));
                    } else {
                        json.append(c);
                    }
                }
            }
        }
        return json.append('"').toString();
    }

    private static void respond(HttpExchange exchange, Answer answer) throws IOException {
        byte[] body = answer.body().getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/vnd.schemaregistry.v1+json");
        exchange.sendResponseHeaders(answer.status(), body.length == 0 ? -1 : body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }

    /** Stops the server at once. */
    @Override
    public void close() {
        server.stop(0);
    }
}
