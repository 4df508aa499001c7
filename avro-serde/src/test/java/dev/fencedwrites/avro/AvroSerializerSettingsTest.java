package dev.fencedwrites.avro;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencedwrites.demo.BillingSummary;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.SchemaBuilder;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.SerializationException;
import org.junit.jupiter.api.Test;

/** Confluent's serializer settings: auto.register.schemas, use.latest.version, subject name strategies. */
class AvroSerializerSettingsTest {
    private static final String TOPIC = "billing";
    private static final String RECORD_NAME = BillingSummary.getClassSchema().getFullName();

    private final InMemorySchemaRegistryClient registry = new InMemorySchemaRegistryClient(100);

    @Test
    void withoutAutoRegisterAnUnregisteredSchemaFailsNamingTheSubject() {
        AvroSerializer<BillingSummary> serializer = AvroSerializer.forValues(registry,
                Map.of(AvroSerdeConfig.AUTO_REGISTER_SCHEMAS, "false"));

        assertThatThrownBy(() -> serializer.serialize(TOPIC, summary())).isInstanceOf(SerializationException.class)
                .hasMessageContaining("'billing-value'").hasMessageContaining("auto.register.schemas=false");
        assertThat(registry.idOf("billing-value", BillingSummary.getClassSchema())).as("nothing registered").isNull();
    }

    @Test
    void withoutAutoRegisterARegisteredSchemaIsLookedUp() {
        int id = registry.register("billing-value", BillingSummary.getClassSchema());
        AvroSerializer<BillingSummary> serializer = AvroSerializer.forValues(registry,
                Map.of(AvroSerdeConfig.AUTO_REGISTER_SCHEMAS, false));

        byte[] bytes = serializer.serialize(TOPIC, summary());

        assertThat(ByteBuffer.wrap(bytes, 1, 4).getInt()).isEqualTo(id);
        assertThat(new AvroDeserializer<BillingSummary>(registry, BillingSummary.getClassSchema()).deserialize(TOPIC, bytes))
                .isEqualTo(summary());
    }

    @Test
    void recordAndTopicRecordStrategiesChooseTheSubject() {
        AvroSerializer.<BillingSummary>forValues(registry,
                Map.of(AvroSerdeConfig.VALUE_SUBJECT_NAME_STRATEGY, "io.confluent.kafka.serializers.subject.RecordNameStrategy"))
                .serialize(TOPIC, summary());
        AvroSerializer.<BillingSummary>forKeys(registry, Map.of(AvroSerdeConfig.KEY_SUBJECT_NAME_STRATEGY, "topic-record"))
                .serialize(TOPIC, summary());

        assertThat(registry.idOf(RECORD_NAME, BillingSummary.getClassSchema())).isNotNull();
        assertThat(registry.idOf(TOPIC + "-" + RECORD_NAME, BillingSummary.getClassSchema())).isNotNull();
        assertThat(registry.idOf("billing-value", BillingSummary.getClassSchema())).isNull();
    }

    @Test
    void theKeySettingOnlyAppliesToKeysAndTheValueSettingToValues() {
        Map<String, Object> settings = Map.of(AvroSerdeConfig.KEY_SUBJECT_NAME_STRATEGY, "record");
        AvroSerializer.<BillingSummary>forValues(registry, settings).serialize(TOPIC, summary());

        assertThat(registry.idOf("billing-value", BillingSummary.getClassSchema())).isNotNull();
        assertThat(registry.idOf(RECORD_NAME, BillingSummary.getClassSchema())).isNull();
    }

    @Test
    void useLatestVersionWritesWithTheLatestSchemaConvertingTheRecord() {
        Schema v1 = SchemaBuilder.record("Order").namespace("shop").fields().requiredString("id").requiredLong("cents")
                .endRecord();
        Schema v2 = SchemaBuilder.record("Order").namespace("shop").fields().requiredLong("cents").requiredString("id")
                .name("note").type().stringType().stringDefault("none").endRecord();
        registry.register("orders-value", v1);
        int latestId = registry.register("orders-value", v2);
        GenericRecord order = new GenericData.Record(v1);
        order.put("id", "o-1");
        order.put("cents", 250L);
        AvroSerializer<GenericRecord> serializer = AvroSerializer.forValues(registry,
                Map.of(AvroSerdeConfig.USE_LATEST_VERSION, "true", AvroSerdeConfig.AUTO_REGISTER_SCHEMAS, "false"));

        byte[] bytes = serializer.serialize("orders", order);

        assertThat(ByteBuffer.wrap(bytes, 1, 4).getInt()).isEqualTo(latestId);
        GenericRecord read = new AvroDeserializer<GenericRecord>(registry, null).deserialize("orders", bytes);
        assertThat(read.getSchema()).isEqualTo(v2);
        assertThat(read.get("id")).hasToString("o-1");
        assertThat(read.get("cents")).isEqualTo(250L);
        assertThat(read.get("note")).hasToString("none");
    }

