package dev.fencedwrites.localstack;

import dev.fencedwrites.services.ChildProcess;
import dev.fencedwrites.services.EtcdCluster;
import dev.fencedwrites.services.KafkaSecurity;
import dev.fencedwrites.services.Service;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.stream.IntStream;

/**
 * Starts the whole pipeline on loopback as real services, on free ports, in one directory: Kafka (KRaft), etcd, a
 * Confluent-compatible schema registry, PostgreSQL, the fence enforcer, and a Connect cluster in distributed mode running
 * the connectors the caller names (the billing ones of {@code ./fence up} and the demo are {@link BillingConnectors}),
 * created through its REST API. Each service runs as its own process and is awaited until it really answers.
 * {@link #close()} stops them in reverse order.
 *
 * <p>By default one of each (one broker, one etcd member, one enforcer, one Connect worker). {@link LocalStackBuilder#cluster()}
 * starts the production shape: 3 brokers, 3 etcd members, 2 enforcer instances, 2 Connect workers. Methods
 * that take an index {@code i} accept {@code 0} in the default stack and {@code 0 .. n-1} in a cluster.
 *
 * <pre>{@code
 * try (LocalStack stack = LocalStack.builder(dir).connectors(BillingConnectors.set(false)).progress(System.err::println).start())
 * {
 *     ... stack.kafkaBootstrap(), stack.postgresUrl() ...
 * }
 * }</pre>
 *
 * <p>Service logs are in {@link #dir()}, one folder per service (per node or instance in a cluster).
 */
public final class LocalStack implements AutoCloseable {
    /** Partitions of the input, accepted, rejected and markers topics. */
    public static final int PARTITIONS = 3;

    private final StackServices services;
    private Thread onExit;

    private LocalStack(Path dir, StackShape shape) {
        this.services = new StackServices(dir, shape);
    }

    /**
     * A stack in {@code dir} (where data and logs go; created if missing) that runs no connector unless told.
     */
    public static LocalStackBuilder builder(Path dir) {
        return new LocalStackBuilder(dir);
    }

    static LocalStack start(Path dir, StackShape shape, Consumer<String> progress) throws Exception {
        Files.createDirectories(dir);
        LocalStack stack = new LocalStack(dir, shape);
        stack.onExit = new Thread(() -> {
            stack.close();
            stopDescendants();
        }, "local-stack-shutdown");
        Runtime.getRuntime().addShutdownHook(stack.onExit);
        try {
            stack.services.start(stack, progress);
        } catch (Exception | Error e) {
            stack.close();
            throw e;
        }
        return stack;
    }

    /**
     * At JVM exit, also stops processes of services still starting (not yet tracked), so a SIGTERM
     * during startup leaves nothing behind: SIGTERM to all, then SIGKILL to any still running 10 s later.
     */
    private static void stopDescendants() {
        ChildProcess.terminateAll(ProcessHandle.current().descendants().toList(), Duration.ofSeconds(10));
    }

    /** Kafka nodes: 3 in a cluster, else 1. */
    public int brokerCount() {
        return services.shape.brokers();
    }

    /** Connect workers in the Connect cluster (2 in a cluster, else 1); the sink runs that many tasks. */
    int connectWorkerCount() {
        return services.shape.connectWorkers();
    }

    /** SIGKILLs Kafka node {@code i} and waits until it has exited; its ports and data are kept. For tests. */
    public void killBroker(int i) throws InterruptedException {
        services.kafka.kill(i);
    }

    /**
     * Starts Kafka node {@code i} again (same node id, ports, data dir); returns once it is registered and no partition is
     * under-replicated. For tests.
     */
    public void restartBroker(int i) throws InterruptedException {
        services.kafka.restart(i);
    }

    /** Kafka node {@code i}'s process id, which a restart changes. For tests. */
    public long brokerPid(int i) {
        return services.kafka.process(i).pid();
    }

    /** SIGKILLs enforcer instance {@code i} and waits until it has exited. For tests. */
    public void killEnforcer(int i) throws InterruptedException {
        services.enforcers.kill(i);
    }

    /** Starts enforcer instance {@code i} again with its state directory and URL; returns once /health/ready answers 200. */
    public void restartEnforcer(int i) throws Exception {
        services.enforcers.restart(i);
    }

    /** Freezes enforcer instance {@code i} with SIGSTOP (a stop-the-world pause: its sockets stay open). For tests. */
    public void pauseEnforcer(int i) {
        services.enforcers.signal(i, "STOP");
    }

    /** Lets enforcer instance {@code i} run again (SIGCONT) after {@link #pauseEnforcer(int)}. For tests. */
    public void resumeEnforcer(int i) {
        services.enforcers.signal(i, "CONT");
    }

    /** Enforcer instance {@code i}'s process id, which a restart changes: for tests that signal it as an operator would. */
    public long enforcerPid(int i) {
        return services.enforcers.pid(i);
    }

    /** Whether enforcer instance {@code i}'s process is running (it may be stopped with SIGSTOP). */
    public boolean enforcerAlive(int i) {
        return services.enforcers.alive(i);
    }

    /** Connect worker {@code i}'s process id, which a restart changes. */
    public long connectPid(int i) {
        return services.connect.pid(i);
    }

    /** Whether Connect worker {@code i}'s process is running. */
    public boolean connectAlive(int i) {
        return services.connect.alive(i);
    }

    /** Kills the first Connect worker: {@link #killConnect(int) killConnect(0)}. For tests. */
    public void killConnect() throws InterruptedException {
        killConnect(0);
    }

