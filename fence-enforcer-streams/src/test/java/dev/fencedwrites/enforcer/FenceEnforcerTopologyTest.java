package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.RejectionReason;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The enforcer topology against the decision rule, one rule per test, with {@link TopologyTestDriver}. */
class FenceEnforcerTopologyTest extends TopologyFixture {
    private static final String KEY = "customer-42";

    @BeforeEach
    void startDriver() {
        startDriver(1);
    }

    private void startDriver(int inputPartitions) {
        startDriver(inputPartitions, PartitionMismatch.REROUTE);
    }

    private void startDriver(int inputPartitions, PartitionMismatch mismatch) {
        start(FenceEnforcerTopology.build(FenceEnforcerTopology.Settings
                .of(INPUT, ACCEPTED, REJECTED, FenceEnforcerTopology.Limits.unbounded(inputPartitions)).withMarkers(MARKERS)
                .withPartitionMismatch(mismatch), meters), "fence-enforcer-test", null);
    }

    // --- decision rule, one row per test ---

    /**
     * TopologyTestDriver feeds partition 0: with 4 input partitions only keys that murmur2-hash to 0 belong there. Strict
     * mode (partition.mismatch.policy=reject); re-routing is RerouteTopologyTest's.
     */
    @Test
    void rejectsRecordOnAnotherPartitionThanItsKeyHashesToInStrictMode() {
        closeDriver();
        startDriver(4, PartitionMismatch.REJECT);
        String home = keyHashingTo(4, true);
        String elsewhere = keyHashingTo(4, false);

        write(home, "ok", 5, 1);
        write(elsewhere, "misrouted", 5, 1);

        assertThat(acceptedValues()).containsExactly("ok");
        assertThat(rejectedReasons()).containsExactly("WRONG_PARTITION");
    }

    private static String keyHashingTo(int partitions, boolean partitionZero) {
        for (int i = 0;; i++) {
            String key = "customer-" + i;
            boolean zero = Utils.toPositive(Utils.murmur2(utf8(key)))
                    % partitions == 0;
            if (zero == partitionZero) {
                return key;
            }
        }
    }

    @Test
    void acceptsFirstWriteForKey() {
        write(KEY, "v1", 5, 1);

        assertThat(acceptedValues()).containsExactly("v1");
        assertThat(rejected.isEmpty()).isTrue();
    }

    @Test
    void acceptsHigherTokenForSameKey() {
        write(KEY, "old", 5, 3);
        write(KEY, "new", 6, 1);

        assertThat(acceptedValues()).containsExactly("old", "new");
    }

    @Test
    void acceptsSameTokenWhenIncomingSeqAbsent() {
        write(KEY, "v1", 5, 3);
        pipe(KEY, "v2", FenceHeaders.TOKEN, "5");

        assertThat(acceptedValues()).containsExactly("v1", "v2");
    }

    @Test
    void acceptsSameTokenWhenStoredSeqAbsent() {
        pipe(KEY, "v1", FenceHeaders.TOKEN, "5");
        write(KEY, "v2", 5, 1);

        assertThat(acceptedValues()).containsExactly("v1", "v2");
    }

    @Test
    void acceptsHigherSeqForSameToken() {
        write(KEY, "v1", 5, 1);
        write(KEY, "v2", 5, 2);

        assertThat(acceptedValues()).containsExactly("v1", "v2");
    }

    @Test
    void rejectsRedeliveryAsDuplicate() {
        write(KEY, "v1", 5, 1);
        write(KEY, "v1", 5, 1);

        assertThat(acceptedValues()).containsExactly("v1");
        assertThat(rejectedReasons()).containsExactly("DUPLICATE");
    }

    @Test
    void rejectsLowerSeqForSameTokenAsOutOfOrder() {
        write(KEY, "v2", 5, 2);
        write(KEY, "v1", 5, 1);

        assertThat(acceptedValues()).containsExactly("v2");
        assertThat(rejectedReasons()).containsExactly("OUT_OF_ORDER");
    }

    @Test
    void sameTokenWriteWithoutSeqKeepsStoredSeq() {
        write(KEY, "v3", 5, 3);
        pipe(KEY, "no-seq", FenceHeaders.TOKEN, "5");
        write(KEY, "v1-late", 5, 1);

        assertThat(acceptedValues()).containsExactly("v3", "no-seq");
        assertThat(rejectedReasons()).containsExactly("OUT_OF_ORDER");
    }

