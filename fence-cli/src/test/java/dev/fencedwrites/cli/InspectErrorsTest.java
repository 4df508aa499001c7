package dev.fencedwrites.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.SQLException;
import org.junit.jupiter.api.Test;

/** {@code ./fence inspect} never prints the database password, not even where the JDBC driver quotes the URL. */
class InspectErrorsTest {

    @Test
    void aConnectionErrorThatQuotesTheUrlHasThePasswordRedacted() {
        String url = "jdbc:postgresql://db.example:5432/billing?user=fence&password=s3cret-pw";
        SQLException noDriver = new SQLException("No suitable driver found for " + url, "08001");

        String message = InspectCommand.unreachable(url, noDriver).getMessage();

        assertThat(message).doesNotContain("s3cret-pw").contains("db.example:5432/billing").contains("No suitable driver");
    }
}
