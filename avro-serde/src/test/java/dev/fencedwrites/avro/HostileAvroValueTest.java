package dev.fencedwrites.avro;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.sun.management.ThreadMXBean;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.testing.FakeSchemaRegistry;
import dev.fencedwrites.testing.FakeSchemaRegistry.Answer;
import java.lang.management.ManagementFactory;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.avro.Conversions;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.common.errors.SerializationException;
import org.assertj.core.groups.Tuple;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Values written to hurt the reader: lengths and counts that claim more than the value
 * holds, items that encode in no bytes, indexes out of range, truncated or padded payloads, deep
 * nesting, bad logical-type data. Each is a {@link SerializationException} saying what is wrong
 * and where, never an {@link Error}, and is refused before anything of the claimed size is allocated.
 */
class HostileAvroValueTest {
    private static final String TOPIC = "hostile";
    /** Far more than any refusal needs; a claimed 2 GB allocation exceeds it by two orders of magnitude. */
    private static final long ALLOCATION_BOUND = 16L << 20;

    private final InMemorySchemaRegistryClient registry = new InMemorySchemaRegistryClient(100);
    private final AvroDeserializer<Object> generic = new AvroDeserializer<>(registry, null);

    private int id(String fields) {
        return registry.register(TOPIC + "-value",
                new Schema.Parser().parse("{\"type\":\"record\",\"name\":\"R\",\"fields\":[" + fields + "]}"));
    }

    /**
     * Deserializes {@code value} expecting a refusal; checks that no more than {@link #ALLOCATION_BOUND} was allocated on the
     * way.
     */
    private Throwable refusal(byte[] value) {
        ThreadMXBean threads = (ThreadMXBean) ManagementFactory.getThreadMXBean();
        long before = threads.getCurrentThreadAllocatedBytes();
        Throwable thrown = catchThrowable(() -> generic.deserialize(TOPIC, value));
        long allocated = threads.getCurrentThreadAllocatedBytes() - before;
        assertThat(thrown).as("refused with the serde's exception").isInstanceOf(SerializationException.class)
                .hasMessageContaining("on " + TOPIC);
        assertThat(allocated).as("bytes allocated while refusing a %d-byte value", value.length).isLessThan(ALLOCATION_BOUND);
        return thrown;
    }

    @Test
    void aStringLongerThanTheValueIsRefusedBeforeItIsAllocated() {
        int id = id("{\"name\":\"s\",\"type\":\"string\"}");

        assertThat(refusal(AvroPayload.withSchemaId(id).varint(2_147_483_000).raw('a', 'b', 'c').bytes()))
                .hasMessageContaining("field s").hasMessageContaining("2147483000 bytes").hasMessageContaining("only 3 remain");
    }

    @Test
    void bytesLongerThanTheValueAreRefusedBeforeTheyAreAllocated() {
        int id = id("{\"name\":\"b\",\"type\":\"bytes\"}");

        assertThat(refusal(AvroPayload.withSchemaId(id).varint(2_000_000_000).raw(1, 2).bytes()))
                .hasMessageContaining("field b").hasMessageContaining("2000000000 bytes").hasMessageContaining("only 2 remain");
    }

    @Test
    void aFixedLargerThanTheValueIsRefusedBeforeItIsAllocated() {
        int id = id("{\"name\":\"f\",\"type\":{\"type\":\"fixed\",\"name\":\"Huge\",\"size\":2147483000}}");

        assertThat(refusal(AvroPayload.withSchemaId(id).raw(1, 2, 3).bytes()))
                .hasMessageContaining("field f").hasMessageContaining("2147483000 bytes").hasMessageContaining("only 3 remain");
    }

    @Test
    void anArrayCountLargerThanTheValueIsRefusedBeforeItIsAllocated() {
        int id = id("{\"name\":\"xs\",\"type\":{\"type\":\"array\",\"items\":\"int\"}}");

        assertThat(refusal(AvroPayload.withSchemaId(id).varint(2_000_000_000).varint(1).varint(2).varint(0).bytes()))
                .hasMessageContaining("field xs").hasMessageContaining("2000000000 items")
                .hasMessageContaining("only 3 bytes remain");
    }

