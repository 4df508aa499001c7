package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The pause rule of {@link PauseWatch} on a hand-driven clock; the watchdog thread is not started. */
class PauseWatchTest {
    private static final PauseWatch.Settings SETTINGS = new PauseWatch.Settings(Duration.ofSeconds(6), Duration.ofSeconds(3),
            Duration.ofMillis(300),
            Duration.ofSeconds(20));
    private static final long MS = 1_000_000L;

    private final AtomicLong clock = new AtomicLong(1_000 * MS);
    private final Map<String, Long> commits = new HashMap<>(Map.of("StreamThread-1", 40L));
    private final PauseWatch watch = new PauseWatch(SETTINGS, () -> Map.copyOf(commits), clock::get);

    @AfterEach
    void close() {
        watch.close();
    }

    private void advance(long millis) {
        clock.addAndGet(millis * MS);
    }

    @Test
    void ticksCloserThanTheThresholdAreNoPause() {
        for (int i = 0; i < 20; i++) {
            advance(2_900);
            watch.tick();
        }

        assertThat(watch.refusal(OptionalLong.empty())).isEmpty();
    }

    @Test
    void aLastTickOlderThanTheThresholdIsRefusedBeforeTheWatchdogRuns() {
        watch.tick();
        advance(12_000);

        assertThat(watch.refusal(OptionalLong.empty())).hasValueSatisfying(reason -> assertThat(reason)
                .contains("paused for at least 12000 ms", "session.timeout.ms=6000"));
    }

    @Test
    void aPauseSeenByTheWatchdogIsRefusedUntilTheStreamThreadCommittedTwice() {
        advance(12_000);
        watch.tick();
        commits.put("StreamThread-1", 41L);

        assertThat(watch.refusal(OptionalLong.empty())).hasValueSatisfying(reason -> assertThat(reason)
                .contains("paused for 12000 ms", "session.timeout.ms=6000"));

        commits.put("StreamThread-1", 42L);

        assertThat(watch.refusal(OptionalLong.empty())).isEmpty();
    }

    @Test
    void everyStreamThreadMustCommitAfterThePause() {
        commits.put("StreamThread-2", 7L);
        advance(12_000);
        watch.tick();
        commits.put("StreamThread-1", 50L);

        assertThat(watch.refusal(OptionalLong.empty())).isPresent();
    }

    @Test
    void aPauseIsRefusedUntilTheSessionTimeoutHasPassedWithoutCommits() {
        advance(12_000);
        watch.tick();
        ticksFor(5_700);

        assertThat(watch.refusal(OptionalLong.empty())).as("5.7 s after the pause").isPresent();

        advance(300);
        watch.tick();

        assertThat(watch.refusal(OptionalLong.empty())).as("6 s after the pause").isEmpty();
    }

    @Test
    void aSecondPauseStartsTheWaitOver() {
        advance(12_000);
        watch.tick();
        ticksFor(5_100);
        advance(4_000);
        watch.tick();
        ticksFor(1_500);

        assertThat(watch.refusal(OptionalLong.empty())).as("10.6 s after the first pause, 1.5 s after the second").isPresent();
    }

    private void ticksFor(long millis) {
        for (long waited = 0; waited < millis; waited += 300) {
            advance(300);
            watch.tick();
        }
    }

    @Test
    void aStreamThreadThatHasNotRunForHalfTheMaxPollIntervalIsRefused() {
        long seen = clock.get();
        ticksFor(10_200);

        assertThat(watch.refusal(OptionalLong.of(seen))).hasValueSatisfying(reason -> assertThat(reason)
                .contains("has not run for 10200 ms", "max.poll.interval.ms=20000"));
    }

    @Test
    void aStreamThreadThatRanRecentlyIsNotRefused() {
        ticksFor(10_200);

        assertThat(watch.refusal(OptionalLong.of(clock.get() - 9_000 * MS))).isEmpty();
    }

    @Test
    void settingsComeFromTheMainConsumerWithKafkaStreamsPrefixesFirst() {
        Properties streams = new Properties();
        streams.put("session.timeout.ms", "45000");
        streams.put("consumer.session.timeout.ms", "20000");
        streams.put("main.consumer.session.timeout.ms", "10000");
        streams.put("heartbeat.interval.ms", "1000");
        streams.put("main.consumer.max.poll.interval.ms", "60000");

        PauseWatch.Settings settings = PauseWatch.Settings.of(streams);

        assertThat(settings.sessionTimeout()).isEqualTo(Duration.ofSeconds(10));
        assertThat(settings.threshold()).isEqualTo(Duration.ofSeconds(5));
        assertThat(settings.tick()).isEqualTo(Duration.ofMillis(500));
        assertThat(settings.maxPollInterval()).isEqualTo(Duration.ofMinutes(1));
        assertThat(settings.coordinatorSilence()).as("session minus heartbeat interval minus a tick")
                .isEqualTo(Duration.ofMillis(8_500));
        assertThat(settings.underStreamsProtocol().coordinatorSilence()).as("two of the broker's 5 s heartbeat intervals")
                .isEqualTo(Duration.ofSeconds(10));
    }

