package dev.fencedwrites.avro;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.testing.FakeSchemaRegistry;
import dev.fencedwrites.testing.FakeSchemaRegistry.Answer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.avro.Schema;
import org.apache.avro.SchemaBuilder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The REST client's transport rules (failover, retries, auth) and error mapping, against scripted
 * HTTP servers on loopback: what a real registry cannot be made to do on demand.
 */
class RestSchemaRegistryClientTest {
    private static final String DEAD = "http://127.0.0.1:1";
    private static final Schema SUMMARY = BillingSummary.getClassSchema();
    private static final ObjectMapper JSON = new ObjectMapper();

    private static String schemaAnswer(Schema schema, int id, int version) throws Exception {
        return JSON.writeValueAsString(Map.of("subject", "s", "version", version, "id", id, "schema", schema.toString()));
    }

    private static Map<String, Object> settings(String urls, Object... pairs) {
        Map<String, Object> map = new HashMap<>();
        map.put(AvroSerdeConfig.SCHEMA_REGISTRY_URL, urls);
        map.put(AvroSerdeConfig.RETRIES_WAIT_MS, 10);
        map.put(AvroSerdeConfig.RETRIES_MAX_WAIT_MS, 40);
        for (int i = 0; i < pairs.length; i += 2) {
            map.put((String) pairs[i], pairs[i + 1]);
        }
        return map;
    }

