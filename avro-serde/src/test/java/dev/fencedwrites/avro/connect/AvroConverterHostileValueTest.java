package dev.fencedwrites.avro.connect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.fencedwrites.avro.InMemorySchemaRegistryClient;
import dev.fencedwrites.contract.FenceHeaders;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import org.apache.avro.Schema;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.errors.RetriableException;
import org.junit.jupiter.api.Test;

/**
 * The converter on values written to hurt it: a {@link DataException} with the reason,
 * never an {@link Error}; as a worker's value converter it marks the consumed record's headers
 * {@code MALFORMED_VALUE} for Connect's dead-letter reporter to copy.
 */
class AvroConverterHostileValueTest {
    private static final String TOPIC = "fenced-writes-accepted";
    private static final int STRING_ID = 1;
    private static final int NODE_ID = 2;
    private static final int NOT_A_RECORD_ID = 3;
    private static final int NULL_ID = 4;
    private static final Schema NODE = new Schema.Parser()
            .parse("{\"type\":\"record\",\"name\":\"Node\",\"namespace\":\"test\",\"fields\":["
                    + "{\"name\":\"v\",\"type\":\"int\"},{\"name\":\"next\",\"type\":[\"null\",\"Node\"]}]}");

    private final InMemorySchemaRegistryClient registry = registry(
            new Schema.Parser().parse("{\"type\":\"record\",\"name\":\"S\",\"fields\":[{\"name\":\"s\",\"type\":\"string\"}]}"),
            NODE,
            Schema.create(Schema.Type.STRING),
            Schema.create(Schema.Type.NULL));
    private final AvroConverter values = new AvroConverter(registry, false);

    /** A value whose string claims 2 GB: on a worker with a 512 MB heap, Avro alone ends this in OutOfMemoryError. */
    private static byte[] twoGigabyteString() {
        return payload(STRING_ID).varint(2_147_483_000L).raw(1, 2, 3).bytes();
    }

    @Test
    void aValueThatDoesNotDecodeIsADataExceptionAndTheRecordsHeadersSayMalformedValue() {
        Headers headers = new RecordHeaders().add(FenceHeaders.TOKEN, FenceHeaders.encode(5));

        Throwable thrown = catchThrowable(() -> values.toConnectData(TOPIC, headers, twoGigabyteString()));

        assertThat(thrown).isInstanceOf(DataException.class).hasMessageContaining("schema id " + STRING_ID)
                .hasMessageContaining("field s").hasMessageContaining("2147483000 bytes");
        assertThat(header(headers, FenceHeaders.REJECTED_REASON)).isEqualTo("MALFORMED_VALUE");
        assertThat(header(headers, FenceHeaders.REJECTED_STAGE)).isEqualTo(FenceHeaders.STAGE_SINK);
        assertThat(header(headers, FenceHeaders.REJECTED_HIGHEST)).isEmpty();
        assertThat(header(headers, FenceHeaders.SOURCE_TOPIC)).isEqualTo(TOPIC);
        assertThat(header(headers, FenceHeaders.TOKEN)).as("the record's own headers stay").isEqualTo("5");
    }

    @Test
    void aKeyThatDoesNotDecodeGetsNoRejectionHeaders() {
        AvroConverter keys = new AvroConverter(registry, true);
        Headers headers = new RecordHeaders();

        assertThat(catchThrowable(() -> keys.toConnectData(TOPIC, headers, twoGigabyteString())))
                .isInstanceOf(DataException.class);
        assertThat(headers.toArray()).isEmpty();
    }

    @Test
    void readOnlyHeadersDoNotHideTheDataException() {
        RecordHeaders headers = new RecordHeaders();
        headers.setReadOnly();

        assertThat(catchThrowable(() -> values.toConnectData(TOPIC, headers, twoGigabyteString())))
                .isInstanceOf(DataException.class)
                .hasMessageContaining("field s");
    }

