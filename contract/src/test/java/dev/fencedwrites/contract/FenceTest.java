package dev.fencedwrites.contract;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** A fence's shape, its text form ({@code fence.rejected.highest}, {@code GET /fences/{key}}) and how accepts raise it. */
class FenceTest {

    @Test
    void refusesATokenBelowOne() {
        assertThatThrownBy(() -> Fence.of(0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got 0");
        assertThatThrownBy(() -> Fence.parse("0")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got 0");
        assertThat(Fence.of(1).token()).isEqualTo(1);
    }

    @Test
    void refusesASeqBelowAbsent() {
        assertThatThrownBy(() -> new Fence(5, -2)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got -2");
        assertThat(new Fence(5, Fence.NO_SEQ).hasSeq()).isFalse();
        assertThat(new Fence(5, 0).hasSeq()).isTrue();
    }

    @ParameterizedTest
    @CsvSource({"7, 7, -1", "7.0, 7, 0", "812.3, 812, 3", "9223372036854775807.9223372036854775807, 9223372036854775807, "
            + "9223372036854775807"})
    void parsesItsOwnTextForm(String text, long token, long seq) {
        Fence fence = Fence.parse(text);
        assertThat(fence).isEqualTo(new Fence(token, seq));
        assertThat(fence.toString()).isEqualTo(text);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "7.", ".3", "-7", "7.-1", "+7", "7.3.1", "９", "92233720368547758070", "9223372036854775808",
            "7.9223372036854775808"})
    void refusesAnyOtherText(String text) {
        assertThatThrownBy(() -> Fence.parse(text)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'" + text + "'");
    }

    @Test
    void refusesNullText() {
        assertThatThrownBy(() -> Fence.parse(null)).isInstanceOf(IllegalArgumentException.class);
    }

    @ParameterizedTest(name = "stored {0}, accepted {1} -> {2}")
    @CsvSource(delimiter = '|', textBlock = """
            none | 7.0 | 7.0
            none | 7   | 7
            5.3  | 6.1 | 6.1
            5.3  | 6   | 6
            5.3  | 5   | 5.3
            5    | 5   | 5
            5    | 5.2 | 5.2
            5.3  | 5.4 | 5.4
            """)
    void anAcceptWithoutSeqAtTheStoredTokenKeepsTheStoredSeq(String stored, String accepted, String raised) {
        assertThat(FenceRule.raise(FenceRuleTest.fence(stored), FenceRuleTest.fence(accepted)))
                .isEqualTo(FenceRuleTest.fence(raised));
    }

    @Test
    void aDecisionAcceptsOrNamesItsReason() {
        assertThat(Decision.accept().accepted()).isTrue();
        assertThat(Decision.accept().reason()).isNull();
        Decision stale = Decision.reject(RejectionReason.STALE_TOKEN);
        assertThat(stale.accepted()).isFalse();
        assertThat(stale.reason()).isEqualTo(RejectionReason.STALE_TOKEN);
        assertThatThrownBy(() -> Decision.reject(null)).isInstanceOf(IllegalArgumentException.class);
    }
}
