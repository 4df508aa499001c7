package dev.fencedwrites.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine.TypeConversionException;

/** The commands' DURATION options: each unit, the words that are no duration, and the text a replay prints back. */
class DurationConverterTest {
    @ParameterizedTest
    @CsvSource({"500ms, PT0.5S, 500ms", "90s, PT1M30S, 90s", "15m, PT15M, 15m", "2h, PT2H, 2h", "1d, PT24H, 1d",
            "' 3s ', PT3S, 3s", "120s, PT2M, 2m", "0s, PT0S, 0s"})
    void eachUnitConvertsAndFormatsInItsLargestExactUnit(String text, String iso, String formatted) {
        Duration duration = new DurationConverter().convert(text);

        assertThat(duration).isEqualTo(Duration.parse(iso));
        assertThat(DurationConverter.format(duration)).isEqualTo(formatted);
        assertThat(new DurationConverter().convert(DurationConverter.format(duration))).isEqualTo(duration);
    }

    @ParameterizedTest
    @ValueSource(strings = {"15x", "abc", "", "-5s", "1.5m", "5", "m", "PT5S", "2026-12-02T18:00:00Z", "99999999999999999999s",
            "9223372036854775807d"})
    void anythingElseIsAUsageErrorNamingTheValue(String text) {
        assertThatThrownBy(() -> new DurationConverter().convert(text)).isInstanceOf(TypeConversionException.class)
                .hasMessage("'" + text + "' is not a duration like 90s, 15m, 2h or 1d");
        assertThat(DurationConverter.parse(text)).isEmpty();
    }
}
