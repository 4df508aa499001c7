package dev.fencedwrites.contract;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Parsing and validation of the fencing headers (wire contract v1). */
class FenceStampTest {

    @Test
    void parsesTokenSeqOpLeaseAndWriter() {
        RecordHeaders headers = headers(FenceHeaders.TOKEN, "42", FenceHeaders.SEQ, "7", FenceHeaders.OP, "WRITE",
                FenceHeaders.LEASE, "694d7f1a2b3c4d5e", FenceHeaders.WRITER, "worker-a");

        FenceStamp.Parsed parsed = FenceStamp.parse(HeaderLookup.of(headers));

        assertThat(parsed.valid()).isTrue();
        assertThat(parsed.rejection()).isNull();
        assertThat(parsed.stamp()).isEqualTo(new FenceStamp(new Fence(42, 7), FenceOp.WRITE, "694d7f1a2b3c4d5e", "worker-a"));
        assertThat(parsed.stamp().lease()).isEqualTo("694d7f1a2b3c4d5e");
        assertThat(parsed.stamp().writer()).isEqualTo("worker-a");
    }

    @Test
    void stampsDifferingInAnyPartAreNotEqual() {
        FenceStamp stamp = new FenceStamp(new Fence(42, 7), FenceOp.WRITE, "9", "w");
        assertThat(stamp).isEqualTo(new FenceStamp(new Fence(42, 7), FenceOp.WRITE, "9", "w"))
                .hasSameHashCodeAs(new FenceStamp(new Fence(42, 7), FenceOp.WRITE, "9", "w"));
        assertThat(stamp).isNotEqualTo(new FenceStamp(new Fence(42, 8), FenceOp.WRITE, "9", "w"))
                .isNotEqualTo(new FenceStamp(new Fence(42, 7), FenceOp.FENCE, "9", "w"))
                .isNotEqualTo(new FenceStamp(new Fence(42, 7), FenceOp.WRITE, "8", "w"))
                .isNotEqualTo(new FenceStamp(new Fence(42, 7), FenceOp.WRITE, "9", "v")).isNotEqualTo("42.7");
        assertThat(stamp.toString()).contains("42.7", "WRITE", "lease=9", "writer=w");
    }

    @Test
    void rejectsTwoOpHeadersAsUnknownOp() {
        FenceStamp.Parsed parsed = FenceStamp
                .parse(HeaderLookup.of(headers(FenceHeaders.TOKEN, "42", FenceHeaders.OP, "WRITE", FenceHeaders.OP, "WRITE")));

        assertThat(parsed.valid()).isFalse();
        assertThat(parsed.rejection()).isEqualTo(RejectionReason.UNKNOWN_OP);
    }

    @Test
    void parsesFenceMarkerWithSeqZero() {
        FenceStamp.Parsed parsed = FenceStamp
                .parse(HeaderLookup.of(headers(FenceHeaders.TOKEN, "42", FenceHeaders.SEQ, "0", FenceHeaders.OP, "FENCE")));

        assertThat(parsed.stamp().op()).isEqualTo(FenceOp.FENCE);
        assertThat(parsed.stamp().fence()).isEqualTo(new Fence(42, 0));
    }

    @Test
    void defaultsToWriteWithoutSeqLeaseOrWriter() {
        FenceStamp.Parsed parsed = FenceStamp.parse(HeaderLookup.of(headers(FenceHeaders.TOKEN, "42")));

        assertThat(parsed.stamp()).isEqualTo(new FenceStamp(Fence.of(42), FenceOp.WRITE, null, null));
        assertThat(parsed.stamp().fence().hasSeq()).isFalse();
    }

