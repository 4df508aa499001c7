package dev.fencedwrites.sink.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencedwrites.avro.AvroSerdeConfig;
import dev.fencedwrites.avro.connect.AvroConverter;
import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.RejectionReason;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.Test;

/**
 * {@link RecordDecoder}: what a sink record's key, fence headers and value make, with no database.
 * The registry client points at a closed port, so a value that needs it is a transient failure.
 */
class RecordDecoderTest {
    private static final String TOPIC = "fenced-writes-accepted";
    private static final String KEY = "customer-42";
    private static final Schema SCHEMA = SchemaBuilder.struct().name("Invoice").field("amountMinor", Schema.INT64_SCHEMA).build();

    private final AvroConverter values = new AvroConverter(AvroSerdeConfig.clientFrom(Map.of(
            AvroSerdeConfig.CLIENT_PREFIX + "url", "http://127.0.0.1:1", AvroSerdeConfig.CLIENT_PREFIX + "max.retries", 0)),
            false);
    private final RecordDecoder decoder = new RecordDecoder(values, true, Set.of(TOPIC)::contains);

    @Test
    void aStructWithAFenceIsAnUpsertOfItsKey() {
        Struct value = new Struct(SCHEMA).put("amountMinor", 700L);

        assertThat(decoder.decode(record(KEY, value, fence(7, 1)))).isEqualTo(new Row.Upsert(KEY, value, new Fence(7, 1)));
    }

    @Test
    void aNullValueIsADeleteThatKeepsTheFence() {
        assertThat(decoder.decode(record(KEY, null, fence(7, 2)))).isEqualTo(new Row.Delete(KEY, new Fence(7, 2)));
    }

    @Test
    void keyBytesAreReadAsUtf8() {
        assertThat(decoder.decode(record("grüße".getBytes(StandardCharsets.UTF_8), null, fence(7, 2))))
                .isEqualTo(new Row.Delete("grüße", new Fence(7, 2)));
    }

    @Test
    void keyBytesThatAreNotUtf8AreAMalformedKeyWithNoFenceToRead() {
        assertThat(decoder.decode(record(new byte[]{(byte) 0xC3, (byte) 0x28}, null, fence(7, 1))))
                .isInstanceOfSatisfying(Decoded.Bad.class, bad -> {
                    assertThat(bad.reason()).isEqualTo(RejectionReason.MALFORMED_KEY);
                    assertThat(bad.key()).isNull();
                });
    }

    @Test
    void anEmptyKeyIsAMissingKey() {
        assertThat(decoder.decode(record("", null, fence(7, 1))))
                .isEqualTo(new Decoded.Bad(RejectionReason.MISSING_KEY, null, "null or empty key"));
    }

    @Test
    void aRecordWithoutATokenIsMissingTokenAndNamesItsKeyForTheStoredFence() {
        assertThat(decoder.decode(record(KEY, null, new ConnectHeaders()))).isInstanceOfSatisfying(Decoded.Bad.class, bad -> {
            assertThat(bad.reason()).isEqualTo(RejectionReason.MISSING_TOKEN);
            assertThat(bad.key()).isEqualTo(KEY);
        });
    }

    @Test
    void aRejectedCopyIsAlreadyRejectedWhateverElseItCarries() {
        ConnectHeaders headers = fence(7, 1);
        headers.addBytes(FenceHeaders.REJECTED_REASON, FenceHeaders.encode("STALE_TOKEN"));

        assertThat(decoder.decode(record(KEY, null, headers))).isInstanceOfSatisfying(Decoded.Bad.class, bad -> {
            assertThat(bad.reason()).isEqualTo(RejectionReason.ALREADY_REJECTED);
            assertThat(bad.detail()).contains("fence.rejected.reason=STALE_TOKEN");
        });
    }

    @Test
    void bytesThatAreNotTheConfluentWireFormatAreAMalformedValue() {
        assertThat(decoder.decode(record(KEY, new byte[]{1, 2, 3}, fence(7, 1)))).isInstanceOfSatisfying(Decoded.Bad.class,
                bad -> assertThat(bad.reason()).isEqualTo(RejectionReason.MALFORMED_VALUE));
    }

