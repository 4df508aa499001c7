package dev.fencedwrites.schemas.registry;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericContainer;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Serializer;

/**
 * Kafka {@link Serializer} writing Avro records in the Confluent wire format. The writer schema is
 * registered under {@code <topic>-value} (or {@code -key}) on first use and cached.
 *
 * <p>Configure with {@link AvroSerdeConfig#SCHEMA_REGISTRY_URL}, or construct with a client.
 *
 * @param <T> a SpecificRecord or GenericRecord type
 */
public class AvroSerializer<T extends GenericContainer> implements Serializer<T> {
    private SchemaRegistryClient registry;
    private boolean isKey;

    /** For Kafka's reflective construction; {@link #configure} must follow. */
    public AvroSerializer() {
    }

    /** A serializer over an existing registry client. */
    public AvroSerializer(SchemaRegistryClient registry, boolean isKey) {
        this.registry = registry;
        this.isKey = isKey;
    }

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
        this.isKey = isKey;
        if (registry == null) {
            registry = AvroSerdeConfig.clientFrom(configs);
        }
    }

    /**
     * @return {@code null} for a {@code null} record (a delete), otherwise the wire-format bytes
     * @throws SerializationException if the registry refuses the schema or the record does not match it
     */
    @Override
    public byte[] serialize(String topic, T record) {
        if (record == null) {
            return null;
        }
        if (registry == null) {
            throw new IllegalStateException("AvroSerializer used before configure()");
        }
        Schema schema = record.getSchema();
        int id;
        try {
            id = registry.register(AvroSerdeConfig.subject(topic, isKey), schema);
        } catch (SchemaRegistryException e) {
            throw new SerializationException(e.getMessage(), e);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(64);
        out.write(ConfluentWireFormat.MAGIC_BYTE);
        out.writeBytes(ByteBuffer.allocate(4).putInt(id).array());
        BinaryEncoder encoder = EncoderFactory.get().directBinaryEncoder(out, null);
        try {
            if (record instanceof SpecificRecord) {
                new SpecificDatumWriter<T>(schema, SpecificData.getForSchema(schema)).write(record, encoder);
            } else {
                new GenericDatumWriter<T>(schema).write(record, encoder);
            }
            encoder.flush();
        } catch (IOException | RuntimeException e) {
            throw new SerializationException("cannot write Avro record of schema " + schema.getFullName() + " for topic " + topic + ": " + e.getMessage(), e);
        }
        return out.toByteArray();
    }
}
