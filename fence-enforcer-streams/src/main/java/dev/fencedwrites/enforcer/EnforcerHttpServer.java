package dev.fencedwrites.enforcer;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.BasicAuthenticator;
import com.sun.net.httpserver.HttpContext;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.enforcer.internal.CommittedFences;
import dev.fencedwrites.enforcer.internal.FenceExpiry;
import dev.fencedwrites.enforcer.internal.PendingFences;
import dev.fencedwrites.enforcer.internal.StoredFence;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.function.Predicate;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyQueryMetadata;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.state.HostInfo;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * The enforcer's HTTP endpoints: {@code GET /metrics} (Prometheus text), the probes for
 * Kubernetes and {@code GET /fences/{key}} (the key's fence as JSON; 404 when the key
 * has none; with fence expiry on, {@code floor} and {@code floor_partition} name the partition's expiry floor, the fence
 * of a key without a higher one). {@code GET /health/live} answers 200 while the Kafka Streams client is alive
 * ({@link #isLive}: CREATED, REBALANCING, which includes restoring state stores from their
 * changelogs, or RUNNING) and 503 once it is shutting down or failed; {@code GET /health/ready}
 * (and {@code GET /health}, its older name) answers 200 only while it is RUNNING. Each answers
 * {@code {"state":"REBALANCING","restoring_partitions":3,"restore_remaining_offsets":81234}}
 * (the restore figures of {@link StreamsProgress}). When another instance of the application owns the
 * key's partition, the request is proxied to it (interactive queries through
 * {@code application.server}); {@code served_by} names the instance that answered.
 *
 * <p>{@code /fences/{key}} answers the committed fence of the owning instance: a fence written by the open
 * transaction (exactly_once_v2) or held only in the store's cache (at_least_once) is not answered until Kafka Streams has
 * committed it ({@link CommittedFences}), so an answer never exceeds what the next owner restores, and answers for a key
 * never decrease across a failover. The owner answers 503 instead of a fence while it may be a zombie: after this process
 * was paused (SIGSTOP, GC, a suspended VM) long enough that its consumer group may have given its tasks to another
 * instance, until a commit proves it still owns them or {@code session.timeout.ms} has passed, and while the stream thread
 * of the key's task has not run for half of {@code max.poll.interval.ms} ({@link PauseWatch}).
 */