    @Test
    void useLatestVersionRefusesARecordTheLatestVersionCannotRead() {
        Schema own = SchemaBuilder.record("Order").namespace("shop").fields().requiredString("id").endRecord();
        Schema latest = SchemaBuilder.record("Order").namespace("shop").fields().requiredString("id").requiredLong("cents")
                .endRecord();
        registry.register("orders-value", latest);
        GenericRecord order = new GenericData.Record(own);
        order.put("id", "o-1");

        assertThatThrownBy(() -> AvroSerializer.<GenericRecord>forValues(registry,
                Map.of(AvroSerdeConfig.USE_LATEST_VERSION, true, AvroSerdeConfig.AUTO_REGISTER_SCHEMAS, false))
                .serialize("orders", order)).isInstanceOf(SerializationException.class)
                .hasMessageContaining("latest version of subject 'orders-value'").hasMessageContaining("cents");
    }

    @Test
    void useLatestVersionWithoutTheSubjectFailsNamingIt() {
        assertThatThrownBy(() -> AvroSerializer.<BillingSummary>forValues(registry,
                Map.of(AvroSerdeConfig.USE_LATEST_VERSION, true, AvroSerdeConfig.AUTO_REGISTER_SCHEMAS, false))
                .serialize(TOPIC, summary())).isInstanceOf(SerializationException.class)
                .hasMessageContaining("'billing-value' not found");
    }

    /**
     * As in Confluent's serializer: auto.register.schemas (default true) wins, so use.latest.version alone still registers the
     * record's own schema.
     */
    @Test
    void useLatestVersionAloneStillRegistersTheRecordsOwnSchema() {
        Schema other = SchemaBuilder.record("Other").namespace("shop").fields().requiredString("id").endRecord();
        int otherId = registry.register("billing-value", other);
        AvroSerializer<BillingSummary> serializer = AvroSerializer.forValues(registry,
                Map.of(AvroSerdeConfig.USE_LATEST_VERSION, true));

        byte[] bytes = serializer.serialize(TOPIC, summary());

        int id = ByteBuffer.wrap(bytes, 1, 4).getInt();
        assertThat(id).isNotEqualTo(otherId).isEqualTo(registry.register("billing-value", BillingSummary.getClassSchema()));
    }

    @Test
    void badSettingsAreConfigErrors() {
        assertThatThrownBy(() -> AvroSerializer.<BillingSummary>forValues(registry,
                Map.of(AvroSerdeConfig.VALUE_SUBJECT_NAME_STRATEGY, "x.Y")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("value.subject.name.strategy");
        assertThatThrownBy(
                () -> AvroSerializer.<BillingSummary>forValues(registry, Map.of(AvroSerdeConfig.AUTO_REGISTER_SCHEMAS, "no")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("auto.register.schemas");
        AvroSerializer<BillingSummary> reflective = new AvroSerializer<>();
        assertThatThrownBy(() -> reflective.configure(Map.of(), false)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("schema.registry.url is required");
    }

    @Test
    void reflectiveConfigurationBuildsTheClientFromTheSameMap() {
        AvroSerializer<BillingSummary> serializer = new AvroSerializer<>();
        serializer.configure(Map.of(AvroSerdeConfig.SCHEMA_REGISTRY_URL, "http://127.0.0.1:1", AvroSerdeConfig.MAX_RETRIES, "0",
                AvroSerdeConfig.AUTO_REGISTER_SCHEMAS, "false"), false);

        assertThatThrownBy(() -> serializer.serialize(TOPIC, summary())).isInstanceOf(SerializationException.class)
                .hasMessageContaining("look up schema").hasMessageContaining("'billing-value'")
                .hasMessageContaining("127.0.0.1:1");
    }

    private static BillingSummary summary() {
        return BillingSummary.newBuilder().setCustomerId("customer-42").setBillingPeriod("2026-11").setAmountMinor(123_456L)
                .setCurrency("EUR").setLineItems(17).setComputedAt(Instant.parse("2026-11-30T23:59:59.123Z"))
                .setComputedBy("worker-a").build();
    }
}
