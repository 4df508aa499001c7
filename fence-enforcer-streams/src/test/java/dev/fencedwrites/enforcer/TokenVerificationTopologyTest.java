package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.RejectionReason;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * When the enforcer asks its {@link TokenVerifier}: for every record the decision rule
 * would accept (a raise or a write at the fence), after every cheaper rule, and what it does with each answer. The verifier here
 * is a
 * table of (key, token, lease) triples; the real check against etcd is proven by the ITs.
 */
class TokenVerificationTopologyTest extends TopologyFixture {
    private static final String KEY = "customer-7";
    private static final long LEASE = 7_000;

    private final TableVerifier verifier = new TableVerifier();

    /**
     * Verifies what it was told held; answers FUTURE_TOKEN above {@link #current}, else LOCK_NOT_HELD; records every question.
     */
    static final class TableVerifier implements TokenVerifier {
        final Set<String> held = new HashSet<>();
        final Map<String, Long> tenures = new HashMap<>();
        final List<String> asked = new ArrayList<>();
        long current = 1_000;

        void held(String key, long token, long lease) {
            held.add(key + "/" + token + "/" + lease);
        }

        /** Held, in the tenure whose lock key was created at {@code tenureStart}. */
        void held(String key, long token, long lease, long tenureStart) {
            held(key, token, lease);
            tenures.put(key + "/" + token + "/" + lease, tenureStart);
        }

        @Override
        public Verdict verify(byte[] key, long token, long leaseId) {
            String triple = new String(key, StandardCharsets.UTF_8) + "/" + token + "/" + leaseId;
            asked.add(triple);
            if (token > current) {
                return new Verdict(RejectionReason.FUTURE_TOKEN, "above " + current);
            }
            return held.contains(triple)
                    ? Verdict.verified("held", tenures.getOrDefault(triple, 0L))
                    : new Verdict(RejectionReason.LOCK_NOT_HELD, "not held");
        }

        @Override
        public void close() {
        }
    }

    @BeforeEach
    void startDriver() {
        start(FenceEnforcerTopology.build(FenceEnforcerTopology.Settings
                .of(INPUT, ACCEPTED, REJECTED, FenceEnforcerTopology.Limits.unbounded(1)).withMarkers(MARKERS)
                .withVerifier(verifier),
                meters), "fence-enforcer-test", null);
    }

    @Test
    void aKeysFirstTokenIsVerifiedAndAcceptedWhenItsLeaseHeldTheLock() {
        verifier.held(KEY, 5, LEASE);

        write(KEY, "v1", 5, 1, LEASE);

        assertThat(values(accepted.readRecordsToList())).containsExactly("v1");
        assertThat(verifier.asked).containsExactly(KEY + "/5/" + LEASE);
    }

    /** The fence store keeps the lease confirmed for the fence's token: the holder's writes at its fence need no question. */
    @Test
    void writesAtTheFenceUnderTheStoredLeaseAreAcceptedWithoutAskingTheVerifier() {
        verifier.held(KEY, 5, LEASE);

        write(KEY, "v1", 5, 1, LEASE);
        write(KEY, "v2", 5, 2, LEASE);
        write(KEY, "v3", 5, 3, LEASE);

        assertThat(values(accepted.readRecordsToList())).containsExactly("v1", "v2", "v3");
        assertThat(verifier.asked).containsExactly(KEY + "/5/" + LEASE);
    }

    /**
     * Found in review: tokens are not unique across locks (waiters woken by one etcd change get the
     * same revision), so another lock's token can equal the key's fence. With another lease it is
     * refused, and cannot push the seq out of the holder's reach.
     */
    @Test
    void aBorrowedTokenEqualToTheFenceIsRejectedAndTheHolderWritesOn() {
        verifier.held(KEY, 5, LEASE);
        verifier.held("another-key", 5, LEASE + 9);
        write(KEY, "holder 1", 5, 1, LEASE);

        write(KEY, "borrowed", 5, 9_000_000_000_000_000_000L, LEASE + 9);
        input.pipeInput(new TestRecord<>(utf8(KEY), utf8("no lease"), headers(FenceHeaders.TOKEN, "5", FenceHeaders.SEQ, "8")));
        write(KEY, "holder 2", 5, 2, LEASE);

        assertThat(values(accepted.readRecordsToList())).containsExactly("holder 1", "holder 2");
        assertThat(rejectedReasons()).containsExactly("LOCK_NOT_HELD", "MISSING_LEASE");
        assertThat(verifier.asked).as("the stored lease answers; etcd is not asked").containsExactly(KEY + "/5/" + LEASE);
    }

