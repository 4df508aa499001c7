package dev.fencedwrites.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The checks of real output against schemas/ can fail: each planted mismatch is named. */
class ShippedSchemasTest {
    private static final String FENCE = "{\"key\":\"customer-42\",\"token\":812,\"seq\":3,\"served_by\":\"127.0.0.1:8080\"}";
    private static final String VERIFY = """
            {"counts":{"fenced-writes":10},"decisions":{"ACCEPTED":9,"STALE_TOKEN":1},
             "violations":{"NEVER_DECIDED":0,"DECIDED_TWICE":0,"UNLIKE_RULE":0,"ACCEPTED_WITHOUT_INPUT":0,"FENCE_FELL":0,
               "ROW_AHEAD":0,"ROW_BEHIND":0,"ROW_DATA_DIFFERS":0,"ROW_MISSING":0},
             "total":0,"described":[],"notes":[],"seconds":1.5}""";

    @Test
    void acceptsAFenceAnswerAsDescribed() {
        assertThat(ShippedSchemas.enforcerAnswerProblems("/fences/customer-42", 200, "application/json", FENCE)).isEmpty();
        assertThat(ShippedSchemas.enforcerAnswerProblems("/fences/a/b c", 200, "application/json", FENCE)).isEmpty();
    }

    @Test
    void refusesABodyWithTrailingContent() {
        assertThatThrownBy(() -> ShippedSchemas.enforcerAnswerProblems("/fences/k", 200, "application/json", FENCE + "x"))
                .hasMessageContaining("not JSON");
    }

    @Test
    void namesATokenOfTheWrongType() {
        assertThat(ShippedSchemas.enforcerAnswerProblems("/fences/customer-42", 200, "application/json",
                FENCE.replace("812", "\"812\""))).singleElement().asString().contains("/token");
    }

    @Test
    void namesAFieldTheDescriptionDoesNotHave() {
        assertThat(ShippedSchemas.enforcerAnswerProblems("/fences/k", 200, "application/json",
                FENCE.replace("}", ",\"lease\":7}"))).singleElement().asString().contains("lease");
    }

    @Test
    void namesAStatusMediaTypeOrPathTheDescriptionDoesNotHave() {
        assertThat(ShippedSchemas.enforcerAnswerProblems("/fences/k", 500, "application/json", "{}")).singleElement().asString()
                .contains("status 500");
        assertThat(ShippedSchemas.enforcerAnswerProblems("/fences/k", 200, "text/plain", FENCE)).singleElement().asString()
                .contains("media type");
        assertThat(ShippedSchemas.enforcerAnswerProblems("/leases/k", 200, "application/json", FENCE)).singleElement()
                .asString().contains("no GET operation");
    }

    @Test
    void checksProbesMetricsAndBodilessAnswers() {
        assertThat(ShippedSchemas.enforcerAnswerProblems("/health/ready", 503, "application/json",
                "{\"state\":\"REBALANCING\",\"restoring_partitions\":3,\"restore_remaining_offsets\":81234}")).isEmpty();
        assertThat(ShippedSchemas.enforcerAnswerProblems("/health/live", 200, "application/json", "{\"state\":\"STARTING\"}"))
                .singleElement().asString().contains("/state");
        assertThat(ShippedSchemas.enforcerAnswerProblems("/metrics", 200, "text/plain; version=0.0.4; charset=utf-8",
                "# HELP x\n")).isEmpty();
        assertThat(ShippedSchemas.enforcerAnswerProblems("/metrics", 401, null, "")).isEmpty();
        assertThat(ShippedSchemas.enforcerAnswerProblems("/metrics", 401, "text/html", "<h1>401</h1>")).singleElement()
                .asString().contains("a body");
    }

    @Test
    void namesAMissingViolationKindInVerifyOutput() {
        assertThat(ShippedSchemas.problems(ShippedSchemas.VERIFY, VERIFY)).isEmpty();
        assertThat(ShippedSchemas.problems(ShippedSchemas.VERIFY, VERIFY.replace("\"ROW_MISSING\":0", "\"ROW_GONE\":0")))
                .hasSize(2).anySatisfy(p -> assertThat(p).contains("ROW_MISSING")).anySatisfy(p -> assertThat(p)
                        .contains("ROW_GONE"));
    }

    @Test
    void everyShippedSchemaLoadsWithOnlyKnownKeywords() {
        // An unknown keyword throws while the schema loads; an empty object then fails each schema's "required".
        for (String file : List.of(ShippedSchemas.REJECTED, ShippedSchemas.INSPECT, ShippedSchemas.VERIFY)) {
            assertThat(ShippedSchemas.problems(file, "{}")).as(file).isNotEmpty();
        }
        for (String path : List.of("/health/live", "/health/ready", "/health", "/fences/k")) {
            assertThat(ShippedSchemas.enforcerAnswerProblems(path, 200, "application/json", "{}")).as(path).isNotEmpty();
        }
    }

    @Test
    void assertsFormats() {
        String line = """
                {"time":"yesterday","rejected_time":null,"token":"5","seq":null,"highest":"7","floor":null,"reason":"STALE_TOKEN",
                 "stage":"enforcer","writer":null,"source_topic":"fenced-writes","source_partition":"0","source_offset":"3",
                 "error":null,"key":"k","value_bytes":4,"omitted":null,"source_key_bytes":null,"source_value_bytes":null,
                 "source_headers_bytes":null}""";
        assertThat(ShippedSchemas.problems(ShippedSchemas.REJECTED, line)).singleElement().asString().contains("/time");
        assertThat(ShippedSchemas.problems(ShippedSchemas.REJECTED, line.replace("yesterday", "2026-12-06T05:00:00Z")))
                .isEmpty();
    }
}