    @Test
    void rejectsMarkerCarryingAValue() {
        pipe(KEY, "data", FenceHeaders.TOKEN, "5", FenceHeaders.SEQ, "0", FenceHeaders.OP, "FENCE");
        write(KEY, "v1", 4, 1);

        assertThat(rejectedReasons()).containsExactly("INVALID_MARKER");
        assertThat(acceptedValues()).containsExactly("v1");
    }

    @Test
    void rejectsLowerTokenForSameKey() {
        write(KEY, "new", 6, 1);
        write(KEY, "stale", 5, 9);

        assertThat(acceptedValues()).containsExactly("new");
        assertThat(rejectedReasons()).containsExactly("STALE_TOKEN");
    }

    @Test
    void keepsOneFencePerKey() {
        write(KEY, "a", 6, 1);
        write("customer-43", "b", 5, 1);

        assertThat(acceptedValues()).containsExactly("a", "b");
    }

    // --- routing: accepted byte for byte, rejected with dead-letter headers ---

    @Test
    void forwardsAcceptedRecordByteForByte() {
        byte[] key = utf8(KEY);
        byte[] value = {0, 0, 0, 0, 1, (byte) 0xff, 0x10};
        Headers headers = headers(FenceHeaders.TOKEN, "5", FenceHeaders.SEQ, "1", FenceHeaders.LEASE, "7587", FenceHeaders.WRITER,
                "worker-a", "trace", "abc");

        input.pipeInput(new TestRecord<>(key, value, headers));

        TestRecord<byte[], byte[]> out = accepted.readRecord();
        assertThat(out.key()).isEqualTo(key);
        assertThat(out.value()).isEqualTo(value);
        assertThat(out.headers().toArray()).containsExactly(headers.toArray());
        assertThat(accepted.isEmpty()).isTrue();
    }

    @Test
    void rejectedRecordKeepsKeyValueAndHeadersAndAddsDeadLetterHeaders() {
        write(KEY, "new", 6, 2);
        byte[] value = {0, 0, 0, 0, 1, 42};
        Headers original = headers(FenceHeaders.TOKEN, "5", FenceHeaders.SEQ, "9", FenceHeaders.WRITER, "worker-a");
        input.pipeInput(new TestRecord<>(utf8(KEY), value, original));

        TestRecord<byte[], byte[]> out = rejected.readRecord();
        assertThat(out.key()).isEqualTo(utf8(KEY));
        assertThat(out.value()).isEqualTo(value);
        Header[] headers = out.headers().toArray();
        assertThat(Arrays.copyOf(headers, original.toArray().length)).containsExactly(original.toArray());
        assertThat(headers).hasSize(original.toArray().length + 7);
        assertThat(header(out, FenceHeaders.REJECTED_REASON)).isEqualTo("STALE_TOKEN");
        assertThat(header(out, FenceHeaders.REJECTED_STAGE)).isEqualTo(FenceHeaders.STAGE_ENFORCER);
        assertThat(header(out, FenceHeaders.REJECTED_HIGHEST)).isEqualTo("6.2");
        assertThat(header(out, FenceHeaders.SOURCE_TOPIC)).isEqualTo(INPUT);
        assertThat(header(out, FenceHeaders.SOURCE_PARTITION)).isEqualTo("0");
        assertThat(header(out, FenceHeaders.SOURCE_OFFSET)).isEqualTo("1");
    }

    @Test
    void rejectedRecordKeepsTheTimeItWasWrittenAndSaysWhenItWasRejected() {
        write(KEY, "new", 6, 2);
        Instant written = Instant.now().minus(Duration.ofHours(1));
        input.pipeInput(new TestRecord<>(utf8(KEY), utf8("old"), headers(FenceHeaders.TOKEN, "5", FenceHeaders.SEQ, "1"),
                written));

        TestRecord<byte[], byte[]> out = rejected.readRecord();
        long now = System.currentTimeMillis();
        assertThat(out.timestamp()).as("the record's timestamp: when it was written").isEqualTo(written.toEpochMilli());
        assertThat(Long.parseLong(header(out, FenceHeaders.REJECTED_TIME))).as("when the enforcer rejected it")
                .isBetween(now - 60_000, now);
    }

    @Test
    void rejectedHighestIsEmptyWhenKeyHasNoFence() {
        pipe(KEY, "v", FenceHeaders.SEQ, "1");

        assertThat(header(rejected.readRecord(), FenceHeaders.REJECTED_HIGHEST)).isEmpty();
    }

    // --- FENCE markers and deletes ---

    @Test
    void winningMarkerIsNotForwarded() {
        marker(KEY, 6);

        assertThat(accepted.isEmpty()).isTrue();
        assertThat(rejected.isEmpty()).isTrue();
    }

