package dev.fencedwrites.contract;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The union of the two redactions that existed before the contract module: the registry client's user-info rule
 * and the sink's (and the demo's) {@code password=} rule.
 */
class RedactionTest {

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(delimiter = '|', value = {
            // the registry client's rule, kept: user info up to the last '@', even with '@' or '/' in it
            "https://bob:pw@c:3/x | https://***@c:3/x",
            "http://alice:p@ss@registry:8081 | http://***@registry:8081",
            "http://alice:pa/ss@registry:8081 | http://***@registry:8081",
            "http://registry:8081/x | http://registry:8081/x",
            "ftp://bob:pw@c | ftp://***@c",
    })
    void hidesTheUserInfoOfAUrl(String url, String shown) {
        assertThat(Redaction.url(url)).isEqualTo(shown);
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(delimiter = '|', value = {
            // the sink's rule, kept: any case, value up to '&' or ';'
            "jdbc:postgresql://127.0.0.1/db?user=sink&password=db-s3cret&ssl=true"
                    + " | jdbc:postgresql://127.0.0.1/db?user=sink&password=***&ssl=true",
            "jdbc:postgresql://h/db?PASSWORD=x&ssl=true | jdbc:postgresql://h/db?PASSWORD=***&ssl=true",
            "jdbc:sqlserver://h;user=u;password=x;db=y | jdbc:sqlserver://h;user=u;password=***;db=y",
            // the demo's rule, kept: value up to '&' or the end
            "jdbc:postgresql://localhost:5432/fenced?user=fenced&password=fenced"
                    + " | jdbc:postgresql://localhost:5432/fenced?user=fenced&password=***",
            "jdbc:postgresql://localhost:5432/fenced | jdbc:postgresql://localhost:5432/fenced",
    })
    void hidesPasswordParameters(String url, String shown) {
        assertThat(Redaction.url(url)).isEqualTo(shown);
    }

    @Test
    void hidesBothUserInfoAndPasswordParameterInOneUrl() {
        assertThat(Redaction.url("https://u:secret@h/p?password=other")).isEqualTo("https://***@h/p?password=***");
    }

    @Test
    void aPasswordParameterThatHoldsAnAtSignIsHiddenWhole() {
        assertThat(Redaction.url("jdbc:postgresql://h/db?password=a@b")).isEqualTo("jdbc:postgresql://h/db?password=***");
    }

    @Test
    void anAtSignElsewhereInTheQueryHidesTheHostTooRatherThanRiskAnything() {
        assertThat(Redaction.url("jdbc:postgresql://h/db?user=me@corp&password=x"))
                .isEqualTo("jdbc:postgresql://***@corp&password=***");
    }

    @Test
    void redactsEachUrlOfACommaSeparatedList() {
        assertThat(Redaction.urlList("https://alice:p@ss/w0rd@registry-a:8081,https://registry-b:8081,"))
                .isEqualTo("https://***@registry-a:8081,https://registry-b:8081,");
    }

    @Test
    void leavesNullAsNull() {
        assertThat(Redaction.url(null)).isNull();
        assertThat(Redaction.urlList(null)).isNull();
    }
}
