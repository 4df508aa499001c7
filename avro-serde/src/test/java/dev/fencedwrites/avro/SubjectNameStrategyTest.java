package dev.fencedwrites.avro;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencedwrites.demo.BillingSummary;
import org.apache.avro.Schema;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Confluent's three subject name strategies, by any of their names. */
class SubjectNameStrategyTest {
    private static final Schema SUMMARY = BillingSummary.getClassSchema();

    @ParameterizedTest
    @CsvSource({
            "io.confluent.kafka.serializers.subject.TopicNameStrategy, TOPIC",
            "io.confluent.kafka.serializers.subject.RecordNameStrategy, RECORD",
            "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy, TOPIC_RECORD",
            "TopicNameStrategy, TOPIC",
            "RecordNameStrategy, RECORD",
            "TopicRecordNameStrategy, TOPIC_RECORD",
            "topic, TOPIC",
            "record, RECORD",
            "topic-record, TOPIC_RECORD",
            "TOPIC_RECORD, TOPIC_RECORD",
    })
    void acceptsConfluentClassNamesSimpleNamesAndShortNames(String name, SubjectNameStrategy expected) {
        assertThat(SubjectNameStrategy.parse("value.subject.name.strategy", name)).isEqualTo(expected);
    }

    @Test
    void unsetIsTopic() {
        assertThat(SubjectNameStrategy.parse("key.subject.name.strategy", null)).isEqualTo(SubjectNameStrategy.TOPIC);
        assertThat(SubjectNameStrategy.parse("key.subject.name.strategy", " ")).isEqualTo(SubjectNameStrategy.TOPIC);
    }

    @Test
    void customStrategyIsRefusedNamingTheSettingAndTheChoices() {
        assertThatThrownBy(() -> SubjectNameStrategy.parse("value.subject.name.strategy", "com.example.MyStrategy"))
                .isInstanceOf(ConfigException.class).hasMessageContaining("value.subject.name.strategy")
                .hasMessageContaining("com.example.MyStrategy").hasMessageContaining("topic-record")
                .hasMessageContaining("io.confluent.kafka.serializers.subject.RecordNameStrategy");
    }

    @Test
    void subjects() {
        assertThat(SubjectNameStrategy.TOPIC.subject("billing", false, SUMMARY)).isEqualTo("billing-value");
        assertThat(SubjectNameStrategy.TOPIC.subject("billing", true, SUMMARY)).isEqualTo("billing-key");
        assertThat(SubjectNameStrategy.RECORD.subject("billing", false, SUMMARY))
                .isEqualTo("dev.fencedwrites.demo.BillingSummary");
        assertThat(SubjectNameStrategy.TOPIC_RECORD.subject("billing", true, SUMMARY))
                .isEqualTo("billing-dev.fencedwrites.demo.BillingSummary");
    }

    @Test
    void recordStrategiesNeedANamedType() {
        Schema array = Schema.createArray(Schema.create(Schema.Type.INT));
        assertThat(SubjectNameStrategy.TOPIC.subject("t", false, array)).isEqualTo("t-value");
        assertThatThrownBy(() -> SubjectNameStrategy.RECORD.subject("t", false, array))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("named Avro type")
                .hasMessageContaining("array");
    }
}