    @Test
    void winningMarkerIsPublishedToTheMarkersTopicNamingTheAcceptedTopic() {
        marker(KEY, 6);

        TestRecord<byte[], byte[]> out = markers.readRecord();
        assertThat(new String(out.key(), StandardCharsets.UTF_8)).isEqualTo(KEY);
        assertThat(out.value()).isNull();
        assertThat(header(out, FenceHeaders.TOKEN)).isEqualTo("6");
        assertThat(header(out, FenceHeaders.SEQ)).isEqualTo("0");
        assertThat(header(out, FenceHeaders.OP)).isEqualTo("FENCE");
        assertThat(header(out, FenceHeaders.MARKER_TARGET_TOPIC)).isEqualTo(ACCEPTED);
        assertThat(header(out, FenceHeaders.SOURCE_TOPIC)).isEqualTo(INPUT);
        assertThat(header(out, FenceHeaders.SOURCE_OFFSET)).isEqualTo("0");
        assertThat(markers.isEmpty()).isTrue();
    }

    /**
     * A published marker carries only its fence, short lease and writer, target and source: 2 MB of other headers stay behind.
     */
    @Test
    void publishedMarkerCarriesOnlyItsFenceHeaders() {
        pipe(KEY, null, FenceHeaders.TOKEN, "6", FenceHeaders.SEQ, "0", FenceHeaders.OP, "fence", FenceHeaders.WRITER, "worker-1",
                FenceHeaders.LEASE, "x".repeat(300), "bulk", "z".repeat(2 * 1024 * 1024));

        TestRecord<byte[], byte[]> out = markers.readRecord();
        List<String> names = new ArrayList<>();
        out.headers().forEach(header -> names.add(header.key()));
        assertThat(names).containsExactly(FenceHeaders.TOKEN, FenceHeaders.SEQ, FenceHeaders.OP, FenceHeaders.WRITER,
                FenceHeaders.MARKER_TARGET_TOPIC,
                FenceHeaders.SOURCE_TOPIC, FenceHeaders.SOURCE_PARTITION, FenceHeaders.SOURCE_OFFSET);
        assertThat(header(out, FenceHeaders.OP)).isEqualTo("FENCE");
    }

    /**
     * A rejected copy sent back to the input would carry its old rejection to the accepted topic, where the sink refuses it: the
     * enforcer refuses it first.
     */
    @Test
    void rejectsARecordThatAlreadyCarriesRejectionHeaders() {
        pipe(KEY, "resent", FenceHeaders.TOKEN, "5", FenceHeaders.SEQ, "1", FenceHeaders.REJECTED_REASON, "TOO_LARGE");
        write(KEY, "clean", 5, 1);

        assertThat(acceptedValues()).containsExactly("clean");
        assertThat(rejectedReasons()).containsExactly("ALREADY_REJECTED");
        assertThat(fencedWrites(RejectionReason.ALREADY_REJECTED)).isEqualTo(1.0);
    }

    /** The published marker names the fence it superseded, so the sink can wait for the writes accepted before it. */
    @Test
    void publishedMarkerNamesTheFenceItSuperseded() {
        marker(KEY, 5);
        write(KEY, "v1", 5, 1);
        marker(KEY, 6);

        assertThat(header(markers.readRecord(), FenceHeaders.MARKER_PREVIOUS)).as("the key had no fence").isNull();
        assertThat(header(markers.readRecord(), FenceHeaders.MARKER_PREVIOUS)).isEqualTo("5.1");
    }

    @Test
    void losingMarkerIsNotPublishedToTheMarkersTopic() {
        write(KEY, "v1", 6, 1);
        marker(KEY, 5);
        marker(KEY, 6);

        assertThat(markers.isEmpty()).isTrue();
        assertThat(rejectedReasons()).containsExactly("STALE_TOKEN", "OUT_OF_ORDER");
    }

    @Test
    void winningMarkerRaisesFence() {
        write(KEY, "v1", 5, 1);
        marker(KEY, 6);
        write(KEY, "stale", 5, 2);

        assertThat(acceptedValues()).containsExactly("v1");
        TestRecord<byte[], byte[]> out = rejected.readRecord();
        assertThat(header(out, FenceHeaders.REJECTED_REASON)).isEqualTo("STALE_TOKEN");
        assertThat(header(out, FenceHeaders.REJECTED_HIGHEST)).isEqualTo("6.0");
        assertThat(rejected.isEmpty()).isTrue();
    }

    @Test
    void newHolderWritesAfterItsOwnMarker() {
        marker(KEY, 6);
        write(KEY, "v1", 6, 1);

        assertThat(acceptedValues()).containsExactly("v1");
    }

