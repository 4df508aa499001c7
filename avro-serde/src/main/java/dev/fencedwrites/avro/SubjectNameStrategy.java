package dev.fencedwrites.avro;

import java.util.Locale;
import org.apache.avro.Schema;
import org.apache.kafka.common.config.ConfigException;

/**
 * Under which subject the serializer registers (or looks up) a record's schema; Confluent's three
 * built-in strategies. Configured with {@link AvroSerdeConfig#KEY_SUBJECT_NAME_STRATEGY} and
 * {@link AvroSerdeConfig#VALUE_SUBJECT_NAME_STRATEGY}, by Confluent's class name (e.g.
 * {@code io.confluent.kafka.serializers.subject.RecordNameStrategy}), its simple name, or the short
 * names {@code topic}, {@code record}, {@code topic-record}.
 */
public enum SubjectNameStrategy {
    /** {@code <topic>-key} or {@code <topic>-value}: one schema lineage per topic (the default). */
    TOPIC("TopicNameStrategy", "topic"),
    /**
     * The record's full name, e.g. {@code dev.fencedwrites.demo.BillingSummary}: one lineage per record type, across topics.
     */
    RECORD("RecordNameStrategy", "record"),
    /** {@code <topic>-<record full name>}: one lineage per record type and topic. */
    TOPIC_RECORD("TopicRecordNameStrategy", "topic-record");

    private static final String CONFLUENT_PACKAGE = "io.confluent.kafka.serializers.subject.";

    private final String className;
    private final String shortName;

    SubjectNameStrategy(String className, String shortName) {
        this.className = className;
        this.shortName = shortName;
    }

    /** Confluent's fully qualified class name of this strategy. */
    public String confluentClassName() {
        return CONFLUENT_PACKAGE + className;
    }

    /**
     * The subject of a record of {@code schema} on {@code topic}.
     *
     * @throws IllegalArgumentException if this strategy needs a record name and {@code schema} is
     *     not a named type (record, enum, fixed)
     */
    public String subject(String topic, boolean isKey, Schema schema) {
        return switch (this) {
            case TOPIC -> topic + (isKey ? "-key" : "-value");
            case RECORD -> recordName(schema);
            case TOPIC_RECORD -> topic + "-" + recordName(schema);
        };
    }

    private String recordName(Schema schema) {
        return switch (schema.getType()) {
            case RECORD, ENUM, FIXED -> schema.getFullName();
            default ->
                throw new IllegalArgumentException(confluentClassName() + " needs a named Avro type (record, enum, fixed); got a "
                        + schema.getType().getName() + " schema");
        };
    }

    /**
     * The strategy a setting names; {@code null} or blank gives {@link #TOPIC}.
     *
     * @param setting the setting's name, for the error message
     * @throws ConfigException if the value names no supported strategy (a custom strategy class, say)
     */
    public static SubjectNameStrategy parse(String setting, Object value) {
        if (value == null || value.toString().isBlank()) {
            return TOPIC;
        }
        String text = value instanceof Class<?> type ? type.getName() : value.toString().trim();
        for (SubjectNameStrategy strategy : values()) {
            if (text.equals(strategy.confluentClassName()) || text.equals(strategy.className)
                    || text.toLowerCase(Locale.ROOT).replace('_', '-').equals(strategy.shortName)) {
                return strategy;
            }
        }
        throw new ConfigException(setting, text,
                "unknown subject name strategy; supported: topic, record, topic-record, or Confluent's "
                        + TOPIC.confluentClassName() + ", " + RECORD.confluentClassName() + ", "
                        + TOPIC_RECORD.confluentClassName());
    }
}