    @Test
    void serverErrorsAreRetriedUntilSuccess() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        try (FakeSchemaRegistry registry = FakeSchemaRegistry.http(r -> calls.incrementAndGet() <= 2
                ? Answer.error(503, 50003, "leader unknown")
                : Answer.ok("{\"id\":21}"))) {
            RestSchemaRegistryClient client = new RestSchemaRegistryClient(settings(registry.url()));

            assertThat(client.register("billing-value", SUMMARY)).isEqualTo(21);
            assertThat(registry.count("/subjects/billing-value/versions")).isEqualTo(3);
        }
    }

    @Test
    void retriesAreBoundedAndTheMessageSaysWhatFailedWhere() throws Exception {
        try (FakeSchemaRegistry registry = FakeSchemaRegistry.http(r -> Answer.error(500, 50001, "store down"))) {
            RestSchemaRegistryClient client = new RestSchemaRegistryClient(
                    settings(registry.url(), AvroSerdeConfig.MAX_RETRIES, 2));

            assertThatThrownBy(() -> client.getById(5)).isInstanceOfSatisfying(SchemaRegistryException.class, e -> {
                assertThat(e.httpStatus()).isEqualTo(500);
                assertThat(e.errorCode()).isEqualTo(50001);
            }).hasMessageContaining("cannot fetch schema id 5").hasMessageContaining("after 3 tries")
                    .hasMessageContaining(registry.url())
                    .hasMessageContaining("backend store failed").hasMessageContaining("store down");
            assertThat(registry.count("/schemas/ids/5")).isEqualTo(3);
        }
    }

    @Test
    void backoffWaitsGrowBetweenRetries() throws Exception {
        try (FakeSchemaRegistry registry = FakeSchemaRegistry.http(r -> Answer.error(502, -1, "bad gateway"))) {
            RestSchemaRegistryClient client = new RestSchemaRegistryClient(
                    settings(registry.url(), AvroSerdeConfig.MAX_RETRIES, 3,
                            AvroSerdeConfig.RETRIES_WAIT_MS, 100, AvroSerdeConfig.RETRIES_MAX_WAIT_MS, 200));
            long start = System.nanoTime();

            assertThatThrownBy(() -> client.getById(5)).isInstanceOf(SchemaRegistryException.class);

            // 100 + 200 + 200 ms of waits (capped), then no wait after the last try.
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isBetween(Duration.ofMillis(500), Duration.ofMillis(3000));
            assertThat(registry.count("/schemas/ids/5")).isEqualTo(4);
        }
    }

    @ParameterizedTest
    @CsvSource({"404, 40403", "422, 42201", "401, 40101", "429, 42901", "408, -1"})
    void clientErrorsAreNeverRetried(int status, int code) throws Exception {
        try (FakeSchemaRegistry registry = FakeSchemaRegistry.http(r -> Answer.error(status, code, "no"))) {
            RestSchemaRegistryClient client = new RestSchemaRegistryClient(settings(registry.url() + "," + registry.url()));

            assertThatThrownBy(() -> client.register("billing-value", SUMMARY))
                    .isInstanceOfSatisfying(SchemaRegistryException.class, e -> assertThat(e.httpStatus()).isEqualTo(status));
            assertThat(registry.received()).hasSize(1);
        }
    }

    /** Apicurio's 409 for two first registrations at once: one more registration, and a 409 again is thrown. */
    @Test
    void aConflictOnRegisterIsTriedOnceMoreThenThrown() throws Exception {
        try (FakeSchemaRegistry registry = FakeSchemaRegistry.http(r -> Answer.error(409, 409, "exists"))) {
            RestSchemaRegistryClient client = new RestSchemaRegistryClient(settings(registry.url()));

            assertThatThrownBy(() -> client.register("billing-value", SUMMARY))
                    .isInstanceOfSatisfying(SchemaRegistryException.class, e -> assertThat(e.httpStatus()).isEqualTo(409));
            assertThat(registry.received()).hasSize(2);
            assertThatThrownBy(() -> client.lookup("billing-value", SUMMARY)).isInstanceOf(SchemaRegistryException.class);
            assertThat(registry.received()).as("a lookup is not retried on 409").hasSize(3);
        }
    }

    @Test
    void deadFirstUrlFailsOverAndTheWorkingOneIsRemembered() throws Exception {
        String schemaJson = "{\"schema\":" + JSON.writeValueAsString(SUMMARY.toString()) + "}";
        try (FakeSchemaRegistry failing = FakeSchemaRegistry.http(r -> Answer.error(503, -1, "unavailable"));
                FakeSchemaRegistry working = FakeSchemaRegistry
                        .http(r -> Answer.ok(r.path().startsWith("/schemas/ids/") ? schemaJson : "{\"id\":7}"))) {
            RestSchemaRegistryClient client = new RestSchemaRegistryClient(
                    settings(DEAD + "," + failing.url() + "," + working.url(),
                            AvroSerdeConfig.MAX_RETRIES, 0));

            assertThat(client.register("billing-value", SUMMARY)).isEqualTo(7);
            assertThat(failing.received()).hasSize(1);
            assertThat(client.getById(99)).isEqualTo(SUMMARY);
            assertThat(failing.received()).as("the working URL is tried first from now on").hasSize(1);
            assertThat(working.received()).hasSize(2);
        }
    }

    @Test
    void everyUrlDeadIsAnUnreachableErrorNamingEachUrl() {
        RestSchemaRegistryClient client = new RestSchemaRegistryClient(
                settings(DEAD + ",http://127.0.0.1:2", AvroSerdeConfig.MAX_RETRIES, 1));

        assertThatThrownBy(() -> client.lookup("billing-value", SUMMARY)).isInstanceOfSatisfying(SchemaRegistryException.class,
                e -> assertThat(e.httpStatus()).isEqualTo(-1))
                .hasMessageContaining("look up schema " + SUMMARY.getFullName() + " under subject 'billing-value'")
                .hasMessageContaining("no schema registry URL answered after 2 tries")
                .hasMessageContaining("127.0.0.1:1").hasMessageContaining("127.0.0.1:2");
    }

    @Test
    void userInfoCredentialsAreSentWithEveryRequest() throws Exception {
        String expected = "Basic " + Base64.getEncoder().encodeToString("alice:pw".getBytes(StandardCharsets.UTF_8));
        try (FakeSchemaRegistry registry = FakeSchemaRegistry.http(r -> expected.equals(r.authorization())
                ? Answer.ok("{\"id\":3}")
                : Answer.error(401, 40101, "Unauthorized"))) {
            RestSchemaRegistryClient anonymous = new RestSchemaRegistryClient(settings(registry.url()));
            RestSchemaRegistryClient alice = new RestSchemaRegistryClient(settings(registry.url(),
                    AvroSerdeConfig.BASIC_AUTH_CREDENTIALS_SOURCE, "USER_INFO", AvroSerdeConfig.BASIC_AUTH_USER_INFO,
                    "alice:pw"));

            assertThatThrownBy(() -> anonymous.register("s", SUMMARY)).isInstanceOfSatisfying(SchemaRegistryException.class,
                    e -> assertThat(e.httpStatus()).isEqualTo(401)).hasMessageContaining("refused the credentials");
            assertThat(alice.register("s", SUMMARY)).isEqualTo(3);
        }
    }

    @Test
    void urlCredentialsAreSentAndNeverShownInMessages() throws Exception {
        String expected = "Basic " + Base64.getEncoder().encodeToString("bob:s3cret".getBytes(StandardCharsets.UTF_8));
        try (FakeSchemaRegistry registry = FakeSchemaRegistry.http(r -> expected.equals(r.authorization())
                ? Answer.error(404, 40401, "Subject not found")
                : Answer.error(401, 40101, "Unauthorized"))) {
            String withCredentials = registry.url().replace("http://", "http://bob:s3cret@");
            RestSchemaRegistryClient bob = new RestSchemaRegistryClient(settings(withCredentials));

            assertThatThrownBy(() -> bob.latest("orders-value")).isInstanceOfSatisfying(SchemaRegistryException.class,
                    e -> assertThat(e.errorCode()).isEqualTo(40401))
                    .hasMessageContaining("subject 'orders-value' not found").hasMessageNotContaining("s3cret");
            assertThat(bob.urls()).extracting(Object::toString).containsExactly(registry.url());
        }
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "404 | 40401 | latest   | subject 'orders-value' not found",
            "404 | 40402 | latest   | version latest of subject 'orders-value' not found",
            "404 | 40403 | lookup   | the schema is not registered under subject 'orders-value'",
            "404 | 40403 | id       | schema id 77 not found",
            "409 | 409   | register | incompatible with the versions registered under subject 'orders-value'",
            "409 | -1    | register | incompatible with the versions registered under subject 'orders-value'",
            "422 | 42201 | register | refused the schema for subject 'orders-value' as invalid",
            "422 | 42202 | latest   | version latest of subject 'orders-value' is not a valid version",
            "403 | 40301 | register | refused access",
            "404 | -1    | id       | schema id 77 not found",
    })
    void registryErrorCodesBecomeMessagesNamingTheSubjectVersionOrId(int status, int code, String call, String meaning)
            throws Exception {
        try (FakeSchemaRegistry registry = FakeSchemaRegistry.http(r -> Answer.error(status, code, "registry says no"))) {
            RestSchemaRegistryClient client = new RestSchemaRegistryClient(settings(registry.url()));
            Runnable action = switch (call) {
                case "latest" -> () -> client.latest("orders-value");
                case "lookup" -> () -> client.lookup("orders-value", SUMMARY);
                case "register" -> () -> client.register("orders-value", SUMMARY);
                default -> () -> client.getById(77);
            };

            assertThatThrownBy(action::run).isInstanceOfSatisfying(SchemaRegistryException.class, e -> {
                assertThat(e.httpStatus()).isEqualTo(status);
                assertThat(e.errorCode()).isEqualTo(code);
            }).hasMessageContaining(meaning).hasMessageContaining("HTTP " + status).hasMessageContaining("registry says no")
                    .hasMessageContaining(registry.url());
        }
    }

    @Test
    void answersWithoutIdOrWithABadSchemaAreErrors() throws Exception {
        try (FakeSchemaRegistry registry = FakeSchemaRegistry.http(r -> r.path().startsWith("/schemas/ids/")
                ? Answer.ok("{\"schema\":\"{not avro\"}")
                : Answer.ok("{\"version\":1}"))) {
            RestSchemaRegistryClient client = new RestSchemaRegistryClient(settings(registry.url()));

            assertThatThrownBy(() -> client.register("s", SUMMARY)).isInstanceOf(SchemaRegistryException.class)
                    .hasMessageContaining("without a schema id");
            assertThatThrownBy(() -> client.getById(4)).isInstanceOf(SchemaRegistryException.class)
                    .hasMessageContaining("schema id 4 with no valid Avro schema");
        }
    }

    /** Avro's parser throws AvroTypeException (not SchemaParseException) for a default of the wrong type. */
    @Test
    void aSchemaWithAnInvalidDefaultIsARegistryErrorNamingTheId() throws Exception {
        String schema = "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"n\",\"type\":\"int\",\"default\":\"abc\"}]}";
        try (FakeSchemaRegistry registry = FakeSchemaRegistry.http(r -> Answer.ok(jsonOf(Map.of("schema", schema))))) {
            RestSchemaRegistryClient client = new RestSchemaRegistryClient(settings(registry.url()));

            assertThatThrownBy(() -> client.getById(4)).isInstanceOf(SchemaRegistryException.class)
                    .hasMessageContaining("schema id 4 with no valid Avro schema")
                    .hasMessageContaining("Invalid default for field n");
        }
    }

    @ParameterizedTest
    @CsvSource({"JSON, '{\"type\":\"object\"}'", "PROTOBUF, 'syntax = \"proto3\"; message M {}'"})
    void aSchemaOfAnotherTypeIsRefusedAsNotAvro(String type, String schema) throws Exception {
        try (FakeSchemaRegistry registry = FakeSchemaRegistry
                .http(r -> Answer.ok(jsonOf(Map.of("schema", schema, "schemaType", type))))) {
            RestSchemaRegistryClient client = new RestSchemaRegistryClient(settings(registry.url()));

            assertThatThrownBy(() -> client.getById(4)).isInstanceOf(SchemaRegistryException.class)
                    .hasMessageContaining("schema id 4 is a " + type + " schema, not Avro");
        }
    }

    /** A schema id names the same content for good, so a schema that does not parse is asked for once, not once per record. */
    @Test
    void anUnparsableSchemaIsFetchedOnceForItsId() throws Exception {
        try (FakeSchemaRegistry registry = FakeSchemaRegistry.http(r -> Answer.ok("{\"schema\":\"{not avro\"}"))) {
            RestSchemaRegistryClient client = new RestSchemaRegistryClient(settings(registry.url()));

            for (int i = 0; i < 3; i++) {
                assertThatThrownBy(() -> client.getById(4)).isInstanceOf(SchemaRegistryException.class)
                        .hasMessageContaining("schema id 4 with no valid Avro schema");
            }
            assertThat(registry.count("/schemas/ids/4")).isEqualTo(1);
        }
    }

    private static String jsonOf(Map<String, String> fields) {
        try {
            return JSON.writeValueAsString(fields);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void registrationsLookupsAndIdsAreCached() throws Exception {
        try (FakeSchemaRegistry registry = FakeSchemaRegistry.http(r -> {
            try {
                return r.path().endsWith("/versions/latest") ? Answer.ok(schemaAnswer(SUMMARY, 12, 4)) : Answer.ok("{\"id\":12}");
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        })) {
            RestSchemaRegistryClient client = new RestSchemaRegistryClient(settings(registry.url()));

            client.register("s", SUMMARY);
            client.register("s", SUMMARY);
            client.lookup("s", SUMMARY);
            RegisteredSchema latest = client.latest("t");
            client.latest("t");
            assertThat(client.getById(12)).isEqualTo(SUMMARY);

            assertThat(latest).isEqualTo(new RegisteredSchema("t", 4, 12, SUMMARY));
            assertThat(registry.received()).extracting(FakeSchemaRegistry.Received::path)
                    .containsExactly("/subjects/s/versions", "/subjects/t/versions/latest");
            assertThat(registry.received().get(0).body())
                    .isEqualTo(JSON.writeValueAsString(Map.of("schema", SUMMARY.toString())));
        }
    }

    @Test
    void cachesAreBoundedByMaxSchemasPerSubject() throws Exception {
        AtomicInteger ids = new AtomicInteger();
        try (FakeSchemaRegistry registry = FakeSchemaRegistry.http(r -> r.path().startsWith("/schemas/ids/")
                ? Answer.ok("{\"schema\":\"\\\"string\\\"\"}")
                : Answer.ok("{\"id\":" + ids.incrementAndGet() + "}"))) {
            RestSchemaRegistryClient client = new RestSchemaRegistryClient(
                    settings(registry.url(), AvroSerdeConfig.MAX_SCHEMAS_PER_SUBJECT, 3));

            for (int i = 0; i < 10; i++) {
                Schema schema = SchemaBuilder.record("R" + i).fields().requiredInt("f").endRecord();
                client.register("one-subject", schema);
                client.register("subject-" + i, schema);
            }
            for (int id = 100; id < 110; id++) {
                client.getById(id);
            }

            long[] subjects = client.cachedSubjectsAndLargest();
            assertThat(subjects[0]).as("subjects cached").isLessThanOrEqualTo(3);
            assertThat(subjects[1]).as("schemas cached under one subject").isLessThanOrEqualTo(3);
            assertThat(client.cachedIds()).as("ids cached").isLessThanOrEqualTo(3);
            assertThat(ids.get()).as("every registration reached the registry").isEqualTo(20);
        }
    }

    @Test
    void subjectsAreListed() throws Exception {
        try (FakeSchemaRegistry registry = FakeSchemaRegistry.http(r -> Answer.ok("[\"a-value\",\"b-key\"]"))) {
            assertThat(new RestSchemaRegistryClient(settings(registry.url())).subjects()).containsExactly("a-value", "b-key");
        }
    }

    @Test
    void theOlderConstructorTakesSeveralUrlsToo() throws Exception {
        try (FakeSchemaRegistry registry = FakeSchemaRegistry.http(r -> Answer.ok("{\"id\":8}"))) {
            RestSchemaRegistryClient client = new RestSchemaRegistryClient(DEAD + ", " + registry.url() + "/",
                    Duration.ofSeconds(2));

            assertThat(client.register("s", SUMMARY)).isEqualTo(8);
            assertThat(client.urls()).extracting(Object::toString).containsExactly(DEAD, registry.url());
        }
    }

    @Test
    void subjectsArePercentEncodedInPaths() throws Exception {
        try (FakeSchemaRegistry registry = FakeSchemaRegistry.http(r -> Answer.ok("{\"id\":8}"))) {
            new RestSchemaRegistryClient(settings(registry.url())).register("my topic/x-value", SUMMARY);

            assertThat(registry.received().get(0).path()).isEqualTo("/subjects/my%20topic%2Fx-value/versions");
        }
    }
}