    @Test
    void rejectsLosingMarker() {
        write(KEY, "v1", 6, 1);
        marker(KEY, 5);

        TestRecord<byte[], byte[]> out = rejected.readRecord();
        assertThat(header(out, FenceHeaders.REJECTED_REASON)).isEqualTo("STALE_TOKEN");
        assertThat(header(out, FenceHeaders.OP)).isEqualTo("FENCE");
        assertThat(out.value()).isNull();
    }

    @Test
    void forwardsDeleteAndKeepsFence() {
        write(KEY, "v1", 6, 1);
        pipe(KEY, null, FenceHeaders.TOKEN, "6", FenceHeaders.SEQ, "2", FenceHeaders.OP, "WRITE");
        write(KEY, "stale", 5, 3);

        List<TestRecord<byte[], byte[]>> out = accepted.readRecordsToList();
        assertThat(out).hasSize(2);
        assertThat(out.get(1).value()).isNull();
        assertThat(header(out.get(1), FenceHeaders.TOKEN)).isEqualTo("6");
        assertThat(rejectedReasons()).containsExactly("STALE_TOKEN");
    }

    // --- invalid records ---

    @Test
    void rejectsNullKeyAsMissingKey() {
        input.pipeInput(new TestRecord<>((byte[]) null, utf8("v"), headers(FenceHeaders.TOKEN, "5")));

        assertThat(rejectedReasons()).containsExactly("MISSING_KEY");
        assertThat(accepted.isEmpty()).isTrue();
    }

    /** Keys differing only in bytes that are not UTF-8 would share one row behind a StringConverter: neither gets a fence. */
    @Test
    void rejectsKeysThatAreNotUtf8AsMalformedKeyAndAcceptsTextBeyondAscii() {
        for (byte[] key : List.of(new byte[]{'a', 'c', 'c', 't', (byte) 0xFF}, new byte[]{'a', 'c', 'c', 't', (byte) 0xFE},
                new byte[]{(byte) 0xC3}, new byte[]{(byte) 0xED, (byte) 0xA0, (byte) 0x80})) {
            input.pipeInput(new TestRecord<>(key, utf8("v"), headers(FenceHeaders.TOKEN, "5", FenceHeaders.SEQ, "1")));
        }
        write("Zoë-€-𝄞", "text", 5, 1);

        assertThat(rejectedReasons()).containsExactly("MALFORMED_KEY", "MALFORMED_KEY", "MALFORMED_KEY", "MALFORMED_KEY");
        assertThat(acceptedValues()).containsExactly("text");
        assertThat(meters.get("fence.enforcer.records.fenced").tag("reason", "MALFORMED_KEY").counter().count()).isEqualTo(4);
    }

    @Test
    void rejectsEmptyKeyAsMissingKey() {
        input.pipeInput(new TestRecord<>(new byte[0], utf8("v"), headers(FenceHeaders.TOKEN, "5")));

        assertThat(rejectedReasons()).containsExactly("MISSING_KEY");
        assertThat(accepted.isEmpty()).isTrue();
    }

    @ParameterizedTest(name = "{0}: {1}")
    @CsvSource(delimiter = '|', textBlock = """
            MISSING_TOKEN   | fence.seq=1
            MALFORMED_TOKEN | fence.token=abc
            MALFORMED_TOKEN | fence.token=0
            MALFORMED_TOKEN | fence.token=-5
            MALFORMED_TOKEN | fence.token=9223372036854775808
            MALFORMED_TOKEN | fence.token=5,fence.token=6
            MALFORMED_SEQ   | fence.token=5,fence.seq=x
            UNKNOWN_OP      | fence.token=5,fence.op=DELETE
            LEASE_AS_TOKEN  | fence.token=7587869054862721234,fence.lease=7587869054862721234
            """)
    void rejectsInvalidFenceHeadersWithReason(RejectionReason reason, String headers) {
        List<String> pairs = new ArrayList<>();
        for (String pair : headers.split(",")) {
            pairs.addAll(List.of(pair.split("=", 2)));
        }
        pipe(KEY, "v", pairs.toArray(String[]::new));

        assertThat(rejectedReasons()).containsExactly(reason.name());
        assertThat(accepted.isEmpty()).isTrue();
    }

    @Test
    void invalidRecordDoesNotChangeFence() {
        write(KEY, "v1", 6, 1);
        pipe(KEY, "bad", FenceHeaders.TOKEN, "7", FenceHeaders.SEQ, "x");
        write(KEY, "v2", 6, 2);

        assertThat(acceptedValues()).containsExactly("v1", "v2");
    }

