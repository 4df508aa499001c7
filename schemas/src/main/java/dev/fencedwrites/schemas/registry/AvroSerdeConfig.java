package dev.fencedwrites.schemas.registry;

import java.time.Duration;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;

/** Configuration names of the Avro serde; they carry Confluent's names and meanings. */
public final class AvroSerdeConfig {
    /** Base URL of a Confluent-compatible schema registry. Required unless a client is injected. */
    public static final String SCHEMA_REGISTRY_URL = "schema.registry.url";
    /** Deserialize into the generated SpecificRecord class (true) or a GenericRecord (false, default). */
    public static final String SPECIFIC_AVRO_READER = "specific.avro.reader";
    /** Per-request timeout for registry calls, in milliseconds (default 10000). */
    public static final String REQUEST_TIMEOUT_MS = "schema.registry.request.timeout.ms";

    private AvroSerdeConfig() {
    }

    /**
     * A registry client from serde or converter settings: {@value #SCHEMA_REGISTRY_URL} (the first
     * URL of a comma-separated list) and {@value #REQUEST_TIMEOUT_MS}.
     *
     * @throws ConfigException if the URL is missing
     */
    public static SchemaRegistryClient clientFrom(Map<String, ?> configs) {
        Object url = configs.get(SCHEMA_REGISTRY_URL);
        if (url == null || url.toString().isBlank()) {
            throw new ConfigException(SCHEMA_REGISTRY_URL + " is required by the fenced-writes Avro serde");
        }
        Object timeout = configs.get(REQUEST_TIMEOUT_MS);
        long timeoutMs = timeout == null ? 10_000L : Long.parseLong(timeout.toString());
        return new RestSchemaRegistryClient(url.toString().split(",")[0].trim(), Duration.ofMillis(timeoutMs));
    }

    static String subject(String topic, boolean isKey) {
        return topic + (isKey ? "-key" : "-value");
    }
}
