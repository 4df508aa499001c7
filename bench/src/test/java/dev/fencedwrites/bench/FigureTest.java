package dev.fencedwrites.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class FigureTest {
    @Test
    void aRatioFartherFromItsGoalThanTheSpreadIsNotWithinIt() {
        // 0.80 against >= 0.95: 0.15 away; spread 10 % of 0.80 is 0.08.
        Figure figure = new Figure("enforcer vs baseline", 80, 100, "records/s", ">= 0.95", true, 0.10);

        assertThat(figure.withinSpread()).isFalse();
        assertThat(BenchReport.verdict(figure, figure.met(), false)).isEqualTo("NO");
    }

    @Test
    void aRatioCloserToItsGoalThanTheSpreadSaysSo() {
        // 0.93 against >= 0.95: 0.02 away; spread 4 % + 3 % of 0.93 is 0.065.
        Figure missed = new Figure("enforcer vs baseline", 93, 100, "records/s", ">= 0.95", true, 0.07);
        Figure met = new Figure("enforcer vs baseline", 97, 100, "records/s", ">= 0.95", true, 0.07);

        assertThat(BenchReport.verdict(missed, missed.met(), false)).isEqualTo("NO (within the spread)");
        assertThat(BenchReport.verdict(met, met.met(), false)).isEqualTo("yes (within the spread)");
    }

    @Test
    void aRowWithoutAGoalIsComparedWithOne() {
        Figure level = new Figure("baseline vs pass-through", 104, 100, "records/s", "", true, 0.08);
        Figure apart = new Figure("baseline vs pass-through", 43, 100, "records/s", "", true, 0.19);

        assertThat(BenchReport.verdict(level, level.met(), false)).isEqualTo("- (1.00 within the spread)");
        assertThat(BenchReport.verdict(apart, apart.met(), false)).isEqualTo("-");
    }

    @Test
    void singleRunsAndQuickRunsClaimNothingAboutTheSpread() {
        Figure single = new Figure("enforcer vs baseline", 94, 100, "records/s", ">= 0.95", true);
        Figure quick = new Figure("enforcer vs baseline", 94, 100, "records/s", ">= 0.95", true, 0.2);

        assertThat(single.withinSpread()).isFalse();
        assertThat(BenchReport.verdict(single, single.met(), false)).isEqualTo("NO");
        assertThat(BenchReport.verdict(quick, quick.met(), true)).isEqualTo("-");
        assertThat(BenchReport.table(List.of(quick), false)).contains("| NO (within the spread) |");
    }
}