final class EnforcerHttpServer implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Marks a proxied request, which is answered locally so that a stale routing view cannot loop. */
    private static final String FORWARDED = "X-Fence-Forwarded";

    private final HttpServer server;
    private final FenceEnforcerConfig.HttpCredentials credentials;
    private final HttpClient proxy = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private volatile KafkaStreams streams;
    private volatile HostInfo self;
    private volatile StreamsProgress progress;
    private volatile CommittedFences committed;
    private volatile PauseWatch pauses;

    /**
     * @param credentials what /metrics and /fences/{key} ask for, and what a forwarded /fences/{key} sends; {@code null}:
     *                    nothing (a loopback bind, checked by {@link FenceEnforcerConfig#httpCredentials()})
     */
    EnforcerHttpServer(String host, int port, PrometheusMeterRegistry registry, FenceEnforcerConfig.HttpCredentials credentials)
            throws IOException {
        this.credentials = credentials;
        server = HttpServer.create(new InetSocketAddress(host, port), 0);
        // A cached pool: a slow or half-sent request (or a proxied call) never blocks the probes for others.
        server.setExecutor(Executors.newCachedThreadPool(r -> {
            Thread thread = new Thread(r, "enforcer-http");
            thread.setDaemon(true);
            return thread;
        }));
        protect(server.createContext("/metrics",
                exchange -> respond(exchange, 200, "text/plain; version=0.0.4; charset=utf-8", registry.scrape())));
        server.createContext("/health/live", exchange -> probe(exchange, EnforcerHttpServer::isLive));
        server.createContext("/health/ready", exchange -> probe(exchange, EnforcerHttpServer::isReady));
        // The exact path only: /health/anything-else is a 404, not readiness.
        server.createContext("/health", exchange -> {
            if (exchange.getRequestURI().getPath().equals("/health")) {
                probe(exchange, EnforcerHttpServer::isReady);
            } else {
                respond(exchange, 404, "application/json", "{\"error\":\"probes: /health/live, /health/ready\"}");
            }
        });
        protect(server.createContext("/fences/", this::fence));
    }

    /** HTTP Basic authentication (RFC 7617) on {@code context}, when credentials are set; the probes are never protected. */
    private void protect(HttpContext context) {
        if (credentials == null) {
            return;
        }
        byte[] user = credentials.user().getBytes(StandardCharsets.UTF_8);
        byte[] password = credentials.password().getBytes(StandardCharsets.UTF_8);
        context.setAuthenticator(new BasicAuthenticator("fence-enforcer", StandardCharsets.UTF_8) {
            @Override
            public boolean checkCredentials(String givenUser, String givenPassword) {
                // Both compared in full, in constant time, so the answer's timing says nothing of either.
                boolean userMatches = MessageDigest.isEqual(user, givenUser.getBytes(StandardCharsets.UTF_8));
                boolean passwordMatches = MessageDigest.isEqual(password, givenPassword.getBytes(StandardCharsets.UTF_8));
                return userMatches & passwordMatches;
            }
        });
    }

    /**
     * Liveness: the client is not dead. True in CREATED (starting), REBALANCING (including while
     * it restores state stores from their changelogs, which can take minutes for a large store)
     * and RUNNING; false in PENDING_SHUTDOWN, NOT_RUNNING, PENDING_ERROR and ERROR, from which a
     * Kafka Streams client never returns (KafkaStreams.State's transitions).
     */
    static boolean isLive(KafkaStreams.State state) {
        return state == KafkaStreams.State.CREATED || state == KafkaStreams.State.REBALANCING
                || state == KafkaStreams.State.RUNNING;
    }

    /** Readiness: RUNNING only, every assigned task restored and processing. */
    static boolean isReady(KafkaStreams.State state) {
        return state == KafkaStreams.State.RUNNING;
    }

    private void probe(HttpExchange exchange, Predicate<KafkaStreams.State> healthy) throws IOException {
        KafkaStreams.State state = streams == null ? KafkaStreams.State.CREATED : streams.state();
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("state", state.name());
        StreamsProgress restoring = progress;
        if (restoring != null) {
            body.put("restoring_partitions", restoring.restoringPartitions());
            body.put("restore_remaining_offsets", restoring.remainingOffsets());
        }
        respond(exchange, healthy.test(state) ? 200 : 503, "application/json", JSON.writeValueAsString(body));
    }

    /**
     * Serves queries from {@code streams}; {@code self} is this instance's {@code application.server}; the probes report
     * {@code progress}'s restore figures; {@code committed} tells the committed fences; {@code pauses} tells
     * when this instance must not answer from its stores.
     */
    void attach(KafkaStreams streams, HostInfo self, StreamsProgress progress, CommittedFences committed, PauseWatch pauses) {
        this.committed = committed;
        this.pauses = pauses;
        this.progress = progress;
        this.streams = streams;
        this.self = self;
    }

    private void fence(HttpExchange exchange) throws IOException {
        // Percent-decoded path, not form decoding: '+' stays '+'.
        String key = exchange.getRequestURI().getPath().substring("/fences/".length());
        if (key.isEmpty()) {
            respond(exchange, 400, "application/json", "{\"error\":\"usage: GET /fences/{key}\"}");
            return;
        }
        KafkaStreams running = streams;
        if (running == null) {
            respond(exchange, 503, "application/json", "{\"error\":\"starting\"}");
            return;
        }
        Bytes storeKey = Bytes.wrap(key.getBytes(StandardCharsets.UTF_8));
        KeyQueryMetadata owner;
        try {
            owner = running.queryMetadataForKey(FenceEnforcerTopology.STORE, storeKey, Serdes.Bytes().serializer());
        } catch (RuntimeException e) {
            respond(exchange, 503, "application/json",
                    JSON.writeValueAsString(Map.of("key", key, "error", "not queryable now: " + e.getMessage(),
                            "state", running.state().name())));
            return;
        }
        if (owner == null || owner.equals(KeyQueryMetadata.NOT_AVAILABLE)) {
            respond(exchange, 503, "application/json",
                    JSON.writeValueAsString(Map.of("key", key, "error", "no instance owns this key right now (rebalancing)")));
            return;
        }
        if (!owner.activeHost().equals(self) && exchange.getRequestHeaders().getFirst(FORWARDED) == null) {
            forward(exchange, owner.activeHost(), key);
            return;
        }
        Fence fence;
        Fence floor;
        try {
            fence = readCommitted(running, owner.partition(), storeKey);
            floor = readCommitted(running, owner.partition(), FenceExpiry.FLOOR_KEY);
        } catch (RuntimeException e) {
            respond(exchange, 503, "application/json",
                    JSON.writeValueAsString(Map.of("key", key, "error", "state store not queryable: " + e.getMessage())));
            return;
        }
        // After the read: a pause that began before it is seen here (the answer would come from a possible zombie).
        Optional<String> paused = pauses.refusal(committed.streamThreadSeenNanos(owner.partition()));
        if (paused.isPresent()) {
            respond(exchange, 503, "application/json",
                    JSON.writeValueAsString(Map.of("key", key, "error", paused.get(), "served_by", address(self))));
            return;
        }
        respond(exchange, fence == null ? 404 : 200, "application/json",
                JSON.writeValueAsString(fenceBody(key, fence, floor, owner.partition())));
    }

    /** The answer for {@code key}: its fence (or why there is none), and under fence expiry its partition's floor. */
    private Map<String, Object> fenceBody(String key, Fence fence, Fence floor, int partition) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("key", key);
        if (fence == null) {
            body.put("error", floor == null ? "no fence for this key" : "no fence for this key: never written, or expired");
        } else {
            body.put("token", fence.token());
            body.put("seq", fence.hasSeq() ? fence.seq() : null);
        }
        if (floor != null) {
            // Fence expiry: a key without a higher fence is fenced at its partition's floor.
            body.put("floor", floor.token());
            body.put("floor_partition", partition);
        }
        body.put("served_by", address(self));
        return body;
    }

    /**
     * The committed fence of {@code storeKey} in partition {@code partition}'s store ({@link CommittedFences}): the task's
     * pending keys, the store, then the pending keys again (the processor writes them the other way round).
     *
     * @throws RuntimeException when the store cannot be read, or its task closed during the read
     */
    private Fence readCommitted(KafkaStreams running, int partition, Bytes storeKey) {
        ReadOnlyKeyValueStore<Bytes, StoredFence> store = running.store(StoreQueryParameters
                .fromNameAndType(FenceEnforcerTopology.STORE, QueryableStoreTypes.<Bytes, StoredFence>keyValueStore())
                .withPartition(partition));
        PendingFences pending = committed.pending(partition);
        StoredFence stored = store.get(storeKey);
        return committed.committed(partition, pending, storeKey, stored == null ? null : stored.fence());
    }

    private void forward(HttpExchange exchange, HostInfo owner, String key) throws IOException {
        String host = owner.host().contains(":") && !owner.host().startsWith("[") ? "[" + owner.host() + "]" : owner.host();
        URI target = URI.create("http://" + host + ":" + owner.port() + "/fences/"
                + URLEncoder.encode(key, StandardCharsets.UTF_8).replace("+", "%20"));
        try {
            HttpRequest.Builder request = HttpRequest.newBuilder(target).timeout(Duration.ofSeconds(5))
                    .header(FORWARDED, self.toString());
            if (credentials != null) {
                request.header("Authorization", "Basic " + Base64.getEncoder().encodeToString(
                        (credentials.user() + ":" + credentials.password()).getBytes(StandardCharsets.UTF_8)));
            }
            HttpResponse<String> answer = proxy.send(request.GET().build(), HttpResponse.BodyHandlers.ofString());
            respond(exchange, answer.statusCode(), "application/json", answer.body());
        } catch (IOException e) {
            respond(exchange, 503, "application/json",
                    JSON.writeValueAsString(Map.of("key", key, "error", "the owning instance " + address(owner)
                            + " did not answer (" + e
                            + "); it may be stopping, and another instance takes over its keys after the rebalance")));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            respond(exchange, 503, "application/json", "{\"error\":\"interrupted\"}");
        }
    }

    private static String address(HostInfo host) {
        return host.host() + ":" + host.port();
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
