package dev.fencedwrites.localstack;

import dev.fencedwrites.services.ConnectWorker;
import dev.fencedwrites.services.EtcdCluster;
import dev.fencedwrites.services.EtcdNode;
import dev.fencedwrites.services.KafkaCluster;
import dev.fencedwrites.services.KafkaSecurity;
import dev.fencedwrites.services.Log4j2Config;
import dev.fencedwrites.services.PostgresServer;
import dev.fencedwrites.services.SchemaRegistryServer;
import dev.fencedwrites.services.Service;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
 * A {@link LocalStack}'s services and the order they start in: etcd, PostgreSQL, the registry and Kafka together; then
 * the pipeline's topics (and ACLs); then the enforcers and the Connect workers together; then the connectors through
 * Connect's REST API. What started is closed in reverse order.
 */
final class StackServices implements AutoCloseable {
    final Deque<AutoCloseable> started = new ConcurrentLinkedDeque<>();
    final StackShape shape;
    final Path dir;
    KafkaSecurity security;
    KafkaCluster kafka;
    Service etcd;
    EtcdCluster etcdCluster;
    Service registry;
    PostgresServer postgres;
    StackEnforcers enforcers;
    StackConnect connect;

    StackServices(Path dir, StackShape shape) {
        this.dir = dir;
        this.shape = shape;
    }

    void start(LocalStack stack, Consumer<String> progress) throws Exception {
        long begin = System.nanoTime();
        Properties locations = StackLocations.load();
        Path log4j2 = Log4j2Config.write(dir.resolve("log4j2.properties"), "INFO");
        security = shape.secured() ? KafkaSecurity.create(dir.resolve("tls"), StackUsers.ALL) : null;
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            Future<?> etcdStart = shape.cluster()
                    ? pool.submit(step(progress, "etcd cluster (" + shape.etcdMembers() + " members)",
                            () -> etcdCluster = track(EtcdCluster.start(dir.resolve("etcd"), shape.etcdMembers()))))
                    : pool.submit(step(progress, "etcd", () -> etcd = track(EtcdNode.start(dir.resolve("etcd")))));
            Future<?> pgStart = pool.submit(step(progress, "PostgreSQL",
                    () -> postgres = track(PostgresServer.start(dir.resolve("postgres")))));
            Future<?> registryStart = pool.submit(step(progress, "schema registry",
                    () -> registry = track(SchemaRegistryServer.start(dir.resolve("schema-registry")))));
            String kafkaName = shape.cluster() ? "Kafka cluster (" + shape.brokers() + " brokers)" : "Kafka broker";
            Future<?> kafkaStart = pool.submit(step(progress, kafkaName, () -> kafka = track(
                    KafkaCluster.start(dir.resolve("kafka"), log4j2, shape.brokers(), shape.brokerHeap(), security))));
            for (Future<?> future : List.of(etcdStart, pgStart, registryStart, kafkaStart)) {
                await(future);
            }
            StackKafka.prepare(kafka.bootstrap(), security, LocalStack.PARTITIONS, shape.brokers(), connectorConfigs(stack));
            enforcers = track(new StackEnforcers(dir, log4j2, kafka.bootstrap(), shape.enforcers(), enforcerSettings(stack)));
            connect = track(new StackConnect(dir, log4j2, kafka.bootstrap(),
                    ConnectWorker.Plugins.serviceLoad(Path.of(locations.getProperty("connect.plugin.path"))),
                    Path.of(locations.getProperty("jmx.exporter.agent")),
                    Path.of(locations.getProperty("jmx.exporter.config")).normalize(), shape.connectWorkers(),
                    security == null ? Map.of() : security.client(StackUsers.CONNECT), shape.connectWorker()));
            List<Future<?>> next = new ArrayList<>();
            for (int i = 0; i < shape.enforcers(); i++) {
                int index = i;
                next.add(pool.submit(step(progress, "fence enforcer" + suffix(i, shape.enforcers()),
                        () -> enforcers.start(index))));
            }
            for (int i = 0; i < shape.connectWorkers(); i++) {
                int index = i;
                next.add(pool.submit(step(progress, "Connect worker" + suffix(i, shape.connectWorkers()),
                        () -> connect.start(index))));
            }
            for (Future<?> future : next) {
                await(future);
            }
        } finally {
            pool.shutdownNow();
            pool.awaitTermination(30, TimeUnit.SECONDS);
        }
        step(progress, "connectors " + String.join(", ", connectorConfigs(stack).keySet()), () -> {
            connect.createConnectors(connectorConfigs(stack));
            return null;
        }).call();
        progress.accept(String.format("all services ready in %.1f s", (System.nanoTime() - begin) / 1e9));
    }

    private static String suffix(int i, int count) {
        return count == 1 ? "" : " " + (i + 1) + "/" + count;
    }

    private Map<String, String> enforcerSettings(LocalStack stack) {
        Map<String, String> settings = new LinkedHashMap<>(
                StackKafka.prefixed("streams.", security == null ? Map.of() : security.client(StackUsers.ENFORCER)));
        settings.put("application.id", StackKafka.ENFORCER_APPLICATION_ID);
        settings.put("etcd.endpoints", stack.etcdEndpoints());
        if (shape.cluster()) {
            // A warm copy of each state store on the other instance: a takeover restores from it, not from the changelog.
            settings.put("streams.num.standby.replicas", "1");
        }
        settings.putAll(shape.enforcer());
        return settings;
    }

    Map<String, Map<String, String>> connectorConfigs(LocalStack stack) {
        Map<String, Map<String, String>> configs = new LinkedHashMap<>();
        for (Connector connector : shape.connectors()) {
            configs.put(connector.name(), new LinkedHashMap<>(connector.config().apply(stack)));
        }
        return configs;
    }

    private <T extends AutoCloseable> T track(T service) {
        started.push(service);
        return service;
    }

    private static <T> Callable<T> step(Consumer<String> progress, String name, Callable<T> start) {
        return () -> {
            long begin = System.nanoTime();
            progress.accept("starting " + name + " ...");
            T result = start.call();
            progress.accept(String.format("%s ready in %.1f s", name, (System.nanoTime() - begin) / 1e9));
            return result;
        };
    }

    private static void await(Future<?> future) throws Exception {
        try {
            future.get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception cause) {
                throw cause;
            }
            throw e;
        }
    }

    /** Stops every started service, the last started first. */
    @Override
    public void close() {
        while (!started.isEmpty()) {
            try {
                started.pop().close();
            } catch (Exception e) {
                System.err.println("local-stack: error while stopping a service: " + e);
            }
        }
    }
}
