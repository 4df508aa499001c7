package dev.fencedwrites.localstack;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Function;

/** What a {@link LocalStack} starts: see {@link LocalStack#builder(Path)}. */
public final class LocalStackBuilder {
    private final Path dir;
    private final List<Connector> connectors = new ArrayList<>();
    private Consumer<String> progress = line -> {
    };
    private boolean secured;
    private boolean cluster;
    private Map<String, String> enforcerSettings = Map.of();
    private Map<String, String> connectWorkerSettings = Map.of();

    LocalStackBuilder(Path dir) {
        this.dir = Objects.requireNonNull(dir, "dir");
    }

    /** Also runs connector {@code name} with the configuration {@code config} builds (see {@link Connector}). */
    public LocalStackBuilder connector(String name, Function<LocalStack, Map<String, String>> config) {
        return connector(new Connector(name, config));
    }

    /** Also runs {@code connector}. */
    public LocalStackBuilder connector(Connector connector) {
        connectors.add(Objects.requireNonNull(connector, "connector"));
        return this;
    }

    /** Also runs every connector of {@code set}, in order. */
    public LocalStackBuilder connectors(List<Connector> set) {
        set.forEach(this::connector);
        return this;
    }

    /**
     * Secures the broker: one {@code SASL_SSL} listener (SCRAM-SHA-512 over TLS with a CA made at start), ACLs
     * with {@code allow.everyone.if.no.acl.found=false}, and one SCRAM user per role ({@link StackUsers}) holding exactly
     * its {@link FenceAcls}: the enforcer and the Connect worker run as theirs; clients get theirs from
     * {@link LocalStack#kafkaClientSettings(String)}. Default: a {@code PLAINTEXT} broker without ACLs.
     */
    public LocalStackBuilder secured() {
        this.secured = true;
        return this;
    }

    /**
     * The production shape: 3 Kafka nodes (KRaft, combined broker + controller, static quorum) with
     * {@code default.replication.factor=3} and {@code min.insync.replicas=2} for every topic, a 3-member etcd cluster, 2
     * enforcer instances with one application id and {@code num.standby.replicas=1}, and 2 Connect workers in one
     * distributed group running each connector's tasks ({@code tasks.max=2} for the billing sink). Default: one of each.
     */
    public LocalStackBuilder cluster() {
        this.cluster = true;
        return this;
    }

    /**
     * Extra settings for every enforcer instance, on top of the stack's (e.g. {@code streams.session.timeout.ms}); the
     * enforcer's own names, Kafka Streams settings with the {@code streams.} prefix.
     */
    public LocalStackBuilder enforcerSettings(Map<String, String> settings) {
        this.enforcerSettings = Map.copyOf(settings);
        return this;
    }

    /**
     * Extra settings for every Connect worker, on top of the stack's (e.g. {@code scheduled.rebalance.max.delay.ms},
     * {@code consumer.session.timeout.ms}); see {@code DistributedConnectWorker} for the stack's own.
     */
    public LocalStackBuilder connectWorkerSettings(Map<String, String> settings) {
        this.connectWorkerSettings = Map.copyOf(settings);
        return this;
    }

    /** Receives one line per step (default: none). */
    public LocalStackBuilder progress(Consumer<String> progress) {
        this.progress = Objects.requireNonNull(progress, "progress");
        return this;
    }

    /**
     * Starts every service and returns once all are ready (the Connect worker once every connector's tasks run).
     *
     * @throws IllegalArgumentException if two connectors have the same name, or both {@link #cluster()} and
     *                                  {@link #secured()} were asked for (not supported yet: untested)
     * @throws Exception                if a service fails to start; those already started are stopped
     */
    public LocalStack start() throws Exception {
        if (connectors.stream().map(Connector::name).distinct().count() != connectors.size()) {
            throw new IllegalArgumentException("connector names must be distinct, got "
                    + connectors.stream().map(Connector::name).toList());
        }
        if (cluster && secured) {
            throw new IllegalArgumentException("cluster() and secured() together are not supported yet");
        }
        return LocalStack.start(dir, new StackShape(connectors, secured, cluster, enforcerSettings, connectWorkerSettings),
                progress);
    }
}
