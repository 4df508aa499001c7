package dev.fencedwrites.connect;

import dev.fencedwrites.schemas.registry.AvroDeserializer;
import dev.fencedwrites.schemas.registry.AvroSerdeConfig;
import dev.fencedwrites.schemas.registry.AvroSerializer;
import dev.fencedwrites.schemas.registry.SchemaRegistryClient;
import io.apicurio.registry.utils.converter.avro.AvroData;
import io.apicurio.registry.utils.converter.avro.AvroDataConfig;
import java.util.Map;
import org.apache.avro.generic.GenericContainer;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.storage.Converter;

/**
 * A Kafka Connect {@link Converter} for Avro in the Confluent wire format (magic byte 0, a 4-byte
 * schema id, the Avro binary payload), through this project's schema-registry client. Configure
 * it the standard way: {@code value.converter=dev.fencedwrites.connect.AvroConverter} and
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
 * Connect's error handling (errors.tolerance, dead-letter queue) routes like any converter error.
 */
public final class AvroConverter implements Converter {
    /** Schemas kept by the Avro/Connect mapping's caches. */
    private static final int SCHEMA_CACHE_SIZE = 1_000;

    private AvroSerializer<GenericContainer> serializer;
    private AvroDeserializer<Object> deserializer;
    private AvroData avroData;

    /** For Connect's reflective construction; {@link #configure} must follow. */
    public AvroConverter() {
    }

    /** A converter over an existing registry client, e.g. for tests or embedding. */
    public AvroConverter(SchemaRegistryClient registry, boolean isKey) {
        init(registry, isKey);
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
        if (serializer == null) {
            init(AvroSerdeConfig.clientFrom(configs), isKey);
        }
        serializer.configure(configs, isKey);
    }

    private void init(SchemaRegistryClient registry, boolean isKey) {
        serializer = new AvroSerializer<>(registry, isKey);
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
            throw new DataException("only Avro records are written (topic " + topic + " got a " + (schema == null ? "schemaless" : schema.type()) + " value)");
        }
        try {
            return serializer.serialize(topic, container);
        } catch (SerializationException e) {
            throw new DataException(e.getMessage(), e);
        }
    }

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
        if (!(record instanceof GenericContainer container) || container.getSchema().getType() != org.apache.avro.Schema.Type.RECORD) {
            throw new DataException("the Avro value on topic " + topic + " is not a record; this converter handles records only");
        }
        try {
            return avroData.toConnectData(container.getSchema(), record);
        } catch (RuntimeException | LinkageError e) {
            throw new DataException("cannot map the Avro record on topic " + topic + " to Connect data: " + e.getMessage(), e);
        }
    }

    @Override
    public ConfigDef config() {
        return new ConfigDef().define(AvroSerdeConfig.SCHEMA_REGISTRY_URL, ConfigDef.Type.STRING, ConfigDef.NO_DEFAULT_VALUE,
                ConfigDef.Importance.HIGH, "Confluent-compatible schema registry URL.");
    }
}
