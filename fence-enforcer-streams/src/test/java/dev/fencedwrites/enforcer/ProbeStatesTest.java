package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.kafka.streams.KafkaStreams;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/** Which Kafka Streams states the enforcer's probes call alive and ready. */
class ProbeStatesTest {

    @ParameterizedTest(name = "{0}: live={1}, ready={2}")
    @CsvSource({
            "CREATED, true, false",
            "REBALANCING, true, false",
            "RUNNING, true, true",
            "PENDING_SHUTDOWN, false, false",
            "NOT_RUNNING, false, false",
            "PENDING_ERROR, false, false",
            "ERROR, false, false"})
    void livenessCoversEveryStateTheClientCanStillReachRunningFromAndReadinessOnlyRunning(KafkaStreams.State state,
            boolean live, boolean ready) {
        assertThat(EnforcerHttpServer.isLive(state)).as("live").isEqualTo(live);
        assertThat(EnforcerHttpServer.isReady(state)).as("ready").isEqualTo(ready);
    }

    @ParameterizedTest
    @EnumSource(KafkaStreams.State.class)
    void aStateFromWhichRunningCanStillBeReachedIsLive(KafkaStreams.State state) {
        // KafkaStreams.State's own transition table: a state is alive when RUNNING is reachable from it.
        boolean reachesRunning = state == KafkaStreams.State.RUNNING || state.isValidTransition(KafkaStreams.State.RUNNING)
                || state.isValidTransition(KafkaStreams.State.REBALANCING);
        assertThat(EnforcerHttpServer.isLive(state)).isEqualTo(reachesRunning);
    }
}
