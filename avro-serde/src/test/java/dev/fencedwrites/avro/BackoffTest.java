package dev.fencedwrites.avro;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The wait between registry retries. */
class BackoffTest {
    @Test
    void doublesFromTheFirstWaitUpToTheCap() {
        assertThat(Backoff.delayMs(0, 1000, 20_000)).isEqualTo(1000);
        assertThat(Backoff.delayMs(1, 1000, 20_000)).isEqualTo(2000);
        assertThat(Backoff.delayMs(2, 1000, 20_000)).isEqualTo(4000);
        assertThat(Backoff.delayMs(4, 1000, 20_000)).isEqualTo(16_000);
        assertThat(Backoff.delayMs(5, 1000, 20_000)).isEqualTo(20_000);
    }

    @Test
    void confluentDefaultsGiveOneThenTwoSeconds() {
        assertThat(Backoff.delayMs(0, 1000, 2000)).isEqualTo(1000);
        assertThat(Backoff.delayMs(1, 1000, 2000)).isEqualTo(2000);
        assertThat(Backoff.delayMs(2, 1000, 2000)).isEqualTo(2000);
    }

    @Test
    void neverOverflowsAndCapBelowFirstWaitWins() {
        assertThat(Backoff.delayMs(70, 1000, 5000)).isEqualTo(5000);
        assertThat(Backoff.delayMs(40, Long.MAX_VALUE / 2, Long.MAX_VALUE)).isEqualTo(Long.MAX_VALUE);
        assertThat(Backoff.delayMs(0, 1000, 300)).isEqualTo(300);
        assertThat(Backoff.delayMs(3, 0, 300)).isZero();
    }
}