    @Test
    void aTokenAboveTheFenceIsVerifiedAgain() {
        verifier.held(KEY, 5, LEASE);
        verifier.held(KEY, 9, LEASE + 1);

        write(KEY, "a", 5, 1, LEASE);
        write(KEY, "b", 9, 1, LEASE + 1);

        assertThat(values(accepted.readRecordsToList())).containsExactly("a", "b");
        assertThat(verifier.asked).containsExactly(KEY + "/5/" + LEASE, KEY + "/9/" + (LEASE + 1));
    }

    /** Every revision of a tenure reads as held: a later one under the fence's own lease must not lock the holder out. */
    @Test
    void aHigherTokenInTheSameTenureUnderTheFencesLeaseIsRejectedAndTheHolderWritesOn() {
        verifier.held(KEY, 5, LEASE, 5);
        verifier.held(KEY, 900, LEASE, 5);
        write(KEY, "holder 1", 5, 1, LEASE);

        write(KEY, "current revision", 900, 1, LEASE);
        write(KEY, "holder 2", 5, 2, LEASE);

        assertThat(rejectedReasons()).containsExactly("LOCK_NOT_HELD");
        assertThat(values(accepted.readRecordsToList())).containsExactly("holder 1", "holder 2");
    }

    @Test
    void aHigherTokenInANewTenureUnderTheSameLeaseRaisesTheFence() {
        verifier.held(KEY, 5, LEASE, 3);
        verifier.held(KEY, 9, LEASE, 8);
        write(KEY, "first tenure", 5, 1, LEASE);

        write(KEY, "second tenure", 9, 1, LEASE);
        write(KEY, "first tenure again", 5, 2, LEASE);

        assertThat(values(accepted.readRecordsToList())).containsExactly("first tenure", "second tenure");
        assertThat(rejectedReasons()).containsExactly("STALE_TOKEN");
    }

    @Test
    void aFutureTokenIsRejectedAndTheFenceStays() {
        verifier.held(KEY, 5, LEASE);
        write(KEY, "good", 5, 1, LEASE);

        write(KEY, "forged", Long.MAX_VALUE, 1, LEASE);
        write(KEY, "good again", 5, 2, LEASE);

        assertThat(values(accepted.readRecordsToList())).containsExactly("good", "good again");
        TestRecord<byte[], byte[]> refused = rejected.readRecord();
        assertThat(header(refused, FenceHeaders.REJECTED_REASON)).isEqualTo("FUTURE_TOKEN");
        assertThat(header(refused, FenceHeaders.REJECTED_HIGHEST)).isEqualTo("5.1");
        assertThat(meters.get("fence.enforcer.records.fenced").tag("reason", "FUTURE_TOKEN").counter().count()).isEqualTo(1.0);
    }

    @Test
    void aTokenWhoseLeaseDidNotHoldTheLockIsRejectedAndTheNextHolderIsAccepted() {
        verifier.held(KEY, 5, LEASE);
        verifier.held(KEY, 12, LEASE + 2);
        write(KEY, "good", 5, 1, LEASE);

        write(KEY, "borrowed", 10, 1, LEASE + 1);
        write(KEY, "next holder", 12, 1, LEASE + 2);

        assertThat(rejectedReasons()).containsExactly("LOCK_NOT_HELD");
        assertThat(values(accepted.readRecordsToList())).containsExactly("good", "next holder");
    }

    @Test
    void aForgedMarkerNeitherRaisesTheFenceNorReachesTheMarkersTopic() {
        verifier.held(KEY, 5, LEASE);
        write(KEY, "good", 5, 1, LEASE);

        marker(KEY, 600, LEASE + 1);
        write(KEY, "still good", 5, 2, LEASE);

        assertThat(rejectedReasons()).containsExactly("LOCK_NOT_HELD");
        assertThat(markers.isEmpty()).isTrue();
        assertThat(values(accepted.readRecordsToList())).containsExactly("good", "still good");
    }

