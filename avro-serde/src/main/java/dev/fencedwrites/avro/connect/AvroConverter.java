package dev.fencedwrites.avro.connect;

import dev.fencedwrites.avro.AvroDeserializer;
import dev.fencedwrites.avro.AvroSerdeConfig;
import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.SchemaRegistryClient;
import dev.fencedwrites.buildinfo.ModuleVersion;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.RejectionReason;
import io.apicurio.registry.utils.converter.avro.AvroData;
import io.apicurio.registry.utils.converter.avro.AvroDataConfig;
import java.nio.ByteBuffer;
import java.util.Locale;
import java.util.Map;
import org.apache.avro.generic.GenericContainer;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.storage.Converter;

/**
 * A Kafka Connect {@link Converter} for Avro in the Confluent wire format (magic byte 0, a 4-byte
 * schema id, the Avro binary payload), through this project's schema-registry client. Configure
 * it the standard way: {@code value.converter=dev.fencedwrites.avro.connect.AvroConverter} and
 * {@code value.converter.schema.registry.url=http://...}.
 *
 * <p>To Connect: the record is decoded with the writer schema its id names, and mapped to Connect
 * data (records to {@code Struct}s, optional fields from unions with null, logical types
 * {@code timestamp-millis}, {@code date}, {@code time-millis} and {@code decimal} to Connect's
 * {@code Timestamp}, {@code Date}, {@code Time} and {@code Decimal}) by Apicurio's {@code AvroData}.
 * From Connect: the reverse, registering the schema under {@code <topic>-value} (or {@code -key}),
 * or as Confluent's serializer settings say ({@code auto.register.schemas}, {@code use.latest.version},
 * {@code value.subject.name.strategy}, ...; see {@link AvroSerdeConfig}).
 * A {@code null} value stays {@code null} (a delete). Failures are {@link DataException}s, which
 * Connect's error handling (errors.tolerance, dead-letter queue) routes like any converter error;
 * no other exception and no {@link Error} leaves the converter (the deserializer bounds
 * every allocation by the value's own size and nesting at 100 levels).
 *
 * <p>As a worker's {@code value.converter}, a value that cannot be decoded fails inside the Connect
 * framework before any sink task sees it; with {@code errors.tolerance=all} Connect sends the
 * original record to {@code errors.deadletterqueue.topic.name} with its {@code __connect.errors.*}
 * headers (when {@code errors.deadletterqueue.context.headers.enable=true}). So that such a record
 * reads like the fenced sink's own refusals, the converter adds to the consumed record's headers,
 * which Connect's dead-letter reporter copies: {@code fence.rejected.reason=MALFORMED_VALUE},
 * {@code fence.rejected.stage=sink}, an empty {@code fence.rejected.highest} and
 * {@code fence.source.topic}; the partition and offset are in Connect's
 * {@code __connect.errors.partition} and {@code __connect.errors.offset}. A registry that cannot be
 * reached (no answer, 408, 429, 5xx) or refuses the credentials is not a bad value: that is a
 * {@link RetriableException} without these headers, which Connect retries for
 * {@code errors.retry.timeout}.
 */
public final class AvroConverter implements Converter {
    /** Schemas kept by the Avro/Connect mapping's caches. */
    private static final int SCHEMA_CACHE_SIZE = 1_000;

    private AvroSerializer<GenericContainer> serializer;
    private AvroDeserializer<Object> deserializer;
    private AvroData avroData;
    private boolean isKey;

    /** For Connect's reflective construction; {@link #configure} must follow. */
    public AvroConverter() {
    }

    /** A converter over an existing registry client, e.g. for tests or embedding. */
    public AvroConverter(SchemaRegistryClient registry, boolean isKey) {
        init(registry, isKey);
    }

    /**
     * The build's version of this converter (avro-serde's {@code ${project.version}}), shown by a worker's
     * {@code GET /connector-plugins?connectorsOnly=false} instead of the {@code "undefined"} of {@link Converter}'s
     * default (KIP-891 lets a connector configuration pin it with {@code value.converter.plugin.version}).
     *
     * @throws IllegalStateException if the jar was not built by Maven (no filtered version resource)
     */
    @Override
    public String version() {
        return ModuleVersion.read(AvroConverter.class, "avro-serde.properties", "avro-serde");
    }

