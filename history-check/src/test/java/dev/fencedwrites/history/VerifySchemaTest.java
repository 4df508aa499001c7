package dev.fencedwrites.history;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fencedwrites.testing.ShippedSchemas;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code fence verify --json} and schemas/json/fence-verify.schema.json name the same violation kinds. */
class VerifySchemaTest {
    @Test
    void theSchemaRequiresEveryViolationKindAndNoOther() {
        JsonNode violations = ShippedSchemas.file(ShippedSchemas.VERIFY).at("/properties/violations");
        List<String> required = new ArrayList<>();
        violations.path("required").forEach(name -> required.add(name.asText()));
        List<String> kinds = Arrays.stream(ViolationKind.values()).map(Enum::name).toList();
        assertThat(required).containsExactlyElementsOf(kinds);
        assertThat(violations.path("properties").properties()).extracting(e -> e.getKey()).containsExactlyElementsOf(kinds);
    }
}