    @Test
    void everyInputRecordLandsInExactlyOneOutputTopicExceptWinningMarkers() {
        write(KEY, "a1", 5, 1); // accepted
        write(KEY, "a1", 5, 1); // DUPLICATE
        marker(KEY, 6); // winning marker: no output
        write(KEY, "a2", 5, 2); // STALE_TOKEN
        marker(KEY, 4); // losing marker: rejected
        write(KEY, "b1", 6, 1); // accepted
        pipe(KEY, null, FenceHeaders.TOKEN, "6", FenceHeaders.SEQ, "2"); // delete: accepted
        pipe(KEY, "x", FenceHeaders.SEQ, "3"); // MISSING_TOKEN
        input.pipeInput(new TestRecord<>((byte[]) null, utf8("y"), headers(FenceHeaders.TOKEN, "9"))); // MISSING_KEY

        List<String> sourceOffsets = new ArrayList<>();
        for (TestRecord<byte[], byte[]> out : rejected.readRecordsToList()) {
            sourceOffsets.add(header(out, FenceHeaders.SOURCE_OFFSET));
        }
        assertThat(accepted.getQueueSize()).isEqualTo(3);
        assertThat(sourceOffsets).containsExactly("1", "3", "4", "7", "8");
    }

    // --- metrics ---

    @Test
    void countsAcceptedWrites() {
        write(KEY, "v1", 5, 1);
        write(KEY, "v2", 5, 2);

        assertThat(meters.get("fence.enforcer.records.accepted").counter().count()).isEqualTo(2.0);
    }

    @Test
    void countsAcceptedMarkersApartFromWrites() {
        marker(KEY, 5);

        assertThat(meters.get("fence.enforcer.markers.accepted").counter().count()).isEqualTo(1.0);
        assertThat(meters.get("fence.enforcer.records.accepted").counter().count()).isZero();
    }

    @Test
    void countsRejectionsByReasonWithEnforcerStage() {
        write(KEY, "v1", 6, 1);
        write(KEY, "v1", 6, 1);
        write(KEY, "stale", 5, 1);
        write(KEY, "stale", 5, 2);

        assertThat(fencedWrites(RejectionReason.STALE_TOKEN)).isEqualTo(2.0);
        assertThat(fencedWrites(RejectionReason.DUPLICATE)).isEqualTo(1.0);
        assertThat(fencedWrites(RejectionReason.OUT_OF_ORDER)).isZero();
        assertThat(meters.get("fence.enforcer.records.accepted").counter().count()).isEqualTo(1.0);
    }

    /** A lease id sent as the token must not raise the fence, or it would block every real token. */
    @Test
    void leaseIdSentAsTokenIsCountedAndRaisesNoFence() {
        pipe(KEY, "v", FenceHeaders.TOKEN, "7587869054862721234", FenceHeaders.SEQ, "1", FenceHeaders.LEASE,
                "7587869054862721234");
        write(KEY, "real", 5, 1);

        assertThat(acceptedValues()).containsExactly("real");
        assertThat(fencedWrites(RejectionReason.LEASE_AS_TOKEN)).isEqualTo(1.0);
    }

    // --- helpers ---

    private double fencedWrites(RejectionReason reason) {
        return meters.get("fence.enforcer.records.fenced").tag("reason", reason.name()).counter().count();
    }

    private void write(String key, String value, long token, long seq) {
        pipe(key, value, FenceHeaders.TOKEN, Long.toString(token), FenceHeaders.SEQ, Long.toString(seq));
    }

    private void marker(String key, long token) {
        pipe(key, null, FenceHeaders.TOKEN, Long.toString(token), FenceHeaders.SEQ, "0", FenceHeaders.OP, "FENCE");
    }

    private void pipe(String key, String value, String... headerNamesAndValues) {
        input.pipeInput(new TestRecord<>(utf8(key), value == null ? null : utf8(value), headers(headerNamesAndValues)));
    }

    private List<String> rejectedReasons() {
        List<String> reasons = new ArrayList<>();
        for (TestRecord<byte[], byte[]> out : rejected.readRecordsToList()) {
            reasons.add(header(out, FenceHeaders.REJECTED_REASON));
        }
        return reasons;
    }

    private List<String> acceptedValues() {
        List<String> values = new ArrayList<>();
        for (TestRecord<byte[], byte[]> out : accepted.readRecordsToList()) {
            values.add(out.value() == null ? null : new String(out.value(), StandardCharsets.UTF_8));
        }
        return values;
    }
}
