package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.streams.errors.StreamsException;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.junit.jupiter.api.Test;

/** The rules of {@link StreamThreadFailures}: which deaths replace the thread and which stop the instance. */
class StreamThreadFailuresTest {
    private static final StreamThreadExceptionResponse REPLACE = StreamThreadExceptionResponse.REPLACE_THREAD;
    private static final StreamThreadExceptionResponse SHUTDOWN = StreamThreadExceptionResponse.SHUTDOWN_CLIENT;

    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final AtomicLong commits = new AtomicLong();
    private final AtomicLong now = new AtomicLong();

    private StreamThreadFailures policy(int maxReplacements, int maxWithoutProgress) {
        return new StreamThreadFailures(meters, maxReplacements, Duration.ofMinutes(10), maxWithoutProgress,
                thread -> commits.get(), now::get);
    }

    private static StreamsException transientFailure() {
        return new StreamsException("commit failed", new KafkaException("Unhandled error in EndTxnResponse"));
    }

    @Test
    void threadsThatDieWithoutACommitStopTheInstanceAtTheLimitHoweverSlowly() {
        StreamThreadFailures policy = policy(100, 3);

        assertThat(policy.handle(transientFailure())).isEqualTo(REPLACE);
        now.addAndGet(Duration.ofHours(1).toNanos());
        assertThat(policy.handle(transientFailure())).isEqualTo(REPLACE);
        now.addAndGet(Duration.ofHours(1).toNanos());
        assertThat(policy.handle(transientFailure())).isEqualTo(SHUTDOWN);
    }

    @Test
    void aThreadThatCommittedBeforeDyingStartsTheCountAgain() {
        StreamThreadFailures policy = policy(100, 2);

        assertThat(policy.handle(transientFailure())).isEqualTo(REPLACE);
        commits.set(5);
        assertThat(policy.handle(transientFailure())).isEqualTo(REPLACE);
        commits.set(0);
        assertThat(policy.handle(transientFailure())).isEqualTo(REPLACE);
        assertThat(policy.handle(transientFailure())).isEqualTo(SHUTDOWN);
        assertThat(meters.get(StreamThreadFailures.METER).tag("exception", "KafkaException").counter().count()).isEqualTo(3);
    }

    @Test
    void moreReplacementsThanAllowedWithinTheWindowStopTheInstanceAndOlderOnesAgeOut() {
        commits.set(1);
        StreamThreadFailures policy = policy(2, 100);

        assertThat(policy.handle(transientFailure())).isEqualTo(REPLACE);
        assertThat(policy.handle(transientFailure())).isEqualTo(REPLACE);
        now.addAndGet(Duration.ofMinutes(11).toNanos());
        assertThat(policy.handle(transientFailure())).isEqualTo(REPLACE);
        assertThat(policy.handle(transientFailure())).isEqualTo(REPLACE);
        assertThat(policy.handle(transientFailure())).isEqualTo(SHUTDOWN);
    }

    @Test
    void anErrorAnywhereInTheCauseChainStopsTheInstance() {
        assertThat(policy(100, 100).handle(new StreamsException("wrapped", new OutOfMemoryError("heap")))).isEqualTo(SHUTDOWN);
    }

    @Test
    void aCauseChainThatLoopsIsFollowedOnlySoFar() {
        Exception a = new Exception("a");
        Exception b = new Exception("b", a);
        a.initCause(b);

        assertThat(policy(100, 100).handle(new StreamsException("looping", a))).isEqualTo(REPLACE);
    }
}
