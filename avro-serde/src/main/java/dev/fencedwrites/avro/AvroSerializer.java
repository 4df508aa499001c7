package dev.fencedwrites.avro;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.SchemaCompatibility;
import org.apache.avro.generic.GenericContainer;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Serializer;

/**
 * Kafka {@link Serializer} writing Avro records in the Confluent wire format (magic byte 0, the
 * 4-byte big-endian schema id, the Avro binary). By default the record's schema is registered under
 * {@code <topic>-value} (or {@code -key}) on first use and cached; Confluent's serializer settings
 * change that: {@link AvroSerdeConfig#AUTO_REGISTER_SCHEMAS}, {@link AvroSerdeConfig#USE_LATEST_VERSION},
 * {@link AvroSerdeConfig#KEY_SUBJECT_NAME_STRATEGY} and {@link AvroSerdeConfig#VALUE_SUBJECT_NAME_STRATEGY}.
 *
 * <p>Configure with {@link AvroSerdeConfig#SCHEMA_REGISTRY_URL} (Kafka's reflective construction),
 * or construct with a client.
 *
 * @param <T> a SpecificRecord or GenericRecord type
 */
public class AvroSerializer<T extends GenericContainer> implements Serializer<T> {
    private SchemaRegistryClient registry;
    private boolean isKey;
    private boolean autoRegister = true;
    private boolean useLatestVersion;
    private SubjectNameStrategy strategy = SubjectNameStrategy.TOPIC;

    /** For Kafka's reflective construction; {@link #configure} must follow. */
    public AvroSerializer() {
    }

    private AvroSerializer(SchemaRegistryClient registry, boolean isKey) {
        this.registry = registry;
        this.isKey = isKey;
    }

    /** A serializer of record values over an existing registry client, with the default serializer settings. */
    public static <T extends GenericContainer> AvroSerializer<T> forValues(SchemaRegistryClient registry) {
        return new AvroSerializer<>(registry, false);
    }

    /** A serializer of record keys over an existing registry client, with the default serializer settings. */
    public static <T extends GenericContainer> AvroSerializer<T> forKeys(SchemaRegistryClient registry) {
        return new AvroSerializer<>(registry, true);
    }

    /**
     * A serializer of record values over an existing registry client, with serializer settings from {@code configs} (the
     * registry client's own settings there are not used).
     *
     * @throws ConfigException if a serializer setting is invalid
     */
    public static <T extends GenericContainer> AvroSerializer<T> forValues(SchemaRegistryClient registry,
            Map<String, ?> configs) {
        AvroSerializer<T> serializer = new AvroSerializer<>(registry, false);
        serializer.configure(configs, false);
        return serializer;
    }

    /**
     * A serializer of record keys over an existing registry client, with serializer settings from {@code configs}.
     *
     * @throws ConfigException if a serializer setting is invalid
     */
    public static <T extends GenericContainer> AvroSerializer<T> forKeys(SchemaRegistryClient registry, Map<String, ?> configs) {
        AvroSerializer<T> serializer = new AvroSerializer<>(registry, true);
        serializer.configure(configs, true);
        return serializer;
    }

    /**
     * Reads the serializer settings, and builds the registry client from {@code configs} unless one
     * was given to the constructor.
     *
     * @throws ConfigException if a setting is missing, invalid or unsupported
     */
    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
        this.isKey = isKey;
        this.autoRegister = ClientSettings.bool(configs, AvroSerdeConfig.AUTO_REGISTER_SCHEMAS, true);
        this.useLatestVersion = ClientSettings.bool(configs, AvroSerdeConfig.USE_LATEST_VERSION, false);
        String setting = isKey ? AvroSerdeConfig.KEY_SUBJECT_NAME_STRATEGY : AvroSerdeConfig.VALUE_SUBJECT_NAME_STRATEGY;
        this.strategy = SubjectNameStrategy.parse(setting, configs.get(setting));
        if (registry == null) {
            registry = AvroSerdeConfig.clientFrom(configs);
        }
    }

    /**
     * @return {@code null} for a {@code null} record (a delete), otherwise the wire-format bytes
     * @throws SerializationException if the registry refuses or lacks the schema (the message names
     *     the subject), cannot be reached, or the record does not fit the schema it is written with
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
        String subject;
        try {
            subject = strategy.subject(topic, isKey, schema);
        } catch (IllegalArgumentException e) {
            throw new SerializationException("cannot name the subject for topic " + topic + ": " + e.getMessage(), e);
        }
        int id;
        Schema writer = schema;
        try {
            // Confluent's order: auto.register.schemas wins; use.latest.version applies only without it.
            if (autoRegister) {
                id = registry.register(subject, schema);
            } else if (useLatestVersion) {
                RegisteredSchema latest = registry.latest(subject);
                id = latest.id();
                writer = latest.schema();
            } else {
                id = registry.lookup(subject, schema);
            }
        } catch (SchemaRegistryException e) {
            throw new SerializationException(e.getMessage()
                    + (!useLatestVersion && !autoRegister
                            ? " (" + AvroSerdeConfig.AUTO_REGISTER_SCHEMAS + "=false: register it first)"
                            : ""),
                    e);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(64);
        out.write(ConfluentWireFormat.MAGIC_BYTE);
        out.writeBytes(ByteBuffer.allocate(4).putInt(id).array());
        try {
            if (writer.equals(schema)) {
                write(record, schema, out);
            } else {
                writeAs(record, schema, writer, subject, id, out);
            }
        } catch (IOException | RuntimeException e) {
            if (e instanceof SerializationException serialization) {
                throw serialization;
            }
            throw new SerializationException(
                    "cannot write Avro record of schema " + schema.getFullName() + " for topic " + topic + ": " + e.getMessage(),
                    e);
        }
        return out.toByteArray();
    }

    private static <T> void write(T record, Schema schema, ByteArrayOutputStream out) throws IOException {
        BinaryEncoder encoder = EncoderFactory.get().directBinaryEncoder(out, null);
        if (record instanceof SpecificRecord) {
            new SpecificDatumWriter<T>(schema, SpecificData.getForSchema(schema)).write(record, encoder);
        } else {
            new GenericDatumWriter<T>(schema).write(record, encoder);
        }
        encoder.flush();
    }

    /** Writes {@code record} in {@code writer} (the subject's latest version), converting by Avro's schema resolution. */
    private static <T> void writeAs(T record, Schema own, Schema writer, String subject, int id, ByteArrayOutputStream out)
            throws IOException {
        SchemaCompatibility.SchemaPairCompatibility compatibility = SchemaCompatibility.checkReaderWriterCompatibility(writer,
                own);
        if (compatibility.getType() != SchemaCompatibility.SchemaCompatibilityType.COMPATIBLE) {
            throw new SerializationException("cannot write a " + own.getFullName() + " record as the latest version of subject '"
                    + subject
                    + "' (schema id " + id + ", " + AvroSerdeConfig.USE_LATEST_VERSION + "=true): that version cannot read it: "
                    + compatibility.getDescription());
        }
        ByteArrayOutputStream own64 = new ByteArrayOutputStream(64);
        write(record, own, own64);
        byte[] bytes = own64.toByteArray();
        Object converted = new GenericDatumReader<>(own, writer).read(null, DecoderFactory.get().binaryDecoder(bytes, null));
        write(converted, writer, out);
    }
}
