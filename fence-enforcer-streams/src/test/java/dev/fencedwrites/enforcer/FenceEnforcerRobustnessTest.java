package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.enforcer.internal.LenientTimestampExtractor;
import dev.fencedwrites.enforcer.internal.StoredFence;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Inputs that must be routed, never allowed to stop the enforcer: invalid timestamps, and records too large for an output topic
 * or the fence store.
 */
class FenceEnforcerRobustnessTest extends TopologyFixture {
    private static final int ACCEPTED_MAX = 1_000;
    private static final int REJECTED_MAX = 3_000;
    private static final int STORE_MAX = FenceEnforcerTopology.Limits.STORED_VALUE_ALLOWANCE_BYTES + 500;

    @BeforeEach
    void start() {
        start(FenceEnforcerTopology.build(FenceEnforcerTopology.Settings.of(INPUT, ACCEPTED, REJECTED,
                new FenceEnforcerTopology.Limits(1, ACCEPTED_MAX, REJECTED_MAX, STORE_MAX)), meters), "robustness-test", null);
    }

    /**
     * TestRecord refuses negative timestamps, so the source's extractor is checked directly; the broker accepts such records from
     * non-Java clients.
     */
    @Test
    void recordWithNegativeTimestampGetsThePartitionTimeOrTheClock() {
        LenientTimestampExtractor extractor = new LenientTimestampExtractor();
        ConsumerRecord<Object, Object> negative = new ConsumerRecord<>("in", 0, 0L, -1L, TimestampType.CREATE_TIME, 1, 1, "k",
                "v",
                new RecordHeaders(), Optional.empty());
        long before = System.currentTimeMillis();

        assertThat(extractor.extract(negative, 1_234L)).isEqualTo(1_234L);
        assertThat(extractor.extract(negative, -1L)).isGreaterThanOrEqualTo(before);
    }

    @Test
    void validRecordTooLargeForTheAcceptedTopicIsRejectedTooLargeAndDoesNotRaiseTheFence() {
        byte[] big = new byte[2_000];
        input.pipeInput(new TestRecord<>(utf8("k"), big, headers("9")));
        input.pipeInput(new TestRecord<>(utf8("k"), utf8("small"), headers("5")));

        TestRecord<byte[], byte[]> tooLarge = rejected.readRecord();
        assertThat(header(tooLarge, FenceHeaders.REJECTED_REASON)).isEqualTo("TOO_LARGE");
        assertThat(tooLarge.value()).isEqualTo(big);
        assertThat(accepted.readValuesToList()).extracting(v -> new String(v, StandardCharsets.UTF_8)).containsExactly("small");
    }

    @Test
    void rejectedCopyTooLargeForTheRejectedTopicOmitsItsValueAndSaysSo() {
        input.pipeInput(new TestRecord<>(utf8("k"), new byte[5_000], headers("not-a-token")));

        TestRecord<byte[], byte[]> copy = rejected.readRecord();
        assertThat(header(copy, FenceHeaders.REJECTED_REASON)).isEqualTo("MALFORMED_TOKEN");
        assertThat(header(copy, FenceHeaders.REJECTED_VALUE_OMITTED)).isEqualTo("true");
        assertThat(header(copy, FenceHeaders.SOURCE_OFFSET)).isEqualTo("0");
        assertThat(copy.value()).isNull();
    }

    // --- every output bounded; no record stops the enforcer ---

    @Test
    void rejectedCopyWhoseKeyIsTooLargeForTheRejectedTopicBecomesAReferenceRecordWithItsCoordinates() {
        input.pipeInput(new TestRecord<>(utf8("k"), utf8("before"), headers("5")));
        RecordHeaders noToken = new RecordHeaders();
        noToken.add(FenceHeaders.SEQ, utf8("1"));
        input.pipeInput(new TestRecord<>(new byte[4_000], utf8("v"), noToken));
        input.pipeInput(new TestRecord<>(utf8("k"), utf8("after"), headers("6")));

        TestRecord<byte[], byte[]> reference = rejected.readRecord();
        assertThat(reference.key()).isNull();
        assertThat(reference.value()).isNull();
        assertThat(header(reference, FenceHeaders.REJECTED_REASON)).isEqualTo("MISSING_TOKEN");
        assertThat(header(reference, FenceHeaders.SOURCE_TOPIC)).isEqualTo("in");
        assertThat(header(reference, FenceHeaders.SOURCE_PARTITION)).isEqualTo("0");
        assertThat(header(reference, FenceHeaders.SOURCE_OFFSET)).isEqualTo("1");
        assertThat(header(reference, FenceHeaders.SOURCE_KEY_BYTES)).isEqualTo("4000");
        assertThat(header(reference, FenceHeaders.REJECTED_KEY_OMITTED)).isEqualTo("true");
        assertThat(header(reference, FenceHeaders.SEQ)).as("a short fencing header is kept").isEqualTo("1");
        assertThat(accepted.readValuesToList()).extracting(v -> new String(v, StandardCharsets.UTF_8)).containsExactly("before",
                "after");
        assertThat(meters.get("fence.enforcer.rejected.copies.reduced").tag("step", "REFERENCE").counter().count())
                .isEqualTo(1.0);
    }

