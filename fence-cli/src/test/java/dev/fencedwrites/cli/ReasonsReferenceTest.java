package dev.fencedwrites.cli;

import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.testing.GeneratedReference;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * {@code docs/reference/reasons.md} is generated from {@link RejectionReason}: its meaning and action per reason.
 * Regenerate with {@code mvn -pl fence-cli test -Dtest=ReasonsReferenceTest -Ddocs.reference.update=true}.
 */
class ReasonsReferenceTest {
    static final Path FILE = Path.of("../docs/reference/reasons.md");

    @Test
    void checkedInReasonsReferenceMatchesRejectionReason() {
        GeneratedReference.assertUpToDate(render(), FILE, "fence-cli", "ReasonsReferenceTest");
    }

    static String render() {
        StringBuilder page = new StringBuilder("""
                # Rejection reasons

                Generated from `%s`; do not edit by hand.

                A rejected record carries its reason in the `fence.rejected.reason` header and the stage that refused it in
                `fence.rejected.stage` (`enforcer` or `sink`); the counters `fence_enforcer_records_fenced_total` and
                `fence_sink_records_fenced_total` are tagged with it. [The decision rule](../concepts/decision-rule.md)
                says which record gets which reason; [consuming and monitoring](../user/consuming.md) says how to watch them.

                | reason | stage | what it means | what to do |
                |---|---|---|---|
                """.formatted(RejectionReason.class.getName()));
        for (RejectionReason reason : RejectionReason.values()) {
            String stage = reason.enforcerOnly()
                    ? "enforcer"
                    : reason == RejectionReason.MALFORMED_VALUE ? "sink" : "enforcer, sink";
            page.append("| `").append(reason.name()).append("` | ").append(stage).append(" | ").append(cell(reason.meaning()))
                    .append(" | ").append(cell(reason.action())).append(" |\n");
        }
        return page.toString();
    }

    private static String cell(String text) {
        return text.replace("|", "\\|");
    }
}
