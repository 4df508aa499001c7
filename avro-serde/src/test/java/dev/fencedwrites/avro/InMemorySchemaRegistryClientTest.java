package dev.fencedwrites.avro;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.apache.avro.Schema;
import org.apache.avro.SchemaBuilder;
import org.junit.jupiter.api.Test;

/** The in-memory registry client behaves as a Confluent registry does for register, lookup, latest and getById. */
class InMemorySchemaRegistryClientTest {
    private static final Schema A = SchemaBuilder.record("A").fields().requiredString("a").endRecord();
    private static final Schema B = SchemaBuilder.record("B").fields().requiredLong("b").endRecord();

    @Test
    void idsAreRegistryWideAndStartAtFirstId() {
        InMemorySchemaRegistryClient registry = new InMemorySchemaRegistryClient(7);

        assertThat(registry.register("s-value", A)).isEqualTo(7);
        assertThat(registry.register("t-value", B)).isEqualTo(8);
        assertThat(registry.register("t-value", A)).as("the same schema under another subject keeps its id").isEqualTo(7);
        assertThat(registry.getById(8)).isEqualTo(B);
    }

    @Test
    void theFirstSchemaGetsIdOneByDefault() {
        assertThat(new InMemorySchemaRegistryClient().register("s-value", A)).isEqualTo(1);
    }

    @Test
    void latestIsTheSchemaRegisteredLastAndVersionsCountDistinctSchemas() {
        InMemorySchemaRegistryClient registry = new InMemorySchemaRegistryClient();
        registry.register("s-value", A);
        registry.register("s-value", B);
        registry.register("s-value", B);

        RegisteredSchema latest = registry.latest("s-value");

        assertThat(latest.schema()).isEqualTo(B);
        assertThat(latest.version()).isEqualTo(2);
        assertThat(latest.id()).isEqualTo(2);
    }

    @Test
    void lookupFindsOnlyWhatWasRegisteredUnderTheSubject() {
        InMemorySchemaRegistryClient registry = new InMemorySchemaRegistryClient();
        registry.register("s-value", A);

        assertThat(registry.lookup("s-value", A)).isEqualTo(1);
        assertThatThrownBy(() -> registry.lookup("s-value", B)).isInstanceOfSatisfying(SchemaRegistryException.class,
                e -> assertThat(e.errorCode()).isEqualTo(SchemaRegistryException.SCHEMA_NOT_FOUND));
        assertThatThrownBy(() -> registry.lookup("other-value", A)).isInstanceOfSatisfying(SchemaRegistryException.class,
                e -> assertThat(e.errorCode()).isEqualTo(SchemaRegistryException.SUBJECT_NOT_FOUND));
    }

    @Test
    void unknownIdsAndSubjectsAreNotFound() {
        InMemorySchemaRegistryClient registry = new InMemorySchemaRegistryClient();

        assertThatThrownBy(() -> registry.getById(1)).isInstanceOfSatisfying(SchemaRegistryException.class,
                e -> assertThat(e.httpStatus()).isEqualTo(404));
        assertThatThrownBy(() -> registry.latest("s-value")).isInstanceOfSatisfying(SchemaRegistryException.class,
                e -> assertThat(e.errorCode()).isEqualTo(SchemaRegistryException.SUBJECT_NOT_FOUND));
    }

    @Test
    void aFirstIdBelowOneIsRefused() {
        assertThatThrownBy(() -> new InMemorySchemaRegistryClient(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("firstId");
    }

    @Test
    void anUnreachableRegistryFailsEveryCallWithStatusMinusOneUntilItAnswersAgain() {
        InMemorySchemaRegistryClient registry = new InMemorySchemaRegistryClient();
        registry.register("s-value", A);
        registry.unreachable(true);

        assertThatThrownBy(() -> registry.getById(1)).isInstanceOfSatisfying(SchemaRegistryException.class,
                e -> assertThat(e.httpStatus()).isEqualTo(-1));
        assertThatThrownBy(() -> registry.register("s-value", B)).isInstanceOf(SchemaRegistryException.class);
        assertThatThrownBy(() -> registry.lookup("s-value", A)).isInstanceOf(SchemaRegistryException.class);
        assertThatThrownBy(() -> registry.latest("s-value")).isInstanceOf(SchemaRegistryException.class);

        registry.unreachable(false);
        assertThat(registry.getById(1)).isEqualTo(A);
    }
}
