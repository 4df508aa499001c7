package dev.fencedwrites.compat;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.services.EnforcerProcess;
import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.KafkaBroker;
import dev.fencedwrites.services.Log4j2Config;
import dev.fencedwrites.services.Service;
import dev.fencedwrites.testing.CommittedRecords;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Needs real services: the enforcer (this build's Kafka Streams) on a broker of the oldest Kafka the project supports
 * ({@code kafka.oldest.version}, compat/kafka-broker's class path, a real 3.x broker in KRaft mode). Its topics, its
 * transactions under {@code exactly_once_v2} and its decisions must be what they are on this build's broker.
 */
@Timeout(value = 6, unit = TimeUnit.MINUTES)
class OldestBrokerIT {
    private static final String OLDEST = System.getProperty("kafka.oldest.version");
    private static final Path BROKER_CLASS_PATH = Path.of(
            System.getProperty("kafka.broker.oldest.classpath", "missing-kafka.broker.oldest.classpath"));

    @TempDir
    static Path dir;
    static Service broker;

    @BeforeAll
    static void startTheOldestBroker() throws Exception {
        assertThat(BROKER_CLASS_PATH).as("compat/kafka-broker's class path file (build with -am)").isRegularFile();
        String classPath = Files.readString(BROKER_CLASS_PATH).strip();
        assertThat(List.of(classPath.split(File.pathSeparator))).as("the broker's own jars, nothing of this build")
                .anyMatch(entry -> entry.endsWith("/kafka_2.13-" + OLDEST + ".jar"))
                .noneMatch(entry -> entry.contains("/dev/fencedwrites/") || entry.contains("/target/"));
        broker = KafkaBroker.startOnClassPath(dir.resolve("kafka"), Log4j2Config.write(dir.resolve("log4j2.properties"),
                "INFO"), classPath);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.address()))) {
            Map<String, String> features = admin.describeFeatures().featureMetadata().get(30, TimeUnit.SECONDS)
                    .finalizedFeatures().entrySet().stream()
                    .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().toString()));
            System.out.printf("broker on kafka_2.13-%s, finalized features %s%n", OLDEST, features);
        }
    }

    @AfterAll
    static void stopTheBroker() {
        if (broker != null) {
            broker.close();
        }
    }

    @ParameterizedTest(name = "processing.guarantee={0}")
    @ValueSource(strings = {"exactly_once_v2", "at_least_once"})
    void theEnforcerDecidesOnTheOldestBrokerAsOnThisBuildsOwn(String guarantee) throws Exception {
        String prefix = guarantee.replace('_', '-');
        String key = "customer-" + UUID.randomUUID();
        try (Service enforcer = EnforcerProcess.start(dir.resolve("enforcer-" + prefix),
                dir.resolve("log4j2.properties"), broker.address(), Map.of("input.topic", prefix + "-in", "accepted.topic",
                        prefix + "-ok", "rejected.topic", prefix + "-dlq", "markers.topic", "", "application.id",
                        prefix + "-enforcer", "processing.guarantee", guarantee, "topics.create.enable", "true",
                        "topics.create.partitions", "3"))) {
            try (KafkaProducer<String, String> writer = new KafkaProducer<>(
                    Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.address()), new StringSerializer(),
                    new StringSerializer())) {
                for (String stamp : List.of("10.1", "10.2", "7.1", "12.1")) {
                    RecordHeaders headers = new RecordHeaders();
                    headers.add(FenceHeaders.TOKEN, utf8(stamp.substring(0, stamp.indexOf('.'))));
                    headers.add(FenceHeaders.SEQ, utf8(stamp.substring(stamp.indexOf('.') + 1)));
                    writer.send(new ProducerRecord<>(prefix + "-in", null, key, "amount at " + stamp, headers))
                            .get(30, TimeUnit.SECONDS);
                }
            }
            await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(500)).untilAsserted(() -> {
                assertThat(CommittedRecords.read(broker.address(), prefix + "-ok", key::equals))
                        .extracting(record -> stamp(record)).containsExactly("10.1", "10.2", "12.1");
                assertThat(CommittedRecords.read(broker.address(), prefix + "-dlq", key::equals)).singleElement()
                        .satisfies(rejected -> {
                            assertThat(stamp(rejected)).isEqualTo("7.1");
                            assertThat(header(rejected, FenceHeaders.REJECTED_REASON)).isEqualTo("STALE_TOKEN");
                            assertThat(header(rejected, FenceHeaders.REJECTED_HIGHEST)).isEqualTo("10.2");
                        });
            });
            assertThat(Http.get(enforcer.address() + "/fences/" + key).body()).contains("\"token\":12");
        }
    }

    private static String stamp(ConsumerRecord<String, byte[]> record) {
        return header(record, FenceHeaders.TOKEN) + "." + header(record, FenceHeaders.SEQ);
    }

    private static String header(ConsumerRecord<String, byte[]> record, String name) {
        return record.headers().lastHeader(name) == null
                ? null
                : new String(record.headers().lastHeader(name).value(), StandardCharsets.UTF_8);
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