    @Test
    void settingsTakeKafkaConsumerDefaultsWhenUnset() {
        PauseWatch.Settings settings = PauseWatch.Settings.of(new Properties());

        assertThat(settings.sessionTimeout()).isEqualTo(Duration.ofSeconds(45));
        assertThat(settings.threshold()).isEqualTo(Duration.ofMillis(22_500));
        assertThat(settings.maxPollInterval()).isEqualTo(Duration.ofMinutes(5));
        assertThat(settings.coordinatorSilence()).isEqualTo(Duration.ofMillis(41_500));
        assertThat(settings.underStreamsProtocol().coordinatorSilence()).isEqualTo(Duration.ofMillis(41_500));
    }

    @Test
    void aHeartbeatIntervalCloseToTheSessionTimeoutShortensTheThreshold() {
        Properties streams = new Properties();
        streams.put("session.timeout.ms", "6000");
        streams.put("heartbeat.interval.ms", "4000");

        assertThat(PauseWatch.Settings.of(streams).threshold()).isEqualTo(Duration.ofSeconds(2));
        assertThat(PauseWatch.Settings.of(streams).coordinatorSilence()).as("never below the pause threshold")
                .isEqualTo(Duration.ofSeconds(2));
    }

    @Test
    void aMainConsumerWithoutHeartbeatResponsesPastTheThresholdIsRefusedUntilCommitsFollowTheNextOne() {
        Map<String, Long> beats = new HashMap<>(Map.of("app-StreamThread-1-consumer", 10L));
        PauseWatch partitioned = new PauseWatch(SETTINGS, () -> Map.copyOf(commits), () -> Map.copyOf(beats), clock::get);
        partitioned.tick();
        // The process runs (ticks every 300 ms), its stream thread polls, but no heartbeat response comes.
        for (int i = 0; i < 10; i++) {
            advance(300);
            partitioned.tick();
        }

        assertThat(partitioned.refusal(OptionalLong.of(clock.get()))).as("3 000 ms without a response: at the threshold")
                .isEmpty();

        advance(300);
        partitioned.tick();

        assertThat(partitioned.refusal(OptionalLong.of(clock.get()))).hasValueSatisfying(reason -> assertThat(reason)
                .contains("app-StreamThread-1-consumer", "no heartbeat response", "3300 ms", "session.timeout.ms=6000"));
        assertThat(partitioned.refusal(OptionalLong.empty())).as("whether or not the key's stream thread is known")
                .isPresent();

        // The first response after the silence may be UNKNOWN_MEMBER_ID: the member was removed, another instance owns its
        // keys, and its stream thread has not yet closed its tasks.
        beats.put("app-StreamThread-1-consumer", 11L);
        advance(300);
        partitioned.tick();

        assertThat(partitioned.refusal(OptionalLong.of(clock.get()))).hasValueSatisfying(reason -> assertThat(reason)
                .contains("app-StreamThread-1-consumer had no heartbeat response", "3600 ms", "network partition",
                        "2 commits"));
        commits.merge("StreamThread-1", 1L, Long::sum);
        assertThat(partitioned.refusal(OptionalLong.of(clock.get()))).as("one commit since: it may have begun before")
                .isPresent();
        commits.merge("StreamThread-1", 1L, Long::sum);
        assertThat(partitioned.refusal(OptionalLong.of(clock.get()))).as("two commits prove it still owns its tasks").isEmpty();
        partitioned.close();
    }

    @Test
    void aCoordinatorSilenceIsRefusedForASessionTimeoutAfterItEndsWithoutCommits() {
        Map<String, Long> beats = new HashMap<>(Map.of("app-StreamThread-1-consumer", 10L));
        PauseWatch partitioned = new PauseWatch(SETTINGS, () -> Map.copyOf(commits), () -> Map.copyOf(beats), clock::get);
        partitioned.tick();
        for (int i = 0; i < 20; i++) {
            advance(300);
            partitioned.tick();
        }
        beats.put("app-StreamThread-1-consumer", 11L);
        for (int i = 0; i < 19; i++) {
            advance(300);
            partitioned.tick();
            beats.merge("app-StreamThread-1-consumer", 1L, Long::sum);
        }

        assertThat(partitioned.refusal(OptionalLong.of(clock.get()))).as("5 400 ms after the silence ended").isPresent();

        advance(600);
        partitioned.tick();

        assertThat(partitioned.refusal(OptionalLong.of(clock.get()))).as("a session timeout after it ended").isEmpty();
        partitioned.close();
    }

    @Test
    void theConsumerHeardLeastRecentlyDecidesAndWithoutHeartbeatCountsTheRuleIsOff() {
        Map<String, Long> beats = new HashMap<>(Map.of("t1-consumer", 1L, "t2-consumer", 1L));
        PauseWatch two = new PauseWatch(SETTINGS, () -> Map.copyOf(commits), () -> Map.copyOf(beats), clock::get);
        two.tick();
        for (int i = 0; i < 12; i++) {
            advance(300);
            beats.merge("t1-consumer", 1L, Long::sum);
            two.tick();
            watch.tick();
        }

        assertThat(two.refusal(OptionalLong.empty())).hasValueSatisfying(reason -> assertThat(reason).contains("t2-consumer"));
        assertThat(watch.refusal(OptionalLong.empty())).as("no heartbeat counts: no coordinator rule").isEmpty();
        two.close();
    }
}