    /**
     * Reads the registry client's and the serializer's settings (Connect passes them with the
     * {@code value.converter.} or {@code key.converter.} prefix removed): Confluent's names, see
     * {@link AvroSerdeConfig}. A converter constructed with a client takes only the serializer's.
     *
     * @throws org.apache.kafka.common.config.ConfigException if a setting is missing, invalid or unsupported
     */
    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
        this.isKey = isKey;
        if (serializer == null) {
            init(AvroSerdeConfig.clientFrom(configs), isKey);
        }
        serializer.configure(configs, isKey);
    }

    private void init(SchemaRegistryClient registry, boolean isKey) {
        this.isKey = isKey;
        serializer = isKey ? AvroSerializer.forKeys(registry) : AvroSerializer.forValues(registry);
        deserializer = new AvroDeserializer<>(registry, null);
        // Enhanced schema support keeps enums, fixed and logical types on the way back to Avro.
        avroData = new AvroData(new AvroDataConfig.Builder().with(AvroDataConfig.ENHANCED_AVRO_SCHEMA_SUPPORT_CONFIG, true)
                .with(AvroDataConfig.SCHEMAS_CACHE_SIZE_CONFIG, SCHEMA_CACHE_SIZE).build());
    }

    @Override
    public byte[] fromConnectData(String topic, Schema schema, Object value) {
        if (value == null) {
            return null;
        }
        if (schema == null || schema.type() != Schema.Type.STRUCT) {
            throw new DataException("only records (Connect Structs) are written as Avro; topic " + topic + " got a "
                    + (schema == null ? "schemaless" : schema.type().toString()) + " value");
        }
        Object avro;
        try {
            avro = avroData.fromConnectData(schema, value);
        } catch (RuntimeException | LinkageError e) {
            throw new DataException("cannot map the Connect value for topic " + topic + " to Avro: " + e.getMessage(), e);
        }
        if (!(avro instanceof GenericContainer container)) {
            throw new DataException("only Avro records are written (topic " + topic + " got a "
                    + (schema == null ? "schemaless" : schema.type()) + " value)");
        }
        try {
            return serializer.serialize(topic, container);
        } catch (SerializationException e) {
            throw new DataException(e.getMessage(), e);
        }
    }

    /**
     * Decodes a value (or key) as Connect data.
     *
     * @throws DataException for any value that does not decode or map (the message names the schema
     *     id, the topic and, where it applies, the field and byte)
     */
    @Override
    public SchemaAndValue toConnectData(String topic, byte[] value) {
        if (value == null) {
            return SchemaAndValue.NULL;
        }
        Object record;
        try {
            record = deserializer.deserialize(topic, value);
        } catch (SerializationException e) {
            throw new DataException(e.getMessage(), e);
        }
        if (!(record instanceof GenericContainer container)
                // CHECKSTYLE:OFF: FullyQualifiedName Connect's Schema is imported
                || container.getSchema().getType() != org.apache.avro.Schema.Type.RECORD) {
            // CHECKSTYLE:ON: FullyQualifiedName
            throw new DataException("the Avro value on topic " + topic + " is not a record but a " + avroType(record)
                    + "; this converter handles records only");
        }
        try {
            return avroData.toConnectData(container.getSchema(), record);
        } catch (RuntimeException | LinkageError e) {
            throw new DataException("cannot map the Avro record " + container.getSchema().getFullName() + " on topic " + topic
                    + " to Connect data: " + e, e);
        } catch (StackOverflowError | OutOfMemoryError e) {
            throw new DataException("cannot map the Avro record " + container.getSchema().getFullName() + " on topic " + topic
                    + " to Connect data: ran out of " + (e instanceof StackOverflowError ? "stack" : "memory"), e);
        }
    }

    /** The Avro type of a decoded value that is not a record, as the generic reader represents each. */
    private static String avroType(Object decoded) {
        if (decoded instanceof GenericContainer container) {
            return container.getSchema().getType().toString();
        }
        return decoded == null
                ? "NULL"
                : decoded instanceof CharSequence
                        ? "STRING"
                        : decoded instanceof ByteBuffer
                                ? "BYTES"
                                : decoded instanceof Map
                                        ? "MAP"
                                        : decoded.getClass().getSimpleName().toUpperCase(Locale.ROOT);
    }

    /**
     * What the Connect worker calls: {@link #toConnectData(String, byte[])}, and on a value that
     * does not decode, the {@code fence.rejected.*} headers added to {@code headers} (the consumed
     * record's, which Connect's dead-letter reporter copies) before the {@link DataException} is thrown.
     *
     * @throws RetriableException when the schema registry cannot be reached or refuses the credentials
     * @throws DataException      for a value (or key) that does not decode or map
     */
    @Override
    public SchemaAndValue toConnectData(String topic, Headers headers, byte[] value) {
        try {
            return toConnectData(topic, value);
        } catch (DataException e) {
            if (e.getCause() instanceof SerializationException cause
                    && (RegistryErrors.isTransient(cause) || RegistryErrors.isRefused(cause))) {
                throw new RetriableException(
                        e.getMessage()
                                + " (a schema registry failure, not a bad value: Connect retries it within errors.retry.timeout)",
                        e);
            }
            if (!isKey && headers != null) {
                markMalformed(headers, topic);
            }
            throw e;
        }
    }

    /**
     * The sink's rejection headers, as far as a converter knows them; the consumed record's headers may be read-only elsewhere.
     */
    private static void markMalformed(Headers headers, String topic) {
        try {
            headers.add(FenceHeaders.REJECTED_REASON, FenceHeaders.encode(RejectionReason.MALFORMED_VALUE.name()));
            headers.add(FenceHeaders.REJECTED_STAGE, FenceHeaders.encode(FenceHeaders.STAGE_SINK));
            headers.add(FenceHeaders.REJECTED_HIGHEST, FenceHeaders.encode(""));
            headers.add(FenceHeaders.SOURCE_TOPIC, FenceHeaders.encode(topic));
        } catch (IllegalStateException readOnly) {
            // RecordHeaders after a send are read-only; then Connect's own __connect.errors.* headers are all there is.
        }
    }

    @Override
    public ConfigDef config() {
        return new ConfigDef().define(AvroSerdeConfig.SCHEMA_REGISTRY_URL, ConfigDef.Type.STRING, ConfigDef.NO_DEFAULT_VALUE,
                ConfigDef.Importance.HIGH, "Confluent-compatible schema registry URL.");
    }
}
