package dev.fencedwrites.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code ./fence inspect --table} names a table as the sink's table.name does, quoted, so a keyword table is read too.
 */
class InspectTableNameTest {

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {"billing_summary|\"billing_summary\"", "order|\"order\"",
            "Sales.Orders|\"sales\".\"orders\""})
    void aTableOrSchemaTableIsFoldedToLowerCaseAndQuoted(String table, String sql) {
        assertThat(InspectCommand.quoted(table)).isEqualTo(sql);
    }
}
