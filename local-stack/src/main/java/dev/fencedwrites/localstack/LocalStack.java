package dev.fencedwrites.localstack;

import dev.fencedwrites.services.ChildProcess;
import dev.fencedwrites.services.ConnectWorker;
import dev.fencedwrites.services.EnforcerProcess;
import dev.fencedwrites.services.EtcdNode;
import dev.fencedwrites.services.FreePorts;
import dev.fencedwrites.services.KafkaBroker;
import dev.fencedwrites.services.KafkaSecurity;
import dev.fencedwrites.services.Log4j2Config;
import dev.fencedwrites.services.PostgresServer;
import dev.fencedwrites.services.SchemaRegistryServer;
import dev.fencedwrites.services.Service;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Starts the whole pipeline on loopback as real services, on free ports, in one directory: a Kafka
 * broker (KRaft), etcd, a Confluent-compatible schema registry, PostgreSQL, the fence enforcer,
 * and a Connect worker running the connectors the caller names (the billing ones of {@code ./fence up}
 * and the demo are {@link BillingConnectors}). Each service runs as its own process and is awaited
 * until it really answers. {@link #close()} stops them in reverse order.
 *
 * <pre>{@code
 * try (LocalStack stack = LocalStack.builder(dir).connectors(BillingConnectors.set(false)).progress(System.err::println).start())
 * {
 *     ... stack.kafkaBootstrap(), stack.postgresUrl() ...
 * }
 * }</pre>
 *
 * <p>Service logs are in {@link #dir()}, one folder per service.
 */
public final class LocalStack implements AutoCloseable {
    /** Partitions of the input, accepted, rejected and markers topics. */
    public static final int PARTITIONS = 3;

    private final Path dir;
    private Thread onExit;
    private final Deque<AutoCloseable> started = new ConcurrentLinkedDeque<>();
    private final List<Connector> connectors;
    private final boolean secured;
    private KafkaSecurity security;
    private Service kafka;
    private Service etcd;
    private Service registry;
    private PostgresServer postgres;
    private Service enforcer;
    private Service connect;
    private Runnable restartConnect;
    private ConnectWorker.MetricsAgent connectMetrics;

    private LocalStack(Path dir, List<Connector> connectors, boolean secured) {
        this.dir = dir;
        this.connectors = connectors;
        this.secured = secured;
    }

    /**
     * A stack in {@code dir} (where data and logs go; created if missing) that runs no connector unless told.
     */
    public static LocalStackBuilder builder(Path dir) {
        return new LocalStackBuilder(dir);
    }

    static LocalStack start(Path dir, List<Connector> connectors, boolean secured, Consumer<String> progress)
            throws Exception {
        Files.createDirectories(dir);
        LocalStack stack = new LocalStack(dir, connectors, secured);
        stack.onExit = new Thread(() -> {
            stack.close();
            stopDescendants();
        }, "local-stack-shutdown");
        Runtime.getRuntime().addShutdownHook(stack.onExit);
        try {
            stack.startAll(progress);
        } catch (Exception | Error e) {
            stack.close();
            throw e;
        }
        return stack;
    }

    private void startAll(Consumer<String> progress) throws Exception {
        Properties locations = StackLocations.load();
        Path log4j2 = Log4j2Config.write(dir.resolve("log4j2.properties"), "INFO");
        security = secured ? KafkaSecurity.create(dir.resolve("tls"), StackUsers.ALL) : null;
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            Future<Service> etcdStart = pool.submit(timed(progress, "etcd", () -> EtcdNode.start(dir.resolve("etcd"))));
            Future<PostgresServer> pgStart = pool
                    .submit(timed(progress, "PostgreSQL", () -> PostgresServer.start(dir.resolve("postgres"))));
            Future<Service> registryStart = pool.submit(timed(progress, "schema registry",
                    () -> SchemaRegistryServer.start(dir.resolve("schema-registry"))));
            Future<Service> kafkaStart = pool
                    .submit(timed(progress, "Kafka broker", () -> KafkaBroker.start(dir.resolve("kafka"), log4j2, security)));
            etcd = await(etcdStart);
            postgres = await(pgStart);
            registry = await(registryStart);
            kafka = await(kafkaStart);
            StackKafka.prepare(kafka.address(), security, PARTITIONS, connectorConfigs());
            Map<String, String> enforcerSettings = new LinkedHashMap<>(
                    StackKafka.prefixed("streams.", kafkaClientSettings(StackUsers.ENFORCER)));
            enforcerSettings.put("etcd.endpoints", etcd.address());
            Future<Service> enforcerStart = pool.submit(timed(progress, "fence enforcer",
                    () -> EnforcerProcess.start(dir.resolve("enforcer"), log4j2, kafka.address(), enforcerSettings)));
            connectMetrics = new ConnectWorker.MetricsAgent(Path.of(locations.getProperty("jmx.exporter.agent")),
                    Path.of(locations.getProperty("jmx.exporter.config")).normalize(), FreePorts.pick());
            Callable<Service> startConnect = () -> ConnectWorker.start(dir.resolve("connect"), log4j2, kafka.address(),
                    Path.of(locations.getProperty("connect.plugin.path")), connectorConfigs(), connectMetrics,
                    kafkaClientSettings(StackUsers.CONNECT));
            restartConnect = () -> {
                try {
                    connect = startConnect.call();
                    started.push(connect);
                } catch (Exception e) {
                    throw new IllegalStateException("could not restart the Connect worker: " + e.getMessage(), e);
                }
            };
            Future<Service> connectStart = pool.submit(timed(progress, "Connect worker + sink", startConnect));
            enforcer = await(enforcerStart);
            connect = await(connectStart);
        } finally {
            pool.shutdownNow();
            pool.awaitTermination(30, TimeUnit.SECONDS);
        }
    }

    private static <T> T await(Future<T> future) throws Exception {
        try {
            return future.get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception cause) {
                throw cause;
            }
            throw e;
        }
    }

    private <T extends AutoCloseable> Callable<T> timed(Consumer<String> progress, String name, Callable<T> start) {
        return () -> {
            long begin = System.nanoTime();
            progress.accept("starting " + name + " ...");
            T service = start.call();
            started.push(service);
            progress.accept(String.format("%s ready in %.1f s", name, (System.nanoTime() - begin) / 1e9));
            return service;
        };
    }

    private Map<String, Map<String, String>> connectorConfigs() {
        Map<String, Map<String, String>> configs = new LinkedHashMap<>();
        for (Connector connector : connectors) {
            configs.put(connector.name(), new LinkedHashMap<>(connector.config().apply(this)));
        }
        return configs;
    }

    /**
     * At JVM exit, also stops processes of services still starting (not yet tracked), so a SIGTERM
     * during startup leaves nothing behind: SIGTERM to all, then SIGKILL to any still running 10 s later.
     */
    private static void stopDescendants() {
        List<ProcessHandle> children = ProcessHandle.current().descendants().toList();
        children.forEach(ProcessHandle::destroy);
        children.forEach(child -> ChildProcess.terminate(child, Duration.ofSeconds(10)));
    }

    /** Kills the Connect worker with SIGKILL, as a crash would: no offset commit, no task stop. For tests. */
    public synchronized void killConnect() throws InterruptedException {
        connect.process().signal("KILL");
        connect.process().waitFor(Duration.ofSeconds(30));
    }

    /** Starts the Connect worker again with the same directory and connectors; returns when its tasks run. For tests. */
    public synchronized void restartConnect() {
        restartConnect.run();
    }

    /**
     * Freezes etcd with SIGSTOP, as a stalled disk or a paused VM would: its sockets stay open and
     * every request hangs until {@link #resumeEtcd()}. For tests.
     */
    public synchronized void pauseEtcd() {
        etcd.process().signal("STOP");
    }

    /** Lets etcd run again (SIGCONT) after {@link #pauseEtcd()}. For tests. */
    public synchronized void resumeEtcd() {
        etcd.process().signal("CONT");
    }

    /** Where data and logs are. */
    public Path dir() {
        return dir;
    }

    /** Kafka's {@code bootstrap.servers}: {@code 127.0.0.1:PORT}. */
    public String kafkaBootstrap() {
        return kafka.address();
    }

    /**
     * The client settings {@code user} (one of {@link StackUsers}) connects with on a secured stack
     * ({@code security.protocol=SASL_SSL}, SCRAM credentials, the trust store); none on a plaintext one.
     */
    public Map<String, String> kafkaClientSettings(String user) {
        return security == null ? Map.of() : security.client(user);
    }

    /** The broker's users, certificates and client settings, when the stack is {@link LocalStackBuilder#secured()}. */
    public Optional<KafkaSecurity> kafkaSecurity() {
        return Optional.ofNullable(security);
    }

    /** etcd's client URL, {@code http://127.0.0.1:PORT}. */
    public String etcdEndpoints() {
        return etcd.address();
    }

    /** The Confluent-compatible registry's base URL, for {@code schema.registry.url}. */
    public String schemaRegistryUrl() {
        return registry.address();
    }

    /** JDBC URL with user and password. */
    public String postgresUrl() {
        return postgres.jdbcUrl();
    }

    /** The Connect worker's REST URL. */
    public String connectUrl() {
        return connect.address();
    }

    /**
     * The Connect worker's Prometheus metrics (JMX exporter rules in {@code config/connect-jmx-exporter.yml}), the sink's among
     * them.
     */
    public String connectMetricsUrl() {
        return connectMetrics.url();
    }

    /** The enforcer's HTTP base URL ({@code /health}, {@code /metrics}, {@code /fences/KEY}). */
    public String enforcerUrl() {
        return enforcer.address();
    }

    /**
     * KAFKA_BOOTSTRAP, ETCD_ENDPOINTS, SCHEMA_REGISTRY_URL, POSTGRES_URL, CONNECT_URL, CONNECT_METRICS_URL, ENFORCER_URL, in that
     * order.
     */
    public Map<String, String> env() {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("KAFKA_BOOTSTRAP", kafkaBootstrap());
        env.put("ETCD_ENDPOINTS", etcdEndpoints());
        env.put("SCHEMA_REGISTRY_URL", schemaRegistryUrl());
        env.put("POSTGRES_URL", postgresUrl());
        env.put("CONNECT_URL", connectUrl());
        env.put("CONNECT_METRICS_URL", connectMetricsUrl());
        env.put("ENFORCER_URL", enforcerUrl());
        return env;
    }

    /** Stops every started service, the last started first. */
    @Override
    public synchronized void close() {
        if (onExit != null && Thread.currentThread() != onExit) {
            try {
                Runtime.getRuntime().removeShutdownHook(onExit);
            } catch (IllegalStateException e) {
                // the JVM is already shutting down; the hook runs anyway
            }
            onExit = null;
        }
        while (!started.isEmpty()) {
            try {
                started.pop().close();
            } catch (Exception e) {
                System.err.println("local-stack: error while stopping a service: " + e);
            }
        }
    }
}