    /**
     * Kills Connect worker {@code i} with SIGKILL, as a crash would: no offset commit, no task stop, no leaving its group
     * (the others notice after {@code session.timeout.ms}). For tests.
     */
    public void killConnect(int i) throws InterruptedException {
        services.connect.kill(i);
    }

    /** Restarts the first Connect worker: {@link #restartConnect(int) restartConnect(0)}. For tests. */
    public void restartConnect() throws Exception {
        restartConnect(0);
    }

    /**
     * Starts Connect worker {@code i} again (same directory, REST and metrics ports); returns once every connector's
     * tasks run on the live workers and each live worker runs at least one task when there are enough. For tests.
     */
    public void restartConnect(int i) throws Exception {
        services.connect.restart(i);
    }

    /**
     * Freezes Connect worker {@code i} with SIGSTOP (a stop-the-world pause: its sockets, transactions and row locks stay
     * open) until {@link #resumeConnect(int)}. For tests.
     */
    public void pauseConnect(int i) {
        services.connect.signal(i, "STOP");
    }

    /** Lets Connect worker {@code i} run again (SIGCONT) after {@link #pauseConnect(int)}. For tests. */
    public void resumeConnect(int i) {
        services.connect.signal(i, "CONT");
    }

    /**
     * Freezes etcd with SIGSTOP, as a stalled disk or a paused VM would: its sockets stay open and every request hangs
     * until {@link #resumeEtcd()}. For tests; the default stack only (a cluster's members: {@link #etcdCluster()}).
     *
     * @throws IllegalStateException in a cluster
     */
    public void pauseEtcd() {
        singleEtcd().process().signal("STOP");
    }

    /** Lets etcd run again (SIGCONT) after {@link #pauseEtcd()}. For tests. */
    public void resumeEtcd() {
        singleEtcd().process().signal("CONT");
    }

    /** etcd's process id in the default stack, else the first cluster member's: for signalling it as an operator would. */
    public long etcdPid() {
        return services.etcdCluster != null ? services.etcdCluster.pid(0) : singleEtcd().process().pid();
    }

    private Service singleEtcd() {
        if (services.etcd == null) {
            throw new IllegalStateException("a clustered stack has several etcd members: use etcdCluster()");
        }
        return services.etcd;
    }

    /** The etcd cluster's members (leader(), kill(i), restart(i)), in a cluster; empty in the default stack. */
    public Optional<EtcdCluster> etcdCluster() {
        return Optional.ofNullable(services.etcdCluster);
    }

    /** Where data and logs are. */
    public Path dir() {
        return services.dir;
    }

    /** Kafka's {@code bootstrap.servers}: every node's {@code 127.0.0.1:PORT}, comma-separated. */
    public String kafkaBootstrap() {
        return services.kafka.bootstrap();
    }

    /**
     * The client settings {@code user} (one of {@link StackUsers}) connects with on a secured stack
     * ({@code security.protocol=SASL_SSL}, SCRAM credentials, the trust store); none on a plaintext one.
     */
    public Map<String, String> kafkaClientSettings(String user) {
        return services.security == null ? Map.of() : services.security.client(user);
    }

    /** The broker's users, certificates and client settings, when the stack is {@link LocalStackBuilder#secured()}. */
    public Optional<KafkaSecurity> kafkaSecurity() {
        return Optional.ofNullable(services.security);
    }

    /** etcd's client URLs, {@code http://127.0.0.1:PORT}, comma-separated (one per member). */
    public String etcdEndpoints() {
        return services.etcd != null ? services.etcd.address() : String.join(",", services.etcdCluster.endpoints());
    }

    /** The Confluent-compatible registry's base URL, for {@code schema.registry.url}. */
    public String schemaRegistryUrl() {
        return services.registry.address();
    }

    /** JDBC URL with user and password. */
    public String postgresUrl() {
        return services.postgres.jdbcUrl();
    }

    /** The first Connect worker's REST URL. */
    public String connectUrl() {
        return connectUrls().get(0);
    }

    /** Every Connect worker's REST URL, by index; the same across restarts. */
    public List<String> connectUrls() {
        return services.connect.urls();
    }

    /**
     * The first Connect worker's Prometheus metrics (JMX exporter rules in {@code config/connect-jmx-exporter.yml}), the
     * sink's among them.
     */
    public String connectMetricsUrl() {
        return services.connect.metricsUrl(0);
    }

    /** Every Connect worker's Prometheus metrics URL, by index (each worker reports only the sink tasks it runs). */
    public List<String> connectMetricsUrls() {
        return IntStream.range(0, services.connect.count()).mapToObj(services.connect::metricsUrl).toList();
    }

    /** The first enforcer instance's HTTP base URL ({@code /health}, {@code /metrics}, {@code /fences/KEY}). */
    public String enforcerUrl() {
        return enforcerUrls().get(0);
    }

    /** Every enforcer instance's HTTP base URL, by index; the same across restarts. */
    public List<String> enforcerUrls() {
        return services.enforcers.urls();
    }

    /**
     * KAFKA_BOOTSTRAP, ETCD_ENDPOINTS, SCHEMA_REGISTRY_URL, POSTGRES_URL, CONNECT_URL, CONNECT_METRICS_URL, ENFORCER_URL,
     * then the lists CONNECT_URLS, ENFORCER_URLS and CONNECT_METRICS_URLS (comma-separated, first = CONNECT_URL,
     * ENFORCER_URL, CONNECT_METRICS_URL), in that order.
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
        env.put("CONNECT_URLS", String.join(",", connectUrls()));
        env.put("ENFORCER_URLS", String.join(",", enforcerUrls()));
        env.put("CONNECT_METRICS_URLS", String.join(",", connectMetricsUrls()));
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
        services.close();
    }
}
