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

    @Test
    void aLatencyGoalIsJudgedTheSameWay() {
        // p99 1.20 of the pass-through against <= 1.1: 0.10 away; spread 5 % of 1.20 is 0.06, 10 % is 0.12.
        Figure narrow = new Figure("p99 latency", 120, 100, "ms", "<= 1.1", false, 0.05);
        Figure wide = new Figure("p99 latency", 120, 100, "ms", "<= 1.1", false, 0.10);

        assertThat(BenchReport.verdict(narrow, narrow.met(), false)).isEqualTo("NO");
        assertThat(BenchReport.verdict(wide, wide.met(), false)).isEqualTo("NO (within the spread)");
    }

    @Test
    void aDistanceEqualToTheSpreadIsWithinIt() {
        // 0.5 against >= 1.0 with a spread of 1.0: the distance 0.5 equals 0.5 * 1.0.
        Figure figure = new Figure("x", 50, 100, "records/s", ">= 1.0", true, 1.0);

        assertThat(figure.withinSpread()).isTrue();
    }

    @Test
    void theSpreadOfRunsIsHalfTheirRangeOverTheirMedian() {
        assertThat(Figure.halfRange(List.of(90.0, 100.0, 110.0))).isEqualTo(0.1);
        assertThat(Figure.halfRange(List.of(100.0))).isNaN();
        assertThat(BenchReport.table(List.of(new Figure("x", 94, 100, "records/s", ">= 0.95", true, 0.2)), true))
                .contains("| - |").doesNotContain("within");
    }
}
