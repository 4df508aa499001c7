package dev.fencedwrites.localstack;

import java.util.Map;
import java.util.Objects;
import java.util.function.Function;

/**
 * A connector the Connect worker runs: its name and its configuration, built once Kafka, etcd, the
 * schema registry and PostgreSQL are ready (so it can name their addresses through the stack's getters).
 *
 * @param name   the connector's name ({@code name} in its configuration)
 * @param config the connector's configuration, given the stack whose services are ready (not yet Connect)
 */
public record Connector(String name, Function<LocalStack, Map<String, String>> config) {
    public Connector {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(config, "config");
    }
}
