package dev.fencedwrites.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.avro.AvroDeserializer;
import dev.fencedwrites.avro.InMemorySchemaRegistryClient;
import dev.fencedwrites.contract.FenceHeaders;
import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.util.Optional;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Test;

/**
 * The lines {@code ./fence consume} and {@code ./fence rejected} print for records that do not decode:
 * the record's line carries the reason, and nothing escapes to stop the reader.
 */
class ReaderLinesTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Schema NUMBERS = new Schema.Parser().parse("{\"type\":\"record\",\"name\":\"N\",\"fields\":["
            + "{\"name\":\"x\",\"type\":\"double\"},{\"name\":\"s\",\"type\":\"string\"}]}");
    private final AvroDeserializer<Object> values = new AvroDeserializer<>(oneSchema(7, NUMBERS), null);

    @Test
    void consumePrintsAValueDeclaringTwoGigabytesWithItsErrorInsteadOfDecodingIt() throws Exception {
        byte[] hostile = wire(7, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 0xF0, 0xFF, 0xFF, 0xFF, 0x0F, 'a');

        JsonNode line = JSON.readTree(ConsumeCommand.json(record("k1", hostile, new RecordHeaders()), values));

        assertThat(line.path("key").asText()).isEqualTo("k1");
        assertThat(line.has("value")).isFalse();
        assertThat(line.path("value_error").asText()).contains("schema id 7", "field s", "bytes, but only 1 remain");
    }

    @Test
    void consumePrintsAnUnknownSchemaIdWithItsError() throws Exception {
        JsonNode line = JSON.readTree(ConsumeCommand.json(record("k2", wire(8, 0), new RecordHeaders()), values));

        assertThat(line.path("value_error").asText()).contains("schema id 8");
    }

    /** A double's NaN is no JSON number (Avro 1.12 prints it as a string); such a value is still a value, not an error. */
    @Test
    void consumePrintsAValueHoldingNotANumber() throws Exception {
        byte[] nan = wire(7, 0, 0, 0, 0, 0, 0, 0xF8, 0x7F, 2, 'o');

        JsonNode line = JSON.readTree(ConsumeCommand.json(record("k3", nan, new RecordHeaders()), values));

        assertThat(line.has("value_error")).as(line.toString()).isFalse();
        assertThat(line.path("value").path("x").asText()).isEqualTo("NaN");
        assertThat(line.path("value").path("s").asText()).isEqualTo("o");
    }

    @Test
    void consumePrintsASmallDecimalAsWrittenNotInExponentForm() throws Exception {
        Schema tiny = new Schema.Parser().parse("""
                {"type": "record", "name": "Rate", "fields": [
                  {"name": "rate", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 8}}]}""");
        GenericRecord value = new GenericData.Record(tiny);
        value.put("rate", ByteBuffer.wrap(BigInteger.ONE.toByteArray()));

        String line = ConsumeCommand.json(record("k9", wire(10, tiny, value), new RecordHeaders()),
                new AvroDeserializer<>(oneSchema(10, tiny), null));

        assertThat(line).contains("\"rate\":0.00000001").doesNotContain("E-8");
    }

    @Test
    void consumePrintsLogicalTypesAsUsersReadThem() throws Exception {
        Schema logical = new Schema.Parser().parse("""
                {"type": "record", "name": "L", "fields": [
                  {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
                  {"name": "price", "type": ["null", {"type": "fixed", "name": "F", "size": 4, "logicalType": "decimal",
                    "precision": 8, "scale": 3}]},
                  {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
                  {"name": "atMicros", "type": {"type": "long", "logicalType": "timestamp-micros"}},
                  {"name": "day", "type": {"type": "int", "logicalType": "date"}},
                  {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
                  {"name": "plain", "type": "long"}]}""");
        GenericRecord value = new GenericData.Record(logical);
        value.put("amount", ByteBuffer.wrap(BigInteger.valueOf(123_450).toByteArray()));
        value.put("price", new GenericData.Fixed(logical.getField("price").schema().getTypes().get(1),
                ByteBuffer.allocate(4).putInt(-1_500).array()));
        value.put("at", 1_700_000_000_123L);
        value.put("atMicros", 1_700_000_000_123_456L);
        value.put("day", 19_000);
        value.put("id", "0f8fad5b-d9cb-469f-a165-70867728950e");
        value.put("plain", 1_700_000_000_123L);
        AvroDeserializer<Object> decoder = new AvroDeserializer<>(oneSchema(9, logical), null);

        JsonNode line = JSON.readTree(ConsumeCommand.json(record("k0", wire(9, logical, value), new RecordHeaders()), decoder))
                .path("value");

        assertThat(line.path("amount").isNumber()).as(line.toString()).isTrue();
        assertThat(line.path("amount").decimalValue()).isEqualByComparingTo("1234.50");
        assertThat(line.path("price").decimalValue()).isEqualByComparingTo("-1.500");
        assertThat(line.path("at").asText()).isEqualTo("2023-11-14T22:13:20.123Z");
        assertThat(line.path("atMicros").asText()).isEqualTo("2023-11-14T22:13:20.123456Z");
        assertThat(line.path("day").asText()).isEqualTo("2022-01-08");
        assertThat(line.path("id").asText()).isEqualTo("0f8fad5b-d9cb-469f-a165-70867728950e");
        assertThat(line.path("plain").asLong()).isEqualTo(1_700_000_000_123L);
    }

    @Test
    void rejectedShowsWhenTheRecordWasWrittenAndWhenTheEnforcerRejectedIt() throws Exception {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.REJECTED_REASON, FenceHeaders.encode("STALE_TOKEN"));
        headers.add(FenceHeaders.REJECTED_TIME, FenceHeaders.encode(1_700_000_060_000L));
        ConsumerRecord<String, byte[]> record = record("k7", new byte[]{1}, headers); // written at 1_700_000_000_000

        assertThat(RejectedCommand.text(record)).startsWith("2023-11-14T22:13:20Z  k7  ")
                .contains("  rejected=2023-11-14T22:14:20Z");
        JsonNode json = JSON.readTree(RejectedCommand.json(record));
        assertThat(json.path("time").asText()).isEqualTo("2023-11-14T22:13:20Z");
        assertThat(json.path("rejected_time").asText()).isEqualTo("2023-11-14T22:14:20Z");
    }

    @Test
    void rejectedShowsTheExpiryFloorARecordWasBelowAndNoneOtherwise() throws Exception {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.REJECTED_REASON, FenceHeaders.encode("STALE_TOKEN"));
        headers.add(FenceHeaders.REJECTED_HIGHEST, FenceHeaders.encode("784"));
        headers.add(FenceHeaders.REJECTED_FLOOR, FenceHeaders.encode(784L));
        ConsumerRecord<String, byte[]> below = record("k8", new byte[]{1}, headers);
        RecordHeaders ruleHeaders = new RecordHeaders();
        ruleHeaders.add(FenceHeaders.REJECTED_REASON, FenceHeaders.encode("STALE_TOKEN"));
        ruleHeaders.add(FenceHeaders.REJECTED_HIGHEST, FenceHeaders.encode("784"));
        ConsumerRecord<String, byte[]> rule = record("k9", new byte[]{1}, ruleHeaders);

        assertThat(RejectedCommand.text(below)).contains("  highest=784  STALE_TOKEN").contains("  floor=784");
        assertThat(JSON.readTree(RejectedCommand.json(below)).path("floor").asText()).isEqualTo("784");
        assertThat(RejectedCommand.text(rule)).doesNotContain("floor=");
        assertThat(JSON.readTree(RejectedCommand.json(rule)).path("floor").isNull()).isTrue();

        // That copy sent back to the input: rejected ALREADY_REJECTED, it keeps the earlier rejection's headers, and the floor
        // it names belongs to that rejection, not to this one.
        RecordHeaders sentBack = new RecordHeaders(headers.toArray());
        sentBack.add(FenceHeaders.REJECTED_REASON, FenceHeaders.encode("ALREADY_REJECTED"));
        sentBack.add(FenceHeaders.REJECTED_HIGHEST, FenceHeaders.encode(""));
        ConsumerRecord<String, byte[]> again = record("k8", new byte[]{1}, sentBack);
        assertThat(RejectedCommand.text(again)).contains("ALREADY_REJECTED").doesNotContain("floor=");
        assertThat(JSON.readTree(RejectedCommand.json(again)).path("floor").isNull()).isTrue();
    }

    @Test
    void rejectedShowsTheSinksErrorForAMalformedValue() {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.REJECTED_REASON, FenceHeaders.encode("MALFORMED_VALUE"));
        headers.add(FenceHeaders.REJECTED_STAGE, FenceHeaders.encode("sink"));
        headers.add(FenceHeaders.SOURCE_TOPIC, FenceHeaders.encode("fenced-writes-accepted"));
        headers.add("__connect.errors.partition", FenceHeaders.encode("2"));
        headers.add("__connect.errors.offset", FenceHeaders.encode("41"));
        headers.add("__connect.errors.exception.message",
                FenceHeaders.encode("cannot decode Avro payload with schema id 7:\n field s: string of 2147483000 bytes"));

        String text = RejectedCommand.text(record("k4", new byte[]{0}, headers));

        assertThat(text).contains("MALFORMED_VALUE", "stage=sink", "source=fenced-writes-accepted-2@41",
                "error=cannot decode Avro payload with schema id 7: field s: string of 2147483000 bytes").doesNotContain("\n");
    }

    @Test
    void rejectedKeepsTheLineShortForALongError() {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.REJECTED_REASON, FenceHeaders.encode("MALFORMED_VALUE"));
        headers.add("__connect.errors.exception.message", FenceHeaders.encode("x".repeat(10_000)));

        assertThat(RejectedCommand.text(record("k5", null, headers)))
                .endsWith("error=" + "x".repeat(RejectedCommand.ERROR_WIDTH) + "...");
    }

    @Test
    void rejectedLeavesTheErrorOffTheTextOfAFencedWriteButKeepsItInJson() throws Exception {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.REJECTED_REASON, FenceHeaders.encode("STALE_TOKEN"));
        headers.add("__connect.errors.exception.message", FenceHeaders.encode("STALE_TOKEN: token 5 < 7"));
        ConsumerRecord<String, byte[]> record = record("k6", new byte[]{1}, headers);

        assertThat(RejectedCommand.text(record)).doesNotContain("error=");
        assertThat(JSON.readTree(RejectedCommand.json(record)).path("error").asText()).isEqualTo("STALE_TOKEN: token 5 < 7");
    }

    /** A reduced copy of a record with a huge key: the line names what was left out and shows no megabyte key. */
    @Test
    void rejectedShowsWhatAReducedCopyLeftOutAndCutsAHugeKey() throws Exception {
        RecordHeaders reference = new RecordHeaders();
        reference.add(FenceHeaders.REJECTED_REASON, FenceHeaders.encode("TOO_LARGE"));
        reference.add(FenceHeaders.REJECTED_VALUE_OMITTED, FenceHeaders.encode("true"));
        reference.add(FenceHeaders.REJECTED_HEADERS_OMITTED, FenceHeaders.encode("2"));
        reference.add(FenceHeaders.REJECTED_KEY_OMITTED, FenceHeaders.encode("true"));
        reference.add(FenceHeaders.SOURCE_KEY_BYTES, FenceHeaders.encode("2000000"));
        RecordHeaders withoutValue = new RecordHeaders();
        withoutValue.add(FenceHeaders.REJECTED_REASON, FenceHeaders.encode("KEY_TOO_LARGE"));
        withoutValue.add(FenceHeaders.REJECTED_VALUE_OMITTED, FenceHeaders.encode("true"));

        String referenceLine = RejectedCommand.text(record(null, null, reference));
        String hugeKeyLine = RejectedCommand.text(record("k".repeat(1_000_000), null, withoutValue));

        assertThat(referenceLine).contains("(key omitted, 2000000 bytes)", "omitted=value,headers(2),key");
        assertThat(hugeKeyLine).contains("k".repeat(RejectedCommand.KEY_WIDTH) + "...(1000000 bytes)", "omitted=value")
                .hasSizeLessThan(400);
        JsonNode json = JSON.readTree(RejectedCommand.json(record(null, null, reference)));
        assertThat(json.path("omitted").asText()).isEqualTo("value,headers(2),key");
        assertThat(json.path("source_key_bytes").asText()).isEqualTo("2000000");
    }

    private static ConsumerRecord<String, byte[]> record(String key, byte[] value, RecordHeaders headers) {
        return new ConsumerRecord<>("t", 0, 3L, 1_700_000_000_000L, TimestampType.CREATE_TIME, -1,
                value == null ? -1 : value.length,
                key, value, headers, Optional.empty());
    }

    /** The Confluent wire format around hand-written Avro bytes. */
    private static byte[] wire(int schemaId, int... avro) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(0);
        out.writeBytes(ByteBuffer.allocate(4).putInt(schemaId).array());
        for (int b : avro) {
            out.write(b);
        }
        return out.toByteArray();
    }

    /** The Confluent wire format around {@code value} written with {@code schema}. */
    private static byte[] wire(int schemaId, Schema schema, GenericRecord value) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(0);
        out.writeBytes(ByteBuffer.allocate(4).putInt(schemaId).array());
        BinaryEncoder encoder = EncoderFactory.get().directBinaryEncoder(out, null);
        new GenericDatumWriter<GenericRecord>(schema).write(value, encoder);
        encoder.flush();
        return out.toByteArray();
    }

    /** A registry that knows one schema, under {@code id}. */
    private static InMemorySchemaRegistryClient oneSchema(int id, Schema schema) {
        InMemorySchemaRegistryClient registry = new InMemorySchemaRegistryClient(id);
        registry.register("numbers-value", schema);
        return registry;
    }
}
