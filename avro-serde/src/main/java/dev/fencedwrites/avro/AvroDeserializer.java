package dev.fencedwrites.avro;

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
     * Decodes one value. Before Avro reads the payload, {@link AvroPayloadCheck} walks it against
     * the writer schema, so a value whose lengths or counts claim more than it holds, whose items
     * take no bytes by the billion, whose indexes are out of range, which nests deeper than 100
     * records, arrays and maps, which is truncated or has bytes after its end, or whose logical
     * types hold impossible data is refused before anything of the claimed size is allocated or
     * the stack is at risk.
     *
     * @return {@code null} for a {@code null} value (a delete)
     * @throws SerializationException for every failure, with a message naming the schema id, the
     *     topic and, where it applies, the field and byte offset: the bytes are not the Confluent
     *     wire format, the schema id is unknown or names a schema that is not valid Avro (the cause
     *     is then the {@link SchemaRegistryException}), or the payload does not decode. No other
     *     exception and no {@link Error} leaves this method; should decoding still run out of stack
     *     or memory, that too is a SerializationException.
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
            throw new SerializationException(
                    "cannot resolve schema id " + id + " of a record on " + topic + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            throw new SerializationException("cannot resolve schema id " + id + " of a record on " + topic + ": " + e, e);
        }
        String failed = "cannot decode Avro payload with schema id " + id + " on " + topic + ": ";
        try {
            DatumReader<Object> reader = reader(writer, id);
            AvroPayloadCheck.check(writer, data, buffer.position(), buffer.remaining());
            return (T) reader.read(null, DecoderFactory.get().binaryDecoder(data, buffer.position(), buffer.remaining(), null));
        } catch (MalformedPayload e) {
            throw new SerializationException(failed + e.getMessage());
        } catch (SerializationException e) {
            throw e;
        } catch (IOException | RuntimeException e) {
            throw new SerializationException(failed + e, e);
        } catch (StackOverflowError | OutOfMemoryError e) {
            // Not expected after the check; kept so that no Error ever leaves the serde.
            throw new SerializationException(failed + "decoding the " + data.length + "-byte value ran out of "
                    + (e instanceof StackOverflowError ? "stack" : "memory"), e);
        }
    }

    private DatumReader<Object> reader(Schema writer, int id) {
        if (!specific) {
            return new GenericDatumReader<>(writer);
        }
        Schema target = readerSchema;
        if (target == null) {
            Class<?> generated = writer.getType() == Schema.Type.RECORD ? SpecificData.get().getClass(writer) : null;
            if (generated == null) {
                throw new SerializationException(
                        "no generated class " + writer.getFullName() + " on the class path for schema id " + id
                                + " (" + AvroSerdeConfig.SPECIFIC_AVRO_READER + "=true needs one for every record it reads)");
            }
            target = SpecificData.get().getSchema(generated);
        }
        return new SpecificDatumReader<>(writer, target, SpecificData.getForSchema(target));
    }
}
