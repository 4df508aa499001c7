package dev.fencedwrites.testing;

import dev.fencedwrites.services.SchemaRegistryServer;
import dev.fencedwrites.services.Service;
import java.nio.file.Path;

/**
 * A real Confluent-compatible schema registry on loopback ({@link SchemaRegistryServer}: Apicurio Registry, in-memory,
 * Confluent API at {@code /apis/ccompat/v7}) as a JUnit 5 extension; see {@link ServiceExtension} for its lifecycle.
 * The distribution is the one the build unpacked ({@link SchemaRegistryServer#defaultHome()}).
 *
 * <pre>{@code
 * @RegisterExtension
 * static final SchemaRegistryExtension registry = new SchemaRegistryExtension();
 * ... config.put("schema.registry.url", registry.url()) ...
 * }</pre>
 */
public final class SchemaRegistryExtension extends ServiceExtension<Service> {
    /** An extension that starts one registry. */
    public SchemaRegistryExtension() {
        super("schema-registry");
    }

    @Override
    Service start(Path dir) throws Exception {
        return SchemaRegistryServer.start(dir);
    }

    /** The Confluent-compatible base URL, for {@code schema.registry.url}. */
    public String url() {
        return service().address();
    }
}
