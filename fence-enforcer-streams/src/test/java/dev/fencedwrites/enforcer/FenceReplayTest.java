package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.enforcer.TaskSimulation.Output;
import dev.fencedwrites.enforcer.internal.StoredFence;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.StreamsConfig;
import org.assertj.core.groups.Tuple;
import org.junit.jupiter.api.Test;

/**
 * The replay rule, one rule per test: under at_least_once the fence store can be ahead
 * of the committed offsets after a crash, and the records processed again must get the outcome they
 * got the first time. {@link TaskSimulation} drives the real processor through evictions, commits
 * and crashes that lose the producer's buffer.
 */
class FenceReplayTest {
    private static final String KEY = "customer-42";

    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final TaskSimulation task = new TaskSimulation(StreamsConfig.AT_LEAST_ONCE, meters);

    /** The case the issue's own example misses: T.1 and T.2 both accepted, the store holds T.2, neither copy delivered. */
    @Test
    void writeAcceptedBeforeALaterRaiseIsForwardedAgainWhenItsCopyWasLost() {
        int first = write(KEY, 6, 1);
        int second = write(KEY, 6, 2);
        task.processAll();
        task.evict(KEY);
        task.crash(output -> false);

        task.finish();

        assertThat(acceptedIds()).containsExactly(first, second);
        assertThat(task.delivered()).noneMatch(output -> !output.accepted());
    }

    /** The example: the record that set the fence is replayed and must not be rejected DUPLICATE. */
    @Test
    void writeThatSetTheRestoredFenceIsForwardedAgainWhenItsCopyWasLost() {
        write(KEY, 5, 1);
        task.processAll();
        task.commit();
        int raise = write(KEY, 6, 1);
        task.processAll();
        task.evict(KEY);
        task.crash(output -> false);

        task.finish();

        assertThat(acceptedIds()).containsExactly(0, raise);
    }

    /**
     * Found by EnforcerCrashIT: a token the verifier refused the first time, replayed after
     * a later holder raised the fence, is rejected again for the same reason against the same fence,
     * not {@code STALE_TOKEN} against the current one.
     */
    @Test
    void aTokenTheVerifierRefusedIsRefusedAgainForTheSameReasonOnReplay() {
        TokenVerificationTopologyTest.TableVerifier verifier = new TokenVerificationTopologyTest.TableVerifier();
        verifier.held(KEY, 6, 60);
        verifier.held(KEY, 9, 90);
        TaskSimulation verified = new TaskSimulation(StreamsConfig.AT_LEAST_ONCE, new SimpleMeterRegistry(), verifier);
        verified.append(KEY, value(), leased(6, 1, 60));
        verified.processAll();
        verified.commit();
        int borrowed = verified.append(KEY, value(), leased(8, 1, 77));
        verified.append(KEY, value(), leased(9, 1, 90));
        verified.processAll();
        verified.evict(KEY);
        verified.crash(output -> false);

        verified.finish();

        assertThat(verified.delivered()).filteredOn(output -> output.id() == borrowed)
                .containsExactly(new Output(borrowed, false, RejectionReason.LOCK_NOT_HELD, "6.1"));
    }

    /**
     * A fence stored without a lease (written before verification was on, or by an earlier version):
     * the first write at it asks the verifier, and the confirmed lease is stored, so the next does not.
     */
    @Test
    void aFenceStoredWithoutALeaseAsksTheVerifierOnceAndThenKeepsTheLease() {
        TokenVerificationTopologyTest.TableVerifier verifier = new TokenVerificationTopologyTest.TableVerifier();
        verifier.held(KEY, 6, 60);
        TaskSimulation verified = new TaskSimulation(StreamsConfig.EXACTLY_ONCE_V2, new SimpleMeterRegistry(), verifier);
        verified.seed(KEY, StoredFence.of(new Fence(6, 1)));
        int first = verified.append(KEY, value(), leased(6, 2, 60));
        int second = verified.append(KEY, value(), leased(6, 3, 60));
        int borrowed = verified.append(KEY, value(), leased(6, 4, 61));

        verified.processAll();
        verified.finish();

        assertThat(verified.delivered()).extracting(Output::id, Output::accepted, Output::reason)
                .containsExactly(Tuple.tuple(first, true, null),
                        Tuple.tuple(second, true, null),
                        Tuple.tuple(borrowed, false, RejectionReason.LOCK_NOT_HELD));
        assertThat(verifier.asked).containsExactly(KEY + "/6/60");
        assertThat(verified.durable(KEY).lease()).isEqualTo(60);
    }

