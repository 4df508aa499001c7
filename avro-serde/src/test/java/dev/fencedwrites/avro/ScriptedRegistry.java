package dev.fencedwrites.avro;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsParameters;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import javax.net.ssl.SSLContext;

/**
 * An HTTP(S) server on 127.0.0.1 answering each request as a test's function says, recording what
 * it received; for transport behaviours a real registry cannot be made to show on demand.
 */
final class ScriptedRegistry implements AutoCloseable {
    /** A request as received. */
    record Received(String method, String path, String authorization, String body) {
    }

    /** An answer: status and JSON body. */
    record Answer(int status, String body) {
        static Answer ok(String body) {
            return new Answer(200, body);
        }

        static Answer error(int status, int errorCode, String message) {
            return new Answer(status, "{\"error_code\":" + errorCode + ",\"message\":\"" + message + "\"}");
        }
    }

    private final HttpServer server;
    private final String scheme;
    final List<Received> received = new CopyOnWriteArrayList<>();

    private ScriptedRegistry(HttpServer server, String scheme, Function<Received, Answer> script) {
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

    static ScriptedRegistry http(Function<Received, Answer> script) throws IOException {
        return new ScriptedRegistry(HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0), "http", script);
    }

    /** An HTTPS server with {@code context}'s certificate; with {@code needClientAuth} it demands a client certificate. */
    static ScriptedRegistry https(SSLContext context, boolean needClientAuth, Function<Received, Answer> script) throws IOException {
        HttpsServer server = HttpsServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.setHttpsConfigurator(new HttpsConfigurator(context) {
            @Override
            public void configure(HttpsParameters params) {
                javax.net.ssl.SSLParameters ssl = context.getDefaultSSLParameters();
                ssl.setNeedClientAuth(needClientAuth);
                params.setSSLParameters(ssl);
            }
        });
        return new ScriptedRegistry(server, "https", script);
    }

    /** The base URL, e.g. {@code http://127.0.0.1:41234}. */
    String url() {
        return scheme + "://127.0.0.1:" + server.getAddress().getPort();
    }

    long count(String path) {
        return received.stream().filter(r -> r.path().equals(path)).count();
    }

    private static void respond(HttpExchange exchange, Answer answer) throws IOException {
        byte[] body = answer.body().getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/vnd.schemaregistry.v1+json");
        exchange.sendResponseHeaders(answer.status(), body.length == 0 ? -1 : body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