    @Test
    void anUnreachableRegistryIsRetriableAndMarksNothing() {
        registry.unreachable(true);
        Headers headers = new RecordHeaders();

        assertThat(catchThrowable(() -> values.toConnectData(TOPIC, headers, payload(STRING_ID).varint(1).raw('x').bytes())))
                .isInstanceOf(RetriableException.class).hasMessageContaining("errors.retry.timeout");
        assertThat(headers.toArray()).isEmpty();
    }

    @Test
    void nestingDeeperThanTheLimitIsADataExceptionNotAStackOverflow() {
        Payload list = payload(NODE_ID);
        for (int i = 0; i < 200_000; i++) {
            list.varint(i).varint(1);
        }

        assertThat(catchThrowable(() -> values.toConnectData(TOPIC, new RecordHeaders(), list.varint(0).varint(0).bytes())))
                .isInstanceOf(DataException.class).hasMessageContaining("nested deeper than 100");
    }

    @Test
    void aRecursiveSchemaWithinTheNestingBoundMapsToStructs() {
        Struct first = (Struct) values
                .toConnectData(TOPIC, new RecordHeaders(), payload(NODE_ID).varint(1).varint(1).varint(2).varint(0).bytes())
                .value();

        assertThat(first.getInt32("v")).isEqualTo(1);
        assertThat(first.getStruct("next").getInt32("v")).isEqualTo(2);
    }

    @Test
    void aValueWhoseSchemaIsNotARecordIsADataExceptionNamingTheType() {
        Headers headers = new RecordHeaders();

        assertThat(
                catchThrowable(() -> values.toConnectData(TOPIC, headers, payload(NOT_A_RECORD_ID).varint(1).raw('x').bytes())))
                .isInstanceOf(DataException.class).hasMessageContaining("not a record but a STRING");
        assertThat(header(headers, FenceHeaders.REJECTED_REASON)).isEqualTo("MALFORMED_VALUE");
    }

    /** A value of schema "null" decodes to null although the record's value is not null: it is no delete, and no record. */
    @Test
    void aValueOfTheNullSchemaIsADataException() {
        assertThat(catchThrowable(() -> values.toConnectData(TOPIC, new RecordHeaders(), payload(NULL_ID).bytes())))
                .isInstanceOf(DataException.class).hasMessageContaining("not a record but a NULL");
    }

    @Test
    void anUnknownSchemaIdIsADataExceptionMarkedMalformed() {
        Headers headers = new RecordHeaders();

        assertThat(catchThrowable(() -> values.toConnectData(TOPIC, headers, payload(99).varint(1).bytes())))
                .isInstanceOf(DataException.class).hasMessageContaining("schema id 99");
        assertThat(header(headers, FenceHeaders.REJECTED_REASON)).isEqualTo("MALFORMED_VALUE");
    }

    private static String header(Headers headers, String name) {
        var header = headers.lastHeader(name);
        return header == null ? null : FenceHeaders.decode(header.value());
    }

    private static Payload payload(int schemaId) {
        return new Payload(schemaId);
    }

    /** The Confluent wire format written by hand, so lengths and counts can lie. */
    private static final class Payload {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();

        Payload(int schemaId) {
            out.write(0);
            out.writeBytes(ByteBuffer.allocate(4).putInt(schemaId).array());
        }

        Payload varint(long value) {
            long zigzag = (value << 1) ^ (value >> 63);
            while ((zigzag & ~0x7FL) != 0) {
                out.write((int) ((zigzag & 0x7F) | 0x80));
                zigzag >>>= 7;
            }
            out.write((int) zigzag);
            return this;
        }

        Payload raw(int... bytes) {
            for (int b : bytes) {
                out.write(b);
            }
            return this;
        }

        byte[] bytes() {
            return out.toByteArray();
        }
    }

    /** A registry holding {@code schemas} under ids 1, 2, ... in order (STRING_ID, NODE_ID, NOT_A_RECORD_ID, NULL_ID). */
    private static InMemorySchemaRegistryClient registry(Schema... schemas) {
        InMemorySchemaRegistryClient registry = new InMemorySchemaRegistryClient(STRING_ID);
        for (int i = 0; i < schemas.length; i++) {
            registry.register("schema-" + i, schemas[i]);
        }
        return registry;
    }
}
