package dev.fencedwrites.sink.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.errors.DataException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** How table.name and field names become the quoted identifiers the sink writes. */
class TableNameTest {

    @ParameterizedTest(name = "{0} is schema [{1}] table [{2}], in SQL {3}")
    @CsvSource(delimiter = '|', quoteCharacter = '\'', value = {
            "billing_summary|       |billing_summary|\"billing_summary\"",
            "Billing_Summary|       |billing_summary|\"billing_summary\"",
            "order|                 |order|\"order\"",
            "sales.order|sales      |order|\"sales\".\"order\"",
            "\"Sales\".\"Order Lines\"|Sales|Order Lines|\"Sales\".\"Order Lines\"",
            "\"a.b\"|               |a.b|\"a.b\"",
            "\"say \"\"hi\"\"\"|    |say \"hi\"|\"say \"\"hi\"\"\"",
            "my-table|              |my-table|\"my-table\""})
    void aTableNameIsReadAsPostgresqlReadsOneAndWrittenQuoted(String setting, String schema, String table, String sql) {
        TableName name = TableName.parse(setting);

        assertThat(name.schema()).isEqualTo(schema);
        assertThat(name.name()).isEqualTo(table);
        assertThat(name.sql()).isEqualTo(sql);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", ".t", "s.", "a.b.c", "\"open", "\"x\"y", "a\"b", "two words", "tab\there"})
    void aNameThatNoTableCanHaveIsRefusedSayingWhy(String setting) {
        assertThatThrownBy(() -> TableName.parse(setting)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(setting.isEmpty() ? "empty" : setting);
    }

    @Test
    void aNameLongerThanPostgresqlKeepsIsCutAsTheServerCutsIt() {
        assertThat(TableName.parse("t".repeat(80)).name()).isEqualTo("t".repeat(63));
        assertThat(SqlNames.truncate("\u00e9".repeat(40))).as("never half a character").isEqualTo("\u00e9".repeat(31));
    }

    @Test
    void aQuoteInsideANameIsDoubledAndANulIsRefused() {
        assertThat(SqlNames.quote("a\"b")).isEqualTo("\"a\"\"b\"");
        assertThatThrownBy(() -> SqlNames.quote("a\u0000b")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("NUL");
    }

    @Test
    void fieldNamesMapToColumnsAsBeforeAndLongOnesAreCutLikeTheServerCutsThem() {
        Schema schema = SchemaBuilder.struct().field("order", Schema.STRING_SCHEMA).field("amountMinor", Schema.INT64_SCHEMA)
                .field("x".repeat(70), Schema.STRING_SCHEMA).build();

        assertThat(ColumnMapping.columns(schema)).extracting(ColumnMapping.Column::name).containsExactly("order", "amount_minor",
                "x".repeat(63));
        assertThat(ColumnMapping.columns(schema).get(0).sql()).isEqualTo("\"order\"");
    }

    @Test
    void twoLongFieldNamesThatTheServerWouldCutToOneColumnAreRefused() {
        Schema schema = SchemaBuilder.struct().field("y".repeat(63) + "a", Schema.STRING_SCHEMA)
                .field("y".repeat(63) + "b", Schema.STRING_SCHEMA).build();

        assertThatThrownBy(() -> ColumnMapping.columns(schema)).isInstanceOf(DataException.class)
                .hasMessageContaining("both map to column");
    }

    @ParameterizedTest
    @ValueSource(strings = {"xmin", "ctid", "tableoid", "cmax"})
    void aFieldNamedLikeASystemColumnIsRefusedNamingIt(String field) {
        Schema schema = SchemaBuilder.struct().field(field, Schema.STRING_SCHEMA).build();

        assertThatThrownBy(() -> ColumnMapping.columns(schema)).isInstanceOf(DataException.class).hasMessageContaining(field)
                .hasMessageContaining("system column");
    }
}