    @Test
    void acceptsLongMaxValueAsToken() {
        FenceStamp.Parsed parsed = FenceStamp.parse(HeaderLookup.of(headers(FenceHeaders.TOKEN, Long.toString(Long.MAX_VALUE))));

        assertThat(parsed.stamp().fence().token()).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void rejectsMissingTokenAsMissingToken() {
        FenceStamp.Parsed parsed = FenceStamp.parse(HeaderLookup.of(headers(FenceHeaders.SEQ, "1")));

        assertThat(parsed.valid()).isFalse();
        assertThat(parsed.rejection()).isEqualTo(RejectionReason.MISSING_TOKEN);
        assertThat(parsed.detail()).contains(FenceHeaders.TOKEN);
    }

    @ParameterizedTest(name = "token \"{0}\"")
    @ValueSource(strings = {"", "abc", "12x", " 5", "0", "-0", "-5", "+5", "1.5", "9223372036854775808", "\u0666\u0660",
            "\uff19"})
    void rejectsTokenThatIsNotAPositiveLongAsMalformedToken(String token) {
        FenceStamp.Parsed parsed = FenceStamp.parse(HeaderLookup.of(headers(FenceHeaders.TOKEN, token)));

        assertThat(parsed.valid()).isFalse();
        assertThat(parsed.rejection()).isEqualTo(RejectionReason.MALFORMED_TOKEN);
        assertThat(parsed.detail()).contains(FenceHeaders.TOKEN);
    }

    @Test
    void rejectsTokenHeaderWithoutValueAsMalformedToken() {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, null);

        assertThat(FenceStamp.parse(HeaderLookup.of(headers)).rejection()).isEqualTo(RejectionReason.MALFORMED_TOKEN);
    }

    @Test
    void rejectsTwoTokenHeadersAsMalformedToken() {
        FenceStamp.Parsed parsed = FenceStamp.parse(HeaderLookup.of(headers(FenceHeaders.TOKEN, "5", FenceHeaders.TOKEN, "6")));

        assertThat(parsed.rejection()).isEqualTo(RejectionReason.MALFORMED_TOKEN);
        assertThat(parsed.detail()).contains("2");
    }

    @ParameterizedTest(name = "seq \"{0}\"")
    @ValueSource(strings = {"", "abc", "-1", "-2", "+1", "1.0", "9223372036854775808", "-0", "\uff11"})
    void rejectsSeqThatIsNotANonNegativeLongAsMalformedSeq(String seq) {
        FenceStamp.Parsed parsed = FenceStamp.parse(HeaderLookup.of(headers(FenceHeaders.TOKEN, "5", FenceHeaders.SEQ, seq)));

        assertThat(parsed.rejection()).isEqualTo(RejectionReason.MALFORMED_SEQ);
        assertThat(parsed.detail()).contains(FenceHeaders.SEQ);
    }

    @Test
    void rejectsTwoSeqHeadersAsMalformedSeq() {
        FenceStamp.Parsed parsed = FenceStamp
                .parse(HeaderLookup.of(headers(FenceHeaders.TOKEN, "5", FenceHeaders.SEQ, "1", FenceHeaders.SEQ, "2")));

        assertThat(parsed.rejection()).isEqualTo(RejectionReason.MALFORMED_SEQ);
    }

    @ParameterizedTest(name = "op \"{0}\"")
    @ValueSource(strings = {"", "DELETE", "FENCED", "W"})
    void rejectsOpOtherThanWriteOrFenceAsUnknownOp(String op) {
        FenceStamp.Parsed parsed = FenceStamp.parse(HeaderLookup.of(headers(FenceHeaders.TOKEN, "5", FenceHeaders.OP, op)));

        assertThat(parsed.rejection()).isEqualTo(RejectionReason.UNKNOWN_OP);
        assertThat(parsed.detail()).contains(FenceHeaders.OP);
    }

    /** The etcd lease id sent as the token would raise the key's fence past every real revision. */
    @Test
    void rejectsTokenEqualToTheLeaseIdAsLeaseAsToken() {
        FenceStamp.Parsed parsed = FenceStamp.parse(HeaderLookup.of(headers(FenceHeaders.TOKEN, "7587869054862721234",
                FenceHeaders.SEQ, "1", FenceHeaders.LEASE, "7587869054862721234")));

        assertThat(parsed.valid()).isFalse();
        assertThat(parsed.rejection()).isEqualTo(RejectionReason.LEASE_AS_TOKEN);
        assertThat(parsed.detail()).contains(FenceHeaders.TOKEN, FenceHeaders.LEASE, "revision");
    }

