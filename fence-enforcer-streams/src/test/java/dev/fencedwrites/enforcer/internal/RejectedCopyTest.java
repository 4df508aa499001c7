package dev.fencedwrites.enforcer.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencedwrites.contract.FenceHeaders;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.junit.jupiter.api.Test;

/** The steps by which a rejected copy is reduced to fit the rejected topic. */
class RejectedCopyTest {
    private static final int MAX = 3_000;
    private static final List<Header> REJECTION = List.of(header(FenceHeaders.REJECTED_REASON, "MISSING_TOKEN"),
            header(FenceHeaders.REJECTED_STAGE, "enforcer"), header(FenceHeaders.SOURCE_OFFSET, "7"));

    @Test
    void copyThatFitsKeepsKeyValueAndEveryHeaderWithTheRejectionHeadersLast() {
        Header[] own = {header(FenceHeaders.TOKEN, "5"), header("trace", "abc")};

        RejectedCopy copy = RejectedCopy.of(utf8("k"), utf8("v"), own, REJECTION, MAX);

        assertThat(copy.step()).isEqualTo(RejectedCopy.Step.FULL);
        assertThat(copy.key()).isEqualTo(utf8("k"));
        assertThat(copy.value()).isEqualTo(utf8("v"));
        assertThat(copy.headers().toArray()).containsExactly(own[0], own[1], REJECTION.get(0), REJECTION.get(1),
                REJECTION.get(2));
    }

    @Test
    void copyTooLargeWithItsValueLeavesOutTheValueAndGivesTheOriginalSizes() {
        Header[] own = {header(FenceHeaders.TOKEN, "5")};

        RejectedCopy copy = RejectedCopy.of(utf8("k"), new byte[5_000], own, REJECTION, MAX);

        assertThat(copy.step()).isEqualTo(RejectedCopy.Step.WITHOUT_VALUE);
        assertThat(copy.key()).isEqualTo(utf8("k"));
        assertThat(copy.value()).isNull();
        assertThat(text(copy, FenceHeaders.TOKEN)).isEqualTo("5");
        assertThat(text(copy, FenceHeaders.REJECTED_VALUE_OMITTED)).isEqualTo("true");
        assertThat(text(copy, FenceHeaders.SOURCE_VALUE_BYTES)).isEqualTo("5000");
        assertThat(text(copy, FenceHeaders.SOURCE_KEY_BYTES)).isEqualTo("1");
        assertThat(text(copy, FenceHeaders.SOURCE_HEADERS_BYTES)).isEqualTo(Integer.toString(FenceHeaders.TOKEN.length() + 1));
        assertThat(copy.headers().lastHeader(FenceHeaders.REJECTED_HEADERS_OMITTED)).isNull();
    }

    @Test
    void copyWithOversizedHeadersLeavesOutTheLargestHeadersOnlyAndCountsThem() {
        Header[] own = {header(FenceHeaders.TOKEN, "5"), new RecordHeader("junk-1", new byte[2_000]), header("trace", "abc"),
                new RecordHeader("junk-2", new byte[1_500])};

        RejectedCopy copy = RejectedCopy.of(utf8("k"), utf8("v"), own, REJECTION, MAX);

        assertThat(copy.step()).isEqualTo(RejectedCopy.Step.WITHOUT_HEADERS);
        assertThat(copy.key()).isEqualTo(utf8("k"));
        assertThat(copy.value()).isNull();
        assertThat(copy.headers().lastHeader("junk-1")).isNull();
        assertThat(copy.headers().lastHeader("junk-2").value()).hasSize(1_500);
        assertThat(text(copy, FenceHeaders.TOKEN)).isEqualTo("5");
        assertThat(text(copy, "trace")).isEqualTo("abc");
        assertThat(text(copy, FenceHeaders.REJECTED_HEADERS_OMITTED)).isEqualTo("1");
        assertThat(text(copy, FenceHeaders.SOURCE_HEADERS_BYTES)).isEqualTo(Long.toString(RecordSize.headersBytes(List.of(own))));
        assertThat(RecordSize.upperBound(copy.key(), copy.value(), copy.headers())).isLessThanOrEqualTo(MAX);
    }

    @Test
    void copyWhoseKeyAloneIsTooLargeBecomesAReferenceRecord() {
        Header[] own = {header(FenceHeaders.TOKEN, "5"), header("trace", "abc")};

        RejectedCopy copy = RejectedCopy.of(new byte[4_000], utf8("v"), own, REJECTION, MAX);

        assertThat(copy.step()).isEqualTo(RejectedCopy.Step.REFERENCE);
        assertThat(copy.key()).isNull();
        assertThat(copy.value()).isNull();
        assertThat(text(copy, FenceHeaders.TOKEN)).as("a short fencing header says whose write it was").isEqualTo("5");
        assertThat(copy.headers().lastHeader("trace")).isNull();
        assertThat(text(copy, FenceHeaders.REJECTED_REASON)).isEqualTo("MISSING_TOKEN");
        assertThat(text(copy, FenceHeaders.SOURCE_OFFSET)).isEqualTo("7");
        assertThat(text(copy, FenceHeaders.SOURCE_KEY_BYTES)).isEqualTo("4000");
        assertThat(text(copy, FenceHeaders.SOURCE_VALUE_BYTES)).isEqualTo("1");
        assertThat(text(copy, FenceHeaders.REJECTED_KEY_OMITTED)).isEqualTo("true");
        assertThat(text(copy, FenceHeaders.REJECTED_VALUE_OMITTED)).isEqualTo("true");
        assertThat(text(copy, FenceHeaders.REJECTED_HEADERS_OMITTED)).isEqualTo("1");
    }

    /**
     * A marker has no value to leave out: a key too large goes straight to the reference record, which says nothing of a value.
     */
    @Test
    void referenceRecordOfAMarkerDoesNotClaimAnOmittedValue() {
        RejectedCopy copy = RejectedCopy.of(new byte[4_000], null, new Header[]{header(FenceHeaders.OP, "FENCE")}, REJECTION,
                MAX);

        assertThat(copy.step()).isEqualTo(RejectedCopy.Step.REFERENCE);
        assertThat(copy.headers().lastHeader(FenceHeaders.REJECTED_VALUE_OMITTED)).isNull();
        assertThat(text(copy, FenceHeaders.SOURCE_VALUE_BYTES)).isEqualTo("0");
    }

    @Test
    void limitTooSmallForEvenAReferenceRecordIsAnError() {
        assertThatThrownBy(() -> RejectedCopy.of(utf8("k"), utf8("v"), new Header[0], REJECTION, 100))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("reference record");
    }

    private static String text(RejectedCopy copy, String name) {
        return FenceHeaders.decode(copy.headers().lastHeader(name).value());
    }

    private static Header header(String name, String value) {
        return new RecordHeader(name, utf8(value));
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