    @Test
    void aVerifiedMarkerRaisesTheFenceAndIsPublished() {
        verifier.held(KEY, 8, LEASE);

        marker(KEY, 8, LEASE);

        assertThat(markers.readRecordsToList()).hasSize(1);
        assertThat(verifier.asked).containsExactly(KEY + "/8/" + LEASE);
    }

    @Test
    void aRaisingWriteWithoutALeaseIsRejectedMissingLeaseWithoutAskingTheVerifier() {
        input.pipeInput(new TestRecord<>(utf8(KEY), utf8("no lease"), headers(FenceHeaders.TOKEN, "5", FenceHeaders.SEQ, "1")));

        assertThat(rejectedReasons()).containsExactly("MISSING_LEASE");
        assertThat(verifier.asked).isEmpty();
    }

    @Test
    void malformedLeasesAreRejectedMalformedLease() {
        for (String lease : new String[]{"", "-5", "0", "12abc", "99999999999999999999", "٣"}) {
            input.pipeInput(
                    new TestRecord<>(utf8(KEY), utf8("x"), headers(FenceHeaders.TOKEN, "5", FenceHeaders.LEASE, lease)));
        }
        RecordHeaders twoLeases = headers(FenceHeaders.TOKEN, "5", FenceHeaders.LEASE, "7");
        twoLeases.add(FenceHeaders.LEASE, utf8("8"));
        input.pipeInput(new TestRecord<>(utf8(KEY), utf8("x"), twoLeases));

        assertThat(rejectedReasons()).hasSize(7).containsOnly("MALFORMED_LEASE");
        assertThat(verifier.asked).isEmpty();
    }

    @Test
    void aStaleOrDuplicateWriteIsDecidedWithoutTheVerifierAndAWriteAtTheFenceNeedsItsLease() {
        verifier.held(KEY, 5, LEASE);
        write(KEY, "good", 5, 2, LEASE);

        write(KEY, "stale", 4, 9, LEASE);
        write(KEY, "duplicate", 5, 2, LEASE);
        input.pipeInput(new TestRecord<>(utf8(KEY), utf8("same token, no lease"),
                headers(FenceHeaders.TOKEN, "5", FenceHeaders.SEQ, "3")));

        assertThat(rejectedReasons()).containsExactly("STALE_TOKEN", "DUPLICATE", "MISSING_LEASE");
        assertThat(values(accepted.readRecordsToList())).containsExactly("good");
        assertThat(verifier.asked).hasSize(1);
    }

    @Test
    void cheaperRulesComeFirstSoAMarkerWithAValueIsRejectedInvalidMarkerUnasked() {
        RecordHeaders headers = headers(FenceHeaders.TOKEN, "5", FenceHeaders.LEASE, Long.toString(LEASE), FenceHeaders.OP,
                "FENCE");

        input.pipeInput(new TestRecord<>(utf8(KEY), utf8("a value"), headers));

        assertThat(rejectedReasons()).containsExactly("INVALID_MARKER");
        assertThat(verifier.asked).isEmpty();
    }

    @Test
    void theLeaseAsTokenMistakeIsRejectedBeforeVerification() {
        write(KEY, "lease id", LEASE, 1, LEASE);

        assertThat(rejectedReasons()).containsExactly("LEASE_AS_TOKEN");
        assertThat(verifier.asked).isEmpty();
    }

    private void write(String key, String value, long token, long seq, long lease) {
        input.pipeInput(
                new TestRecord<>(utf8(key), utf8(value), headers(FenceHeaders.TOKEN, Long.toString(token), FenceHeaders.SEQ,
                        Long.toString(seq), FenceHeaders.LEASE, Long.toString(lease))));
    }

    private void marker(String key, long token, long lease) {
        input.pipeInput(
                new TestRecord<>(utf8(key), null, headers(FenceHeaders.TOKEN, Long.toString(token), FenceHeaders.SEQ, "0",
                        FenceHeaders.LEASE, Long.toString(lease), FenceHeaders.OP, "FENCE")));
    }

    private List<String> rejectedReasons() {
        return rejected.readRecordsToList().stream().map(r -> header(r, FenceHeaders.REJECTED_REASON)).toList();
    }

    private static List<String> values(List<TestRecord<byte[], byte[]>> records) {
        return records.stream().map(r -> new String(r.value(), StandardCharsets.UTF_8)).toList();
    }
}
