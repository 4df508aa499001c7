package dev.fencedwrites.sink.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.apicurio.registry.utils.converter.avro.AvroData;
import io.apicurio.registry.utils.converter.avro.AvroDataConfig;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.errors.DataException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A recursive Avro record schema becomes a cyclic Connect schema (Apicurio's AvroData wraps the
 * cycle), which has no finite set of columns: the mapping refuses it with a DataException, so the
 * sink dead-letters the record, instead of recursing until the stack overflows.
 */
class RecursiveSchemaMappingTest {
    private static final AvroData AVRO_DATA = new AvroData(new AvroDataConfig.Builder()
            .with(AvroDataConfig.ENHANCED_AVRO_SCHEMA_SUPPORT_CONFIG, true).with(AvroDataConfig.SCHEMAS_CACHE_SIZE_CONFIG, 10)
            .build());

    @ParameterizedTest
    @ValueSource(strings = {
            "{\"name\":\"next\",\"type\":[\"null\",\"Node\"]}",
            "{\"name\":\"children\",\"type\":{\"type\":\"array\",\"items\":\"Node\"}}",
            "{\"name\":\"byName\",\"type\":{\"type\":\"map\",\"values\":\"Node\"}}",
            "{\"name\":\"wrapper\",\"type\":{\"type\":\"record\",\"name\":\"Wrapper\",\"fields\":[{\"name\":\"inner\","
                    + "\"type\":[\"null\",\"Node\"]}]}}"})
    void aRecordThatContainsItselfIsRefusedWithADataException(String recursiveField) {
        // CHECKSTYLE:OFF: FullyQualifiedName Connect's Schema is imported
        Schema node = AVRO_DATA.toConnectSchema(new org.apache.avro.Schema.Parser().parse(
                // CHECKSTYLE:ON: FullyQualifiedName
                "{\"type\":\"record\",\"name\":\"Node\",\"namespace\":\"test\",\"fields\":[{\"name\":\"v\",\"type\":\"int\"},"
                        + recursiveField + "]}"));

        assertThat(catchThrowable(() -> ColumnMapping.columns(node))).isInstanceOf(DataException.class)
                .hasMessageContaining("test.Node inside a test.Node").hasMessageContaining("recursive record schema");
    }
}
