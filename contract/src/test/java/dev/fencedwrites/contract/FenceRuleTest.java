package dev.fencedwrites.contract;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The decision rule (docs/concepts/decision-rule.md), one table row per rule row. Fences are written {@code token} or {@code
 * token.seq}.
 */
class FenceRuleTest {

    @ParameterizedTest(name = "{0}: stored {1}, incoming {2} -> {3}")
    @CsvSource(delimiter = '|', textBlock = """
            no stored fence                        | none | 7.0  | ACCEPT
            no stored fence, no seq                | none | 7    | ACCEPT
            higher token                           | 5.3  | 6.1  | ACCEPT
            higher token with lower seq            | 5.3  | 6.0  | ACCEPT
            higher token, seq absent               | 5.3  | 6    | ACCEPT
            equal token, incoming seq absent       | 5.3  | 5    | ACCEPT
            equal token, stored seq absent         | 5    | 5.2  | ACCEPT
            equal token, seq absent on both sides  | 5    | 5    | ACCEPT
            equal token, higher seq                | 5.3  | 5.4  | ACCEPT
            equal token, equal seq                 | 5.3  | 5.3  | DUPLICATE
            equal token, equal seq zero (marker)   | 5.0  | 5.0  | DUPLICATE
            equal token, lower seq                 | 5.3  | 5.2  | OUT_OF_ORDER
            lower token                            | 5.3  | 4.9  | STALE_TOKEN
            lower token, seq absent                | 5    | 4    | STALE_TOKEN
            lower token, stored seq absent         | 5    | 4.1  | STALE_TOKEN
            """)
    void decidesPerDecisionRule(String rule, String stored, String incoming, String expected) {
        Decision decision = FenceRule.decide(fence(stored), fence(incoming));

        assertThat(decision)
                .isEqualTo(expected.equals("ACCEPT") ? Decision.accept() : Decision.reject(RejectionReason.valueOf(expected)));
    }

    /** {@code none}, {@code token} or {@code token.seq}: the form of {@link Fence#toString()}. */
    static Fence fence(String text) {
        if (text.equals("none")) {
            return null;
        }
        int dot = text.indexOf('.');
        return dot < 0
                ? Fence.of(Long.parseLong(text))
                : new Fence(Long.parseLong(text.substring(0, dot)), Long.parseLong(text.substring(dot + 1)));
    }
}