    @Test
    void rejectedCopyWithOversizedHeadersKeepsItsKeyAndItsSmallHeaders() {
        RecordHeaders noToken = new RecordHeaders();
        noToken.add(FenceHeaders.WRITER, utf8("worker-a"));
        noToken.add("junk", new byte[5_000]);
        input.pipeInput(new TestRecord<>(utf8("k"), utf8("v"), noToken));

        TestRecord<byte[], byte[]> copy = rejected.readRecord();
        assertThat(header(copy, FenceHeaders.REJECTED_REASON)).isEqualTo("MISSING_TOKEN");
        assertThat(copy.key()).isEqualTo(utf8("k"));
        assertThat(copy.headers().lastHeader("junk")).isNull();
        assertThat(header(copy, FenceHeaders.WRITER)).isEqualTo("worker-a");
        assertThat(header(copy, FenceHeaders.REJECTED_HEADERS_OMITTED)).isEqualTo("1");
        assertThat(header(copy, FenceHeaders.SOURCE_HEADERS_BYTES))
                .isEqualTo(Integer.toString(FenceHeaders.WRITER.length() + 8 + 4 + 5_000));
    }

    @Test
    void writeWithOversizedHeadersIsRejectedTooLargeAndItsCopyLeavesThemOut() {
        RecordHeaders big = headers("9");
        big.add("junk", new byte[5_000]);
        input.pipeInput(new TestRecord<>(utf8("k"), utf8("v"), big));
        input.pipeInput(new TestRecord<>(utf8("k"), utf8("small"), headers("5")));

        TestRecord<byte[], byte[]> copy = rejected.readRecord();
        assertThat(header(copy, FenceHeaders.REJECTED_REASON)).isEqualTo("TOO_LARGE");
        assertThat(header(copy, FenceHeaders.TOKEN)).isEqualTo("9");
        assertThat(header(copy, FenceHeaders.REJECTED_HEADERS_OMITTED)).isEqualTo("1");
        assertThat(accepted.readValuesToList()).extracting(v -> new String(v, StandardCharsets.UTF_8)).containsExactly("small");
    }

    @Test
    void markerWhoseKeyIsTooLargeForTheFenceStoreIsRejectedKeyTooLargeAndRaisesNoFence() {
        byte[] key = new byte[STORE_MAX - FenceEnforcerTopology.Limits.STORED_VALUE_ALLOWANCE_BYTES + 1];
        RecordHeaders marker = headers("9");
        marker.add(FenceHeaders.SEQ, utf8("0"));
        marker.add(FenceHeaders.OP, utf8("FENCE"));
        input.pipeInput(new TestRecord<>(key, null, marker));

        TestRecord<byte[], byte[]> copy = rejected.readRecord();
        assertThat(header(copy, FenceHeaders.REJECTED_REASON)).isEqualTo("KEY_TOO_LARGE");
        assertThat(copy.key()).isEqualTo(key);
        assertThat(storedFence(key)).isNull();
        assertThat(meters.get("fence.enforcer.markers.accepted").counter().count()).isZero();
    }

    @Test
    void writeWhoseKeyIsTooLargeForTheFenceStoreIsRejectedKeyTooLargeAndNotStored() {
        byte[] key = new byte[STORE_MAX - FenceEnforcerTopology.Limits.STORED_VALUE_ALLOWANCE_BYTES + 1];
        input.pipeInput(new TestRecord<>(key, utf8("v"), headers("9")));

        assertThat(header(rejected.readRecord(), FenceHeaders.REJECTED_REASON)).isEqualTo("KEY_TOO_LARGE");
        assertThat(accepted.isEmpty()).isTrue();
        assertThat(storedFence(key)).isNull();
    }

    @Test
    void writeWhoseKeyJustFitsTheFenceStoreIsAcceptedAndStored() {
        byte[] key = new byte[STORE_MAX - FenceEnforcerTopology.Limits.STORED_VALUE_ALLOWANCE_BYTES];
        input.pipeInput(new TestRecord<>(key, utf8("v"), headers("9")));

        assertThat(accepted.readValuesToList()).hasSize(1);
        assertThat(storedFence(key)).isEqualTo(Fence.of(9));
    }

    @Test
    void rejectedTopicLimitBelowAReferenceRecordIsRefused() {
        assertThatThrownBy(() -> new FenceEnforcerTopology.Limits(1, 1_000, 2_000, 1_000))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("2048");
    }

    private Fence storedFence(byte[] key) {
        KeyValueStore<Bytes, StoredFence> store = driver.getKeyValueStore(FenceEnforcerTopology.STORE);
        StoredFence stored = store.get(Bytes.wrap(key));
        return stored == null ? null : stored.fence();
    }

    private static RecordHeaders headers(String token) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, utf8(token));
        return headers;
    }
}
