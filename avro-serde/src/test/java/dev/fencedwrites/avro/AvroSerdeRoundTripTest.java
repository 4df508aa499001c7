package dev.fencedwrites.avro;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencedwrites.demo.BillingSummary;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Arrays;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.common.errors.SerializationException;
import org.junit.jupiter.api.Test;

/** The Avro serde in the Confluent wire format, over an in-memory registry. */
class AvroSerdeRoundTripTest {
    private static final String TOPIC = "billing";
    private static final int FIRST_ID = 0x01020304;

    private final InMemorySchemaRegistryClient registry = new InMemorySchemaRegistryClient(FIRST_ID);
    private final AvroSerializer<BillingSummary> serializer = AvroSerializer.forValues(registry);
    private final AvroDeserializer<BillingSummary> specific = new AvroDeserializer<>(registry, BillingSummary.getClassSchema());

    @Test
    void writesMagicByteZeroThenFourByteSchemaId() {
        byte[] bytes = serializer.serialize(TOPIC, summary());

        assertThat(bytes[0]).isEqualTo((byte) 0);
        assertThat(ByteBuffer.wrap(bytes, 1, 4).getInt()).isEqualTo(FIRST_ID);
        assertThat(Arrays.copyOfRange(bytes, 1, 5)).containsExactly(1, 2, 3, 4);
    }

    @Test
    void registersWriterSchemaUnderTopicValueSubject() {
        serializer.serialize(TOPIC, summary());

        assertThat(registry.idOf(TOPIC + "-value", BillingSummary.getClassSchema())).isEqualTo(FIRST_ID);
    }

    @Test
    void roundTripsSpecificRecord() {
        BillingSummary summary = summary();

        BillingSummary read = specific.deserialize(TOPIC, serializer.serialize(TOPIC, summary));

        assertThat(read).isEqualTo(summary);
    }

    @Test
    void serializesNullAsNull() {
        assertThat(serializer.serialize(TOPIC, null)).isNull();
    }

    @Test
    void deserializesNullAsNull() {
        assertThat(specific.deserialize(TOPIC, null)).isNull();
    }

    @Test
    void rejectsWrongMagicByte() {
        byte[] bytes = serializer.serialize(TOPIC, summary());
        bytes[0] = 1;

        assertThatThrownBy(() -> specific.deserialize(TOPIC, bytes))
                .isInstanceOf(SerializationException.class)
                .hasMessageContaining("magic byte 1")
                .hasMessageContaining("Confluent wire format");
    }

    @Test
    void rejectsValueShorterThanWireFormatHeader() {
        assertThatThrownBy(() -> specific.deserialize(TOPIC, new byte[]{0, 0, 1}))
                .isInstanceOf(SerializationException.class)
                .hasMessageContaining("3 bytes is too short");
    }

    @Test
    void rejectsUnknownSchemaId() {
        byte[] bytes = serializer.serialize(TOPIC, summary());
        ByteBuffer.wrap(bytes).put(1, (byte) 9);

        assertThatThrownBy(() -> specific.deserialize(TOPIC, bytes))
                .isInstanceOf(SerializationException.class)
                .hasMessageContaining("schema id " + ByteBuffer.wrap(bytes, 1, 4).getInt())
                .hasMessageContaining(TOPIC);
    }

    @Test
    void readsGenericRecordInWriterSchemaWithoutReaderSchema() {
        BillingSummary summary = summary();
        AvroDeserializer<GenericRecord> generic = new AvroDeserializer<>(registry, null);

        GenericRecord read = generic.deserialize(TOPIC, serializer.serialize(TOPIC, summary));

        assertThat(read).isNotInstanceOf(BillingSummary.class);
        assertThat(read.getSchema()).isEqualTo(BillingSummary.getClassSchema());
        assertThat(read.get("customerId")).hasToString(summary.getCustomerId());
        assertThat(read.get("billingPeriod")).hasToString(summary.getBillingPeriod());
        assertThat(read.get("amountMinor")).isEqualTo(summary.getAmountMinor());
        assertThat(read.get("currency")).hasToString(summary.getCurrency());
        assertThat(read.get("lineItems")).isEqualTo(summary.getLineItems());
        assertThat(read.get("computedAt")).isEqualTo(summary.getComputedAt().toEpochMilli());
        assertThat(read.get("computedBy")).hasToString(summary.getComputedBy());
    }

    private static BillingSummary summary() {
        return BillingSummary.newBuilder()
                .setCustomerId("customer-42")
                .setBillingPeriod("2026-11")
                .setAmountMinor(123_456L)
                .setCurrency("EUR")
                .setLineItems(17)
                .setComputedAt(Instant.parse("2026-11-30T23:59:59.123Z"))
                .setComputedBy("worker-a")
                .build();
    }
}