    @Test
    void aValueWhoseSchemaTheRegistryCannotBeAskedForIsATransientFailure() {
        byte[] wireFormat = {0, 0, 0, 0, 1, 2};

        assertThatThrownBy(() -> decoder.decode(record(KEY, wireFormat, fence(7, 1)))).isInstanceOf(TransientFailure.class);
    }

    @Test
    void aMarkerWithAValueIsAnInvalidMarker() {
        assertThat(decoder.decode(record(KEY, new Struct(SCHEMA).put("amountMinor", 1L), marker(9, TOPIC))))
                .isInstanceOfSatisfying(Decoded.Bad.class,
                        bad -> assertThat(bad.reason()).isEqualTo(RejectionReason.INVALID_MARKER));
    }

    @Test
    void aMarkerForARecordTopicThisConnectorReadsRaisesTheFenceOnly() {
        assertThat(decoder.decode(record(KEY, null, marker(9, TOPIC)))).isEqualTo(new Row.FenceOnly(KEY, new Fence(9, 0), null));
    }

    @Test
    void aMarkerCarriesTheFenceItSupersededAtTheEnforcer() {
        ConnectHeaders headers = marker(9, TOPIC);
        headers.addBytes(FenceHeaders.MARKER_PREVIOUS, FenceHeaders.encode("8.4"));

        assertThat(decoder.decode(record(KEY, null, headers)))
                .isEqualTo(new Row.FenceOnly(KEY, new Fence(9, 0), new Fence(8, 4)));
    }

    @Test
    void aMarkerWhosePreviousFenceCannotBeReadIsSkipped() {
        ConnectHeaders headers = marker(9, TOPIC);
        headers.addBytes(FenceHeaders.MARKER_PREVIOUS, FenceHeaders.encode("eight"));

        assertThat(decoder.decode(record(KEY, null, headers))).isEqualTo(Decoded.SKIP);
    }

    @Test
    void aMarkerForATopicThisConnectorDoesNotReadIsSkipped() {
        assertThat(decoder.decode(record(KEY, null, marker(9, "orders-accepted")))).isEqualTo(Decoded.SKIP);
    }

    @Test
    void withoutTheGuardEveryMarkerIsSkipped() {
        RecordDecoder unguarded = new RecordDecoder(values, false, Set.of(TOPIC)::contains);

        assertThat(unguarded.decode(record(KEY, null, marker(9, TOPIC)))).isEqualTo(Decoded.SKIP);
    }

    @Test
    void aMarkerGoesToTheTableOfTheTopicItNamesAndAWriteToItsOwn() {
        ConnectHeaders write = fence(7, 1);
        write.addBytes(FenceHeaders.MARKER_TARGET_TOPIC, FenceHeaders.encode("orders-accepted"));

        assertThat(RecordDecoder.tableTopic(record(KEY, null, marker(9, "orders-accepted")))).isEqualTo("orders-accepted");
        assertThat(RecordDecoder.tableTopic(record(KEY, null, write))).isEqualTo(TOPIC);
    }

    /** A record on the markers topic as the enforcer publishes it: op FENCE, seq 0, the accepted topic it fences. */
    private static ConnectHeaders marker(long token, String target) {
        ConnectHeaders headers = fence(token, 0);
        headers.addBytes(FenceHeaders.OP, FenceHeaders.encode("FENCE"));
        headers.addBytes(FenceHeaders.MARKER_TARGET_TOPIC, FenceHeaders.encode(target));
        return headers;
    }

    private static ConnectHeaders fence(long token, long seq) {
        ConnectHeaders headers = new ConnectHeaders();
        headers.addBytes(FenceHeaders.TOKEN, FenceHeaders.encode(token));
        headers.addBytes(FenceHeaders.SEQ, FenceHeaders.encode(seq));
        return headers;
    }

    private static SinkRecord record(Object key, Object value, ConnectHeaders headers) {
        return new SinkRecord(TOPIC, 0, null, key, null, value, 10, 1_790_000_000_000L, TimestampType.CREATE_TIME, headers);
    }
}
