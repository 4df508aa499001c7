package dev.fencedwrites.testing;

import dev.fencedwrites.services.ConnectWorker;
import dev.fencedwrites.services.KafkaSecurity;
import dev.fencedwrites.services.Service;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * A real Kafka Connect standalone worker on loopback ({@link ConnectWorker}, a child JVM) as a JUnit 5 extension; see
 * {@link ServiceExtension} for its lifecycle. It runs on the broker of a {@link KafkaBrokerExtension}, which it starts
 * first if that extension has not yet (JUnit orders {@code @RegisterExtension} fields only when they carry
 * {@code @Order}). Connector configurations are built at start, so they may name other services' addresses: give
 * those extensions, and this one after them, an {@code @Order}.
 *
 * <pre>{@code
 * @RegisterExtension
 * static final KafkaBrokerExtension kafka = new KafkaBrokerExtension();
 * @RegisterExtension
 * static final ConnectWorkerExtension connect = ConnectWorkerExtension.builder(kafka, pluginPath)
 *         .connector("sink", () -> Map.of("connector.class", "...", "topics", "in")).build();
 * }</pre>
 */
public final class ConnectWorkerExtension extends ServiceExtension<Service> {
    private final KafkaBrokerExtension kafka;
    private final Path pluginPath;
    private final Map<String, Supplier<Map<String, String>>> connectors;

    private ConnectWorkerExtension(Builder builder) {
        super("connect");
        this.kafka = builder.kafka;
        this.pluginPath = builder.pluginPath;
        this.connectors = new LinkedHashMap<>(builder.connectors);
    }

    /**
     * A worker on {@code kafka}'s broker that loads plugins from {@code pluginPath} (a directory whose
     * sub-directories are plugins, with {@code plugin.discovery=service_load}).
     */
    public static Builder builder(KafkaBrokerExtension kafka, Path pluginPath) {
        return new Builder(kafka, pluginPath);
    }

    /** The connectors the worker runs; see {@link ConnectWorkerExtension#builder}. */
    public static final class Builder {
        private final KafkaBrokerExtension kafka;
        private final Path pluginPath;
        private final Map<String, Supplier<Map<String, String>>> connectors = new LinkedHashMap<>();

        private Builder(KafkaBrokerExtension kafka, Path pluginPath) {
            this.kafka = Objects.requireNonNull(kafka, "kafka");
            this.pluginPath = Objects.requireNonNull(pluginPath, "pluginPath");
        }

        /**
         * Also runs connector {@code name}; {@code config} is called when the worker starts.
         *
         * @throws IllegalArgumentException if a connector of that name was added already
         */
        public Builder connector(String name, Supplier<Map<String, String>> config) {
            if (connectors.putIfAbsent(Objects.requireNonNull(name, "name"), Objects.requireNonNull(config, "config")) != null) {
                throw new IllegalArgumentException("connector " + name + " added twice");
            }
            return this;
        }

        /** The extension, for a {@code @RegisterExtension} field. */
        public ConnectWorkerExtension build() {
            return new ConnectWorkerExtension(this);
        }
    }

    @Override
    Service start(Path dir) throws Exception {
        kafka.ensureStarted();
        Map<String, Map<String, String>> configs = new LinkedHashMap<>();
        connectors.forEach((name, config) -> configs.put(name, config.get()));
        // On a secured broker the worker and its tasks' clients connect as the super user.
        return ConnectWorker.start(dir, kafka.log4j2(), kafka.bootstrapServers(), pluginPath, configs, null,
                kafka.clientSettings(KafkaSecurity.ADMIN));
    }

    /** The worker's REST URL, {@code http://127.0.0.1:PORT}. */
    public String url() {
        return service().address();
    }
}