    @ParameterizedTest(name = "lease \"{0}\"")
    @ValueSource(strings = {"7587869054862721234", "42x", "", "0042"})
    void acceptsTokenThatDiffersFromTheLeaseId(String lease) {
        FenceStamp.Parsed parsed = FenceStamp
                .parse(HeaderLookup.of(headers(FenceHeaders.TOKEN, "41", FenceHeaders.LEASE, lease)));

        assertThat(parsed.valid()).isTrue();
        assertThat(parsed.stamp().lease()).isEqualTo(lease);
    }

    /** The rule reads the lease as the contract writes it: decimal, the last header when repeated. */
    @Test
    void comparesTheTokenWithTheLastLeaseHeader() {
        FenceStamp.Parsed parsed = FenceStamp
                .parse(HeaderLookup.of(headers(FenceHeaders.TOKEN, "42", FenceHeaders.LEASE, "7", FenceHeaders.LEASE, "42")));

        assertThat(parsed.rejection()).isEqualTo(RejectionReason.LEASE_AS_TOKEN);
    }

    /** The digits are read from the header's bytes; the result is the text's, for every kind of text. */
    @ParameterizedTest
    @ValueSource(strings = {"0", "1", "42", "007", "9223372036854775807", "9223372036854775808", "99999999999999999999", "",
            "-1", "+1", " 1", "1 ", "1.5", "\u0663", "\uff11", "12a", "\u00e9"})
    void readsDecimalBytesAsItReadsDecimalText(String text) {
        assertThat(FenceStamp.parseDecimal(text.getBytes(StandardCharsets.UTF_8))).isEqualTo(FenceStamp.parseDecimal(text));
    }

    /**
     * The one pass over Kafka headers and the lookup of each name (what a lookup without its own pass, such as the
     * sink's over Connect headers, does) parse alike, repeated and empty headers included.
     */
    @Test
    void theOnePassOverKafkaHeadersParsesAsTheLookupByName() {
        String[][] cases = {
                {FenceHeaders.TOKEN, "42", FenceHeaders.SEQ, "7", FenceHeaders.LEASE, "9", FenceHeaders.WRITER, "w"},
                {FenceHeaders.TOKEN, "42", FenceHeaders.TOKEN, "43"},
                {FenceHeaders.SEQ, "1", FenceHeaders.SEQ, "2", FenceHeaders.TOKEN, "5"},
                {FenceHeaders.TOKEN, "5", FenceHeaders.OP, "fence", FenceHeaders.OP, "write"},
                {FenceHeaders.TOKEN, "5", FenceHeaders.OP, "FENCE", "other", "x", FenceHeaders.WRITER, "a", FenceHeaders.WRITER,
                        "b"},
                {FenceHeaders.TOKEN, "42", FenceHeaders.LEASE, "42"},
                {FenceHeaders.TOKEN, "", FenceHeaders.SEQ, "x"},
                {"fence.tokens", "1"},
        };
        for (String[] names : cases) {
            RecordHeaders headers = headers(names);
            HeaderLookup onePass = HeaderLookup.of(headers);
            HeaderLookup byName = onePass::values;
            assertThat(FenceStamp.parse(onePass)).as(String.join(",", names)).isEqualTo(FenceStamp.parse(byName));
        }
    }

    /** Headers from name/value pairs, values as UTF-8 text, in the given order. */
    static RecordHeaders headers(String... namesAndValues) {
        RecordHeaders headers = new RecordHeaders();
        for (int i = 0; i < namesAndValues.length; i += 2) {
            headers.add(namesAndValues[i], namesAndValues[i + 1].getBytes(StandardCharsets.UTF_8));
        }
        return headers;
    }
}