    @Test
    void aMapCountLargerThanTheValueIsRefusedBeforeItIsAllocated() {
        int id = id("{\"name\":\"m\",\"type\":{\"type\":\"map\",\"values\":\"int\"}}");

        assertThat(refusal(AvroPayload.withSchemaId(id).varint(1_500_000_000).string("k").varint(7).varint(0).bytes()))
                .hasMessageContaining("field m").hasMessageContaining("1500000000 items");
    }

    /** Nulls take no bytes, so comparing the count with the bytes left cannot catch this; a budget per value does. */
    @Test
    void anArrayOfNullsWithAHugeCountIsRefused() {
        int id = id("{\"name\":\"xs\",\"type\":{\"type\":\"array\",\"items\":\"null\"}}");

        assertThat(refusal(AvroPayload.withSchemaId(id).varint(2_000_000_000).varint(0).bytes()))
                .hasMessageContaining("field xs").hasMessageContaining("2000000000 items that take no bytes");
    }

    @Test
    void anArrayOfEmptyRecordsWithAHugeCountIsRefused() {
        int id = id(
                "{\"name\":\"xs\",\"type\":{\"type\":\"array\","
                        + "\"items\":{\"type\":\"record\",\"name\":\"Empty\",\"fields\":[]}}}");

        assertThat(refusal(AvroPayload.withSchemaId(id).varint(2_000_000_000).varint(0).bytes()))
                .hasMessageContaining("2000000000 items that take no bytes");
    }

    @Test
    void itemsThatTakeNoBytesAreAllowedUpToAThousandMoreThanTheValuesLength() {
        int id = id("{\"name\":\"xs\",\"type\":{\"type\":\"array\",\"items\":\"null\"}},{\"name\":\"pad\",\"type\":\"string\"}");
        byte[] allowed = AvroPayload.withSchemaId(id).varint(1_000 + 100).varint(0).string("x".repeat(95)).bytes();
        byte[] refused = AvroPayload.withSchemaId(id).varint(1_000 + 101).varint(0).string("x".repeat(95)).bytes();
        assertThat(allowed.length - 5).as("the Avro payload after the wire-format header").isEqualTo(100);

        GenericRecord decoded = (GenericRecord) generic.deserialize(TOPIC, allowed);

        assertThat((List<?>) decoded.get("xs")).hasSize(1_100).containsOnlyNulls();
        assertThat(refusal(refused)).hasMessageContaining("1101 items that take no bytes").hasMessageContaining("at most 1100");
    }

    @ParameterizedTest
    @ValueSource(strings = {"string", "bytes"})
    void aNegativeLengthIsRefused(String type) {
        int id = id("{\"name\":\"v\",\"type\":\"" + type + "\"}");

        assertThat(refusal(AvroPayload.withSchemaId(id).varint(-1).raw(0, 0).bytes()))
                .hasMessageContaining("field v").hasMessageContaining(type + " length -1 is negative");
    }

    @Test
    void aBlockCountThatCannotBeNegatedIsRefused() {
        int id = id("{\"name\":\"xs\",\"type\":{\"type\":\"array\",\"items\":\"int\"}}");

        assertThat(refusal(AvroPayload.withSchemaId(id).varint(Long.MIN_VALUE).varint(0).varint(0).bytes()))
                .hasMessageContaining("field xs").hasMessageContaining("block count " + Long.MIN_VALUE);
    }

    @Test
    void aNegativeBlockSizeIsRefused() {
        int id = id("{\"name\":\"xs\",\"type\":{\"type\":\"array\",\"items\":\"int\"}}");

        assertThat(refusal(AvroPayload.withSchemaId(id).varint(-2).varint(-5).varint(1).varint(2).varint(0).bytes()))
                .hasMessageContaining("field xs").hasMessageContaining("block size -5 is negative");
    }

    @Test
    void aBlockSizeThatDisagreesWithItsItemsIsRefused() {
        int id = id("{\"name\":\"xs\",\"type\":{\"type\":\"array\",\"items\":\"int\"}}");

        assertThat(refusal(AvroPayload.withSchemaId(id).varint(-2).varint(1).varint(1).varint(2).varint(0).bytes()))
                .hasMessageContaining("field xs").hasMessageContaining("block size says 1 bytes, its 2 items took 2");
    }