    /**
     * A token above etcd's revision is rejected FUTURE_TOKEN; by the replay after a crash etcd has passed it (and, here,
     * the lease did hold the lock then): the replay repeats the first rejection instead of accepting the record, which
     * would put it on both topics.
     */
    @Test
    void aFutureTokenIsRejectedAgainOnReplayAfterEtcdHasPassedIt() {
        TokenVerificationTopologyTest.TableVerifier verifier = new TokenVerificationTopologyTest.TableVerifier();
        verifier.current = 8;
        verifier.held(KEY, 6, 60);
        verifier.held(KEY, 9, 90);
        TaskSimulation verified = new TaskSimulation(StreamsConfig.AT_LEAST_ONCE, new SimpleMeterRegistry(), verifier);
        verified.append(KEY, value(), leased(6, 1, 60));
        verified.processAll();
        verified.commit();
        int future = verified.append(KEY, value(), leased(9, 1, 90));
        verified.processAll();
        verified.evict(KEY);
        verified.crash(output -> true);
        verifier.current = 1_000;

        verified.finish();

        assertThat(verified.delivered()).filteredOn(output -> output.id() == future).extracting(Output::accepted,
                Output::reason).containsOnly(Tuple.tuple(false, RejectionReason.FUTURE_TOKEN));
        assertThat(verified.delivered()).filteredOn(output -> output.id() == future).hasSize(2);
    }

    /**
     * What GET /fences/{key} answers after an at_least_once restart (the restored fence, ahead of the committed offset) is
     * what the replay leaves: it repeats each first decision and writes nothing, so the answer is never taken back.
     */
    @Test
    void theFenceRestoredAheadOfTheCommittedOffsetIsTheOneTheReplayLeaves() {
        write(KEY, 5, 1);
        task.processAll();
        task.commit();
        int raise = write(KEY, 6, 1);
        int stale = write(KEY, 5, 2);
        task.processAll();
        task.evict(KEY);
        task.crash(output -> false);
        Fence answeredAfterRestart = task.live(KEY).fence();

        task.finish();

        assertThat(answeredAfterRestart).isEqualTo(new Fence(6, 1));
        assertThat(task.live(KEY).fence()).isEqualTo(answeredAfterRestart);
        assertThat(acceptedIds()).containsExactly(0, raise);
        assertThat(task.delivered()).filteredOn(output -> output.id() == stale).extracting(Output::reason)
                .containsOnly(RejectionReason.STALE_TOKEN);
    }

    /** A key's first record stores nothing when rejected: records forged for ever new keys cannot grow the store. */
    @Test
    void aFirstRecordRejectedFutureTokenStoresNothing() {
        TokenVerificationTopologyTest.TableVerifier verifier = new TokenVerificationTopologyTest.TableVerifier();
        verifier.current = 8;
        TaskSimulation verified = new TaskSimulation(StreamsConfig.AT_LEAST_ONCE, new SimpleMeterRegistry(), verifier);
        verified.append("forged-1", value(), leased(9, 1, 90));
        verified.append("forged-2", value(), leased(9, 1, 90));

        verified.processAll();

        assertThat(verified.live("forged-1")).isNull();
        assertThat(verified.live("forged-2")).isNull();
    }

    /**
     * A record too large for the accepted topic is rejected TOO_LARGE; the operator raises the topic's limit and the
     * enforcer restarts before its commit: the replay repeats the rejection rather than accept the record.
     */
    @Test
    void aRecordTooLargeIsRejectedAgainOnReplayAfterTheLimitWasRaised() {
        task.limits(new FenceEnforcerTopology.Limits(1, 200, Integer.MAX_VALUE, Integer.MAX_VALUE));
        task.crash(output -> true); // starts the processor with the small limit
        write(KEY, 5, 1);
        task.processAll();
        task.commit();
        int large = task.append(KEY, new byte[1_000], headers(6, 1L, false));
        task.processAll();
        task.evict(KEY);
        task.limits(FenceEnforcerTopology.Limits.unbounded(1));
        task.crash(output -> true);

        task.finish();

        assertThat(task.delivered()).filteredOn(output -> output.id() == large).extracting(Output::accepted, Output::reason)
                .containsOnly(Tuple.tuple(false, RejectionReason.TOO_LARGE));
        assertThat(task.live(KEY).fence()).isEqualTo(new Fence(5, 1));
    }

