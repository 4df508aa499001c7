package dev.fencedwrites.schemas.registry;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.io.DatumReader;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificDatumReader;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * Kafka {@link Deserializer} reading Avro records in the Confluent wire format. The writer schema
 * is fetched by id from the registry and cached. With {@link AvroSerdeConfig#SPECIFIC_AVRO_READER}
 * (or a reader schema given to the constructor) the result is the generated class resolved
 * against the reader schema; otherwise a GenericRecord in the writer schema.
 *
 * @param <T> the record type returned
 */
public class AvroDeserializer<T> implements Deserializer<T> {
    private SchemaRegistryClient registry;
    private Schema readerSchema;
    private boolean specific;

    /** For Kafka's reflective construction; {@link #configure} must follow. */
    public AvroDeserializer() {
    }

    /**
     * @param registry     the registry client
     * @param readerSchema the reader schema (e.g. {@code BillingSummary.getClassSchema()}) for
     *                     specific records, or {@code null} for generic records in the writer schema
     */
    public AvroDeserializer(SchemaRegistryClient registry, Schema readerSchema) {
        this.registry = registry;
        this.readerSchema = readerSchema;
        this.specific = readerSchema != null;
    }

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
        if (registry == null) {
            registry = AvroSerdeConfig.clientFrom(configs);
        }
        Object flag = configs.get(AvroSerdeConfig.SPECIFIC_AVRO_READER);
        if (flag != null) {
            specific = Boolean.parseBoolean(flag.toString());
        }
    }

    /**
     * @return {@code null} for a {@code null} value (a delete)
     * @throws SerializationException if the bytes are not the Confluent wire format, the schema id
     *     is unknown, or the payload does not decode
     */
    @Override
    @SuppressWarnings("unchecked")
    public T deserialize(String topic, byte[] data) {
        if (data == null) {
            return null;
        }
        ByteBuffer buffer = ByteBuffer.wrap(data);
        int id = ConfluentWireFormat.readSchemaId(buffer);
        Schema writer;
        try {
            writer = registry.getById(id);
        } catch (SchemaRegistryException e) {
            throw new SerializationException("cannot resolve schema id " + id + " of a record on " + topic + ": " + e.getMessage(), e);
        }
        DatumReader<Object> reader;
        if (specific) {
            Schema target = readerSchema != null ? readerSchema : SpecificData.get().getSchema(SpecificData.get().getClass(writer));
            reader = new SpecificDatumReader<>(writer, target, SpecificData.getForSchema(target));
        } else {
            reader = new GenericDatumReader<>(writer);
        }
        try {
            return (T) reader.read(null, DecoderFactory.get().binaryDecoder(data, buffer.position(), buffer.remaining(), null));
        } catch (IOException | RuntimeException e) {
            throw new SerializationException("cannot decode Avro payload with schema id " + id + " on " + topic + ": " + e.getMessage(), e);
        }
    }
}