    @ParameterizedTest
    @ValueSource(ints = {3, 7, -1})
    void anEnumIndexOutOfRangeIsRefused(int index) {
        int id = id("{\"name\":\"c\",\"type\":{\"type\":\"enum\",\"name\":\"Color\",\"symbols\":[\"RED\",\"GREEN\",\"BLUE\"]}}");

        assertThat(refusal(AvroPayload.withSchemaId(id).varint(index).bytes()))
                .hasMessageContaining("field c").hasMessageContaining("enum index " + index + " is out of range")
                .hasMessageContaining("Color has 3 symbols");
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 9, -1})
    void aUnionIndexOutOfRangeIsRefused(int index) {
        int id = id("{\"name\":\"u\",\"type\":[\"null\",\"string\"]}");

        assertThat(refusal(AvroPayload.withSchemaId(id).varint(index).string("x").bytes()))
                .hasMessageContaining("field u").hasMessageContaining("union index " + index + " is out of range")
                .hasMessageContaining("2 branches");
    }

    @Test
    void aTruncatedValueIsRefused() {
        int id = id("{\"name\":\"n\",\"type\":\"long\"},{\"name\":\"s\",\"type\":\"string\"}");
        byte[] whole = AvroPayload.withSchemaId(id).varint(42).string("hello").bytes();

        assertThat(refusal(Arrays.copyOf(whole, whole.length - 1)))
                .hasMessageContaining("field s").hasMessageContaining("truncated");
        assertThat(refusal(Arrays.copyOf(whole, 5))).hasMessageContaining("field n").hasMessageContaining("truncated");
    }

    @Test
    void bytesAfterTheEndOfTheRecordAreRefused() {
        int id = id("{\"name\":\"n\",\"type\":\"long\"}");

        assertThat(refusal(AvroPayload.withSchemaId(id).varint(42).raw(1, 2, 3).bytes()))
                .hasMessageContaining("3 bytes left after the end of the value");
    }

    @Test
    void anOverlongVarintIsRefused() {
        int id = id("{\"name\":\"n\",\"type\":\"long\"}");

        assertThat(refusal(
                AvroPayload.withSchemaId(id).raw(0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01).bytes()))
                .hasMessageContaining("field n").hasMessageContaining("malformed long");
    }

    @Test
    void anIntVarintBeyondThirtyTwoBitsIsRefused() {
        int id = id("{\"name\":\"n\",\"type\":\"int\"}");

        assertThat(refusal(AvroPayload.withSchemaId(id).raw(0xFF, 0xFF, 0xFF, 0xFF, 0x7F).bytes()))
                .hasMessageContaining("field n").hasMessageContaining("malformed int");
    }

    @Test
    void aBooleanByteOtherThanZeroOrOneIsRefused() {
        int id = id("{\"name\":\"ok\",\"type\":\"boolean\"}");

        assertThat(refusal(AvroPayload.withSchemaId(id).raw(2).bytes())).hasMessageContaining("field ok")
                .hasMessageContaining("boolean byte 2");
    }

    private static final String NODE = "{\"type\":\"record\",\"name\":\"Node\",\"fields\":[{\"name\":\"v\",\"type\":\"int\"},"
            + "{\"name\":\"next\",\"type\":[\"null\",\"Node\"]}]}";

    /** A linked list of {@code nodes} Node records, each nested in the one before: 2 bytes a node. */
    private byte[] linkedList(int nodes) {
        int id = registry.register(TOPIC + "-value", new Schema.Parser().parse(NODE));
        AvroPayload payload = AvroPayload.withSchemaId(id);
        for (int i = 1; i < nodes; i++) {
            payload.varint(i).varint(1);
        }
        return payload.varint(nodes).varint(0).bytes();
    }

    @Test
    void nestingDeeperThanTheLimitIsRefusedWithoutOverflowingTheStack() {
        Throwable refusal = refusal(linkedList(200_000));

        assertThat(refusal).hasMessageContaining("field next.next.next.next.(92 more).next.next.next.next: nested deeper than "
                + AvroPayloadCheck.MAX_NESTING);
        assertThat(refusal.getMessage()).as("short enough to read in a log line").hasSizeLessThan(300);
    }

    @Test
    void nestingUpToTheLimitDecodes() {
        GenericRecord node = (GenericRecord) generic.deserialize(TOPIC, linkedList(AvroPayloadCheck.MAX_NESTING));
        int depth = 1;
        while (node.get("next") != null) {
            node = (GenericRecord) node.get("next");
            depth++;
        }

        assertThat(depth).isEqualTo(AvroPayloadCheck.MAX_NESTING);
        assertThat(refusal(linkedList(AvroPayloadCheck.MAX_NESTING + 1))).hasMessageContaining("nested deeper than");
    }

    private static final String DECIMAL = "{\"name\":\"d\",\"type\":{\"type\":\"bytes\",\"logicalType\":\"decimal\","
            + "\"precision\":4,\"scale\":2}}";

    @Test
    void aDecimalWithNoBytesIsRefused() {
        int id = id(DECIMAL);

        assertThat(refusal(AvroPayload.withSchemaId(id).varint(0).bytes())).hasMessageContaining("field d")
                .hasMessageContaining("decimal(4,2) with no bytes");
    }

    @Test
    void aDecimalWithMoreDigitsThanItsPrecisionIsRefused() {
        int id = id(DECIMAL);
        byte[] unscaled = BigInteger.valueOf(123_456).toByteArray();

        assertThat(refusal(AvroPayload.withSchemaId(id).varint(unscaled.length).raw(unsigned(unscaled)).bytes()))
                .hasMessageContaining("field d").hasMessageContaining("more digits than its precision 4");
    }

    @Test
    void aDecimalWithinItsPrecisionDecodes() {
        int id = id(DECIMAL);
        byte[] unscaled = BigInteger.valueOf(-9_999).toByteArray();

        GenericRecord decoded = (GenericRecord) generic.deserialize(TOPIC,
                AvroPayload.withSchemaId(id).varint(unscaled.length).raw(unsigned(unscaled)).bytes());

        Schema field = decoded.getSchema().getField("d").schema();
        assertThat(new Conversions.DecimalConversion().fromBytes((ByteBuffer) decoded.get("d"), field, field.getLogicalType()))
                .isEqualByComparingTo(new BigDecimal("-99.99"));
    }

    @ParameterizedTest
    @ValueSource(ints = {-1, 86_400_000, 90_000_000})
    void aTimeOfDayOutsideTheDayIsRefused(int millis) {
        int id = id("{\"name\":\"t\",\"type\":{\"type\":\"int\",\"logicalType\":\"time-millis\"}}");

        assertThat(refusal(AvroPayload.withSchemaId(id).varint(millis).bytes()))
                .hasMessageContaining("field t").hasMessageContaining("time-millis " + millis + " is not a time of day");
    }

    @Test
    void theSpecificReaderRefusesAWriterSchemaWithNoGeneratedClass() {
        int id = registry.register(TOPIC + "-value", new Schema.Parser().parse(
                "{\"type\":\"record\",\"name\":\"NoSuchClass\",\"namespace\":\"nowhere\",\"fields\":[{\"name\":\"n\","
                        + "\"type\":\"int\"}]}"));
        AvroDeserializer<Object> specific = new AvroDeserializer<>(registry, null);
        specific.configure(Map.of(AvroSerdeConfig.SPECIFIC_AVRO_READER, "true"), false);

        assertThat(catchThrowable(() -> specific.deserialize(TOPIC, AvroPayload.withSchemaId(id).varint(1).bytes())))
                .isInstanceOf(SerializationException.class).hasMessageContaining("nowhere.NoSuchClass");
    }

    /** Blocks with a byte size (negative count), as Avro's blocking encoder writes them, and every type at once still decode. */
    @Test
    void wellFormedValuesOfEveryKindStillDecode() {
        int id = id("{\"name\":\"xs\",\"type\":{\"type\":\"array\",\"items\":\"int\"}},"
                + "{\"name\":\"m\",\"type\":{\"type\":\"map\",\"values\":[\"null\",\"string\"]}},"
                + "{\"name\":\"c\",\"type\":{\"type\":\"enum\",\"name\":\"Color\",\"symbols\":[\"RED\",\"GREEN\"]}},"
                + "{\"name\":\"f\",\"type\":{\"type\":\"fixed\",\"name\":\"Two\",\"size\":2}},"
                + "{\"name\":\"ok\",\"type\":\"boolean\"},{\"name\":\"x\",\"type\":\"double\"},{\"name\":\"y\","
                + "\"type\":\"float\"},"
                + "{\"name\":\"b\",\"type\":\"bytes\"},{\"name\":\"n\",\"type\":\"null\"}");
        byte[] value = AvroPayload.withSchemaId(id)
                .varint(-3).varint(3).varint(1).varint(-2).varint(3).varint(0) // xs: one block of 3 items in 3 bytes
                .varint(2).string("a").varint(1).string("A").string("b").varint(0).varint(0) // m: {a: "A", b: null}
                .varint(1) // c: GREEN
                .raw(7, 9) // f
                .raw(1) // ok: true
                .raw(0, 0, 0, 0, 0, 0, 0xF0, 0x3F) // x: 1.0
                .raw(0, 0, 0x80, 0x3F) // y: 1.0f
                .varint(2).raw(0xCA, 0xFE) // b
                .bytes();

        GenericRecord decoded = (GenericRecord) generic.deserialize(TOPIC, value);

        assertThat(decoded.get("xs")).asList().containsExactly(1, -2, 3);
        assertThat(((Map<?, ?>) decoded.get("m")).entrySet())
                .extracting(e -> e.getKey().toString(), e -> String.valueOf(e.getValue()))
                .containsExactlyInAnyOrder(Tuple.tuple("a", "A"),
                        Tuple.tuple("b", "null"));
        assertThat(decoded.get("c")).hasToString("GREEN");
        assertThat(((GenericData.Fixed) decoded.get("f")).bytes()).containsExactly(7, 9);
        assertThat(decoded.get("ok")).isEqualTo(true);
        assertThat(decoded.get("x")).isEqualTo(1.0);
        assertThat(decoded.get("y")).isEqualTo(1.0f);
        assertThat(((ByteBuffer) decoded.get("b")).array()).containsExactly(0xCA, 0xFE);
    }

    /**
     * What the registry serves as the writer schema can be broken too: each case is the serde's exception, naming the schema id.
     */
    @ParameterizedTest
    @ValueSource(strings = {
            "{\"schema\":\"{\\\"type\\\":\\\"record\\\",\\\"name\\\":\\\"R\\\",\\\"fields\\\":[{\\\"name\\\":\\\"n\\\","
                    + "\\\"type\\\":\\\"int\\\",\\\"default\\\":\\\"abc\\\"}]}\"}",
            "{\"schema\":\"{\\\"type\\\":\\\"object\\\",\\\"properties\\\":{}}\",\"schemaType\":\"JSON\"}",
            "{\"schema\":\"{\\\"type\\\":\\\"object\\\",\\\"properties\\\":{}}\"}",
            "{\"schema\":\"syntax = \\\"proto3\\\"; message M {}\",\"schemaType\":\"PROTOBUF\"}",
            "{\"schema\":\"{not json\"}",
            "{\"schemaType\":\"AVRO\"}"})
    void aWriterSchemaTheRegistryServesBrokenIsASerializationException(String answer) throws Exception {
        try (FakeSchemaRegistry scripted = FakeSchemaRegistry.http(r -> Answer.ok(answer))) {
            AvroDeserializer<Object> deserializer = new AvroDeserializer<>(new RestSchemaRegistryClient(
                    Map.of(AvroSerdeConfig.SCHEMA_REGISTRY_URL, scripted.url(), AvroSerdeConfig.MAX_RETRIES, 0)), null);

            assertThat(catchThrowable(() -> deserializer.deserialize(TOPIC, AvroPayload.withSchemaId(77).varint(1).bytes())))
                    .isInstanceOf(SerializationException.class).hasMessageContaining("schema id 77");
        }
    }

    @Test
    void theBillingSummaryContractStillRoundTrips() {
        BillingSummary summary = BillingSummary.newBuilder().setCustomerId("customer-42").setBillingPeriod("2026-11")
                .setAmountMinor(123_456L)
                .setCurrency("EUR").setLineItems(17).setComputedAt(Instant.parse("2026-11-30T23:59:59.123Z"))
                .setComputedBy("worker-a").build();
        byte[] bytes = AvroSerializer.<BillingSummary>forValues(registry).serialize(TOPIC, summary);

        assertThat(new AvroDeserializer<BillingSummary>(registry, BillingSummary.getClassSchema()).deserialize(TOPIC, bytes))
                .isEqualTo(summary);
    }

    private static int[] unsigned(byte[] bytes) {
        int[] out = new int[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            out[i] = bytes[i] & 0xFF;
        }
        return out;
    }
}
