package dev.fencedwrites.localstack;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.avro.AvroDeserializer;
import dev.fencedwrites.avro.AvroSerdeConfig;
import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.RegisteredSchema;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.avro.SchemaRegistryException;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.testing.SchemaRegistryExtension;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.avro.Schema;
import org.apache.avro.SchemaBuilder;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.common.errors.SerializationException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The registry client and Avro serde with Confluent's settings against the REAL registry the stack
 * runs: Apicurio Registry 2.6.13, Confluent API at {@code /apis/ccompat/v7}, on loopback.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class SchemaRegistryClientIT {
    /** Nothing listens on port 1 of loopback: connection refused. */
    private static final String DEAD = "http://127.0.0.1:1";
    private static final String SUMMARY_NAME = BillingSummary.getClassSchema().getFullName();

    @RegisterExtension
    static final SchemaRegistryExtension registry = new SchemaRegistryExtension();

    private static Map<String, Object> settings(Object... pairs) {
        Map<String, Object> map = new HashMap<>();
        map.put(AvroSerdeConfig.SCHEMA_REGISTRY_URL, registry.url());
        for (int i = 0; i < pairs.length; i += 2) {
            map.put((String) pairs[i], pairs[i + 1]);
        }
        return map;
    }

    /** The registry's subjects, read with a plain HTTP GET, not through the client under test. */
    private static List<String> subjects() throws Exception {
        HttpResponse<String> response = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create(registry.url() + "/subjects")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).isEqualTo(200);
        return List.of(new ObjectMapper().readValue(response.body(), String[].class));
    }

    @Test
    void severalUrlsWithTheFirstDeadStillWork() throws Exception {
        AvroSerializer<BillingSummary> serializer = new AvroSerializer<>();
        serializer.configure(
                settings(AvroSerdeConfig.SCHEMA_REGISTRY_URL, DEAD + "," + registry.url(), AvroSerdeConfig.MAX_RETRIES, "0"),
                false);

        byte[] bytes = serializer.serialize("failover", summary());

        assertThat(subjects()).contains("failover-value");
        AvroDeserializer<BillingSummary> deserializer = new AvroDeserializer<>();
        deserializer.configure(Map.of(AvroSerdeConfig.SCHEMA_REGISTRY_URL, DEAD + ", " + registry.url(),
                AvroSerdeConfig.SPECIFIC_AVRO_READER, "true"), false);
        assertThat(deserializer.deserialize("failover", bytes)).isEqualTo(summary());
    }

    @Test
    void withoutAutoRegisterAnUnregisteredSchemaFailsNamingTheSubjectAndARegisteredOneIsUsed() throws Exception {
        AvroSerializer<BillingSummary> noRegister = new AvroSerializer<>();
        noRegister.configure(settings(AvroSerdeConfig.AUTO_REGISTER_SCHEMAS, "false"), false);

        assertThatThrownBy(() -> noRegister.serialize("preregistered", summary())).isInstanceOf(SerializationException.class)
                .hasMessageContaining("'preregistered-value'").hasMessageContaining("auto.register.schemas=false");
        assertThat(subjects()).doesNotContain("preregistered-value");

        int id = new RestSchemaRegistryClient(settings()).register("preregistered-value", BillingSummary.getClassSchema());
        byte[] bytes = noRegister.serialize("preregistered", summary());

        assertThat(ByteBuffer.wrap(bytes, 1, 4).getInt()).isEqualTo(id);
    }

    /**
     * Writers that start together register the same new schema at once (the failover fleet did): Apicurio answers
     * some of them 409; each must still get the one id.
     */
    @Test
    void writersRegisteringTheSameNewSchemaAtOnceAllGetItsId() throws Exception {
        for (int round = 0; round < 5; round++) {
            String subject = "race-" + round + "-value";
            int writers = 8;
            CyclicBarrier start = new CyclicBarrier(writers);
            ExecutorService pool = Executors.newFixedThreadPool(writers);
            try {
                List<Future<Integer>> ids = new ArrayList<>();
                for (int w = 0; w < writers; w++) {
                    RestSchemaRegistryClient client = new RestSchemaRegistryClient(settings());
                    ids.add(pool.submit(() -> {
                        start.await(30, TimeUnit.SECONDS);
                        return client.register(subject, BillingSummary.getClassSchema());
                    }));
                }
                Set<Integer> distinct = new HashSet<>();
                for (Future<Integer> id : ids) {
                    distinct.add(id.get(60, TimeUnit.SECONDS));
                }
                assertThat(distinct).as("ids %s got for %s", distinct, subject).hasSize(1);
            } finally {
                pool.shutdownNow();
            }
        }
    }

    @Test
    void aSchemaNotRegisteredUnderAnExistingSubjectFailsNamingTheSubject() {
        RestSchemaRegistryClient client = new RestSchemaRegistryClient(settings());
        client.register("other-shape-value", SchemaBuilder.record("Other").fields().requiredInt("n").endRecord());

        assertThatThrownBy(() -> client.lookup("other-shape-value", BillingSummary.getClassSchema()))
                .isInstanceOfSatisfying(SchemaRegistryException.class, e -> assertThat(e.httpStatus()).isEqualTo(404))
                .hasMessageContaining("'other-shape-value'");
    }

    @Test
    void useLatestVersionWritesWithTheSubjectsLatestVersion() throws Exception {
        Schema v1 = SchemaBuilder.record("Order").namespace("shop").fields().requiredString("id").requiredLong("cents")
                .endRecord();
        Schema v2 = SchemaBuilder.record("Order").namespace("shop").fields().requiredString("id").requiredLong("cents")
                .name("note").type().stringType().stringDefault("none").endRecord();
        RestSchemaRegistryClient admin = new RestSchemaRegistryClient(settings());
        int v1Id = admin.register("orders-value", v1);
        int v2Id = admin.register("orders-value", v2);
        GenericRecord order = new GenericData.Record(v1);
        order.put("id", "o-1");
        order.put("cents", 250L);
        AvroSerializer<GenericRecord> serializer = new AvroSerializer<>();
        serializer.configure(settings(AvroSerdeConfig.USE_LATEST_VERSION, "true", AvroSerdeConfig.AUTO_REGISTER_SCHEMAS, "false"),
                false);

        byte[] bytes = serializer.serialize("orders", order);

        assertThat(v2Id).isNotEqualTo(v1Id);
        assertThat(ByteBuffer.wrap(bytes, 1, 4).getInt()).isEqualTo(v2Id);
        RegisteredSchema latest = new RestSchemaRegistryClient(settings()).latest("orders-value");
        assertThat(latest.version()).isEqualTo(2);
        assertThat(latest.id()).isEqualTo(v2Id);
        GenericRecord read = new AvroDeserializer<GenericRecord>(new RestSchemaRegistryClient(settings()), null)
                .deserialize("orders", bytes);
        assertThat(read.getSchema()).isEqualTo(v2);
        assertThat(read.get("note")).hasToString("none");
    }

    @Test
    void recordAndTopicRecordStrategiesRegisterUnderTheExpectedSubjects() throws Exception {
        AvroSerializer<BillingSummary> byRecord = new AvroSerializer<>();
        byRecord.configure(settings(AvroSerdeConfig.VALUE_SUBJECT_NAME_STRATEGY,
                "io.confluent.kafka.serializers.subject.RecordNameStrategy"), false);
        AvroSerializer<BillingSummary> byTopicRecord = new AvroSerializer<>();
        byTopicRecord.configure(settings(AvroSerdeConfig.VALUE_SUBJECT_NAME_STRATEGY,
                "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"), false);

        byRecord.serialize("strategies", summary());
        byTopicRecord.serialize("strategies", summary());

        assertThat(subjects()).contains(SUMMARY_NAME, "strategies-" + SUMMARY_NAME).doesNotContain("strategies-value");
    }

    @Test
    void anUnknownIdFailsNamingTheId() {
        byte[] bytes = ByteBuffer.allocate(8).put((byte) 0).putInt(987_654).put(new byte[]{2, 'x', 0}).array();
        AvroDeserializer<Object> deserializer = new AvroDeserializer<>();
        deserializer.configure(settings(), false);

        assertThatThrownBy(() -> deserializer.deserialize("unknown-id", bytes)).isInstanceOf(SerializationException.class)
                .hasMessageContaining("schema id 987654 not found");
    }

    @Test
    void anUnknownSubjectFailsNamingTheSubject() {
        assertThatThrownBy(() -> new RestSchemaRegistryClient(settings()).latest("no-such-subject-value"))
                .isInstanceOfSatisfying(SchemaRegistryException.class, e -> assertThat(e.httpStatus()).isEqualTo(404))
                .hasMessageContaining("subject 'no-such-subject-value' not found");
    }

    private static BillingSummary summary() {
        return BillingSummary.newBuilder().setCustomerId("customer-42").setBillingPeriod("2026-11").setAmountMinor(123_456L)
                .setCurrency("EUR").setLineItems(17).setComputedAt(Instant.parse("2026-11-30T23:59:59.123Z"))
                .setComputedBy("worker-a").build();
    }
}