    private static RecordHeaders leased(long token, long seq, long lease) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, Long.toString(token).getBytes(StandardCharsets.UTF_8));
        headers.add(FenceHeaders.SEQ, Long.toString(seq).getBytes(StandardCharsets.UTF_8));
        headers.add(FenceHeaders.LEASE, Long.toString(lease).getBytes(StandardCharsets.UTF_8));
        return headers;
    }

    @Test
    void staleWriteInTheReplayedRangeIsRejectedAgainWithTheFenceItMetTheFirstTime() {
        write(KEY, 6, 1);
        task.processAll();
        task.commit();
        int stale = write(KEY, 5, 9);
        write(KEY, 7, 1);
        task.processAll();
        task.evict(KEY);
        task.crash(output -> false);

        task.finish();

        assertThat(task.delivered()).filteredOn(output -> output.id() == stale)
                .containsExactly(new Output(stale, false, RejectionReason.STALE_TOKEN, "6.1"));
    }

    /**
     * A design that keeps only the fence as of the last commit (and replays from it in memory) lets
     * the stale write through here: the second replay starts at a later commit than that fence.
     */
    @Test
    void aCommitInTheMiddleOfAReplayLetsNoStaleWriteThroughAfterASecondCrash() {
        write(KEY, 5, 1);
        task.processAll();
        task.commit();
        int raise = write(KEY, 6, 1);
        int stale = write(KEY, 5, 2);
        int next = write(KEY, 6, 2);
        int last = write(KEY, 7, 1);
        task.processAll();
        task.evict(KEY);
        task.crash(output -> false);
        task.processNext();
        task.commit();
        task.crash(output -> false);

        task.finish();

        assertThat(task.delivered()).filteredOn(output -> output.id() == stale)
                .containsExactly(new Output(stale, false, RejectionReason.STALE_TOKEN, "6.1"));
        assertThat(acceptedIds()).containsExactly(0, raise, next, last);
    }

    @Test
    void outOfOrderWriteInTheReplayedRangeIsRejectedAgainNotAccepted() {
        write(KEY, 6, 2);
        task.processAll();
        task.commit();
        int late = write(KEY, 6, 1);
        write(KEY, 6, 3);
        task.processAll();
        task.evict(KEY);
        task.crash(output -> false);

        task.finish();

        assertThat(task.delivered()).filteredOn(output -> output.id() == late)
                .containsExactly(new Output(late, false, RejectionReason.OUT_OF_ORDER, "6.2"));
    }

    @Test
    void markerInTheReplayedRangeRaisesNothingAndIsNotForwarded() {
        write(KEY, 5, 1);
        task.processAll();
        task.commit();
        marker(KEY, 6);
        int stale = write(KEY, 5, 2);
        int own = write(KEY, 6, 1);
        task.processAll();
        task.evict(KEY);
        task.crash(output -> false);

        task.finish();

        assertThat(acceptedIds()).containsExactly(0, own);
        assertThat(task.delivered()).filteredOn(output -> output.id() == stale)
                .containsExactly(new Output(stale, false, RejectionReason.STALE_TOKEN, "6.0"));
    }

    @Test
    void replayLeavesTheStoredValueAsTheFirstPassLeftIt() {
        write(KEY, 5, 1);
        task.processAll();
        task.commit();
        write(KEY, 6, 1);
        write(KEY, 6, 2);
        task.processAll();
        task.evict(KEY);
        StoredFence ahead = task.live(KEY);
        task.crash(output -> false);

        task.finish();

        assertThat(task.live(KEY)).isEqualTo(ahead);
    }

    @Test
    void writesAfterTheReplayedRangeAreDecidedAgainstTheRestoredFence() {
        write(KEY, 6, 1);
        task.processAll();
        task.evict(KEY);
        task.crash(output -> false);
        int duplicate = write(KEY, 6, 1);
        int next = write(KEY, 6, 2);

        task.finish();

        assertThat(task.delivered()).filteredOn(output -> output.id() == duplicate)
                .containsExactly(new Output(duplicate, false, RejectionReason.DUPLICATE, "6.1"));
        assertThat(acceptedIds()).containsExactly(0, next);
    }

    /**
     * The input's offsets went back (group offsets reset, topic recreated): a different record now sits at a remembered offset.
     */
    @Test
    void recordAtARememberedOffsetThatIsNotTheRememberedAcceptIsDecidedAgainstTheCurrentFence() {
        task.seed(KEY, new StoredFence(null, 0,
                List.of(new StoredFence.Accept(0, new Fence(6, 1)), new StoredFence.Accept(1, new Fence(7, 1)))));
        int other = write(KEY, 6, 5);

        task.finish();

        assertThat(task.delivered()).containsExactly(new Output(other, false, RejectionReason.STALE_TOKEN, "7.1"));
    }

    @Test
    void commitFoldsTheAcceptsBeforeItIntoTheBaseAtTheNextAccept() {
        write(KEY, 6, 1);
        write(KEY, 6, 2);
        task.processAll();
        task.commit();
        write(KEY, 6, 3);
        task.processAll();

        assertThat(task.live(KEY))
                .isEqualTo(new StoredFence(new Fence(6, 2), 2, List.of(new StoredFence.Accept(2, new Fence(6, 3)))));
    }

    @Test
    void asksForACommitOnceAKeyHoldsEnoughAcceptsSinceTheLastCommit() {
        for (int seq = 1; seq < StoredFence.COMMIT_REQUEST_ACCEPTS; seq++) {
            write(KEY, 6, seq);
        }
        task.processAll();
        assertThat(task.commitRequests()).isZero();

        write(KEY, 6, StoredFence.COMMIT_REQUEST_ACCEPTS);
        task.processAll();

        assertThat(task.commitRequests()).isEqualTo(1);
    }

    /** Should the commit be slow to come, the next request waits for as many accepts again. */
    @Test
    void asksAgainOnlyAfterAsManyAcceptsAgainWhenNoCommitCame() {
        for (int seq = 1; seq < 2 * StoredFence.COMMIT_REQUEST_ACCEPTS; seq++) {
            write(KEY, 6, seq);
        }
        task.processAll();
        assertThat(task.commitRequests()).isEqualTo(1);

        write(KEY, 6, 2 * StoredFence.COMMIT_REQUEST_ACCEPTS);
        task.processAll();

        assertThat(task.commitRequests()).isEqualTo(2);
    }

    @Test
    void exactlyOnceV2KeepsNoHistory() {
        TaskSimulation exactlyOnce = new TaskSimulation(StreamsConfig.EXACTLY_ONCE_V2, meters);
        exactlyOnce.append(KEY, value(), headers(6, 1L, false));
        exactlyOnce.append(KEY, value(), headers(6, 2L, false));

        exactlyOnce.processAll();

        assertThat(exactlyOnce.live(KEY)).isEqualTo(StoredFence.of(new Fence(6, 2)));
        assertThat(exactlyOnce.commitRequests()).isZero();
    }

    @Test
    void countsReplayedRecordsByOutcome() {
        write(KEY, 5, 1);
        task.processAll();
        task.commit();
        marker(KEY, 6);
        write(KEY, 6, 1);
        write(KEY, 5, 2);
        write(KEY, 6, 2);
        task.processAll();
        task.evict(KEY);
        task.crash(output -> true);

        task.finish();

        assertThat(meters.get("fence.enforcer.records.replayed").tag("outcome", "accepted").counter().count()).isEqualTo(2.0);
        assertThat(meters.get("fence.enforcer.records.replayed").tag("outcome", "rejected").counter().count()).isEqualTo(1.0);
        assertThat(meters.get("fence.enforcer.records.replayed").tag("outcome", "marker").counter().count()).isEqualTo(1.0);
    }

    // --- helpers ---

    private int write(String key, long token, long seq) {
        return task.append(key, value(), headers(token, seq, false));
    }

    private int marker(String key, long token) {
        return task.append(key, null, headers(token, 0L, true));
    }

    private List<Integer> acceptedIds() {
        return task.delivered().stream().filter(Output::accepted).map(Output::id).distinct().toList();
    }

    private static byte[] value() {
        return "v".getBytes(StandardCharsets.UTF_8);
    }

    private static RecordHeaders headers(long token, Long seq, boolean marker) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, Long.toString(token).getBytes(StandardCharsets.UTF_8));
        if (seq != null) {
            headers.add(FenceHeaders.SEQ, Long.toString(seq).getBytes(StandardCharsets.UTF_8));
        }
        if (marker) {
            headers.add(FenceHeaders.OP, "FENCE".getBytes(StandardCharsets.UTF_8));
        }
        return headers;
    }
}
