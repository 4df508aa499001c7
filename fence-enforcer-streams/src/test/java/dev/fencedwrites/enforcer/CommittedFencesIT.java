package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.services.EnforcerProcess;
import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.Service;
import dev.fencedwrites.testing.EtcdNodeExtension;
import dev.fencedwrites.testing.KafkaBrokerExtension;
import dev.fencedwrites.testing.ShippedSchemas;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Needs real services: open and committed transactions, commits and a consumer group that removes a paused member exist only
 * between a real broker and enforcer processes (two, sharing one application id), so {@code GET /fences/{key}} is proven
 * there to answer committed fences only and never from a paused instance that may have lost its tasks. In the slow lane
 * (about 95 s; {@code ./mvnw verify -Pslow -pl system-tests -am -Dtest=none}): it proves the HTTP query of fences, not a
 * decision.
 */
@Tag("slow")
@Timeout(value = 8, unit = TimeUnit.MINUTES)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class CommittedFencesIT {
    private static final String INPUT = "committed-in";
    private static final String ACCEPTED = "committed-accepted";
    private static final int PARTITIONS = 2;
    /** Long enough to look at an open transaction; the transaction timeout must exceed it (Kafka Streams checks). */
    private static final Map<String, String> SETTINGS = Map.ofEntries(Map.entry("application.id", "committed-fences"),
            Map.entry("input.topic", INPUT), Map.entry("accepted.topic", ACCEPTED),
            Map.entry("rejected.topic", "committed-rejected"), Map.entry("markers.topic", ""),
            Map.entry("processing.guarantee", "exactly_once_v2"), Map.entry("streams.commit.interval.ms", "5000"),
            Map.entry("streams.producer.transaction.timeout.ms", "60000"), Map.entry("streams.session.timeout.ms", "6000"),
            Map.entry("streams.heartbeat.interval.ms", "1000"));
    private static final ObjectMapper JSON = new ObjectMapper();

    @RegisterExtension
    static final KafkaBrokerExtension kafka = new KafkaBrokerExtension();
    @RegisterExtension
    static final EtcdNodeExtension etcd = new EtcdNodeExtension();

    private static Path dir;
    private static List<Service> enforcers;
    private static KafkaProducer<String, byte[]> producer;

    @BeforeAll
    static void startEnforcers() throws Exception {
        dir = Files.createTempDirectory("committed-fences-it");
        kafka.admin().createTopics(List.of(new NewTopic(INPUT, PARTITIONS, (short) 1),
                new NewTopic(ACCEPTED, PARTITIONS, (short) 1), new NewTopic("committed-rejected", PARTITIONS, (short) 1)))
                .all().get(1, TimeUnit.MINUTES);
        enforcers = List.of(EnforcerProcess.start(dir.resolve("first"), kafka.log4j2(), kafka.bootstrapServers(), SETTINGS),
                EnforcerProcess.start(dir.resolve("second"), kafka.log4j2(), kafka.bootstrapServers(), SETTINGS));
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        producer = new KafkaProducer<>(props, new StringSerializer(), new ByteArraySerializer());
    }

    @AfterAll
    static void stopEnforcers() {
        if (producer != null) {
            producer.close();
        }
        if (enforcers != null) {
            enforcers.forEach(Service::close);
        }
    }

    @Test
    @Order(1)
    void aFenceOfAnOpenTransactionIsNotAnsweredUntilTheTransactionCommits() throws Exception {
        String key = "open-transaction";
        long committed = 5;
        write(key, committed);
        awaitAnswer(enforcers.get(0), key, committed + ".1");
        Service owner = ownerOf(key);
        long raised = committed;
        // Retried when the owner happens to commit between the write and the read: then the read proves nothing.
        for (int attempt = 0; attempt < 5; attempt++) {
            raised += 4;
            double commitsBefore = commitTotal(owner);
            write(key, raised);
            awaitUncommittedAccept(key, raised);
            HttpResponse<String> read = Http.get(owner.address() + "/fences/" + key);
            if (commitTotal(owner) != commitsBefore) {
                awaitAnswer(owner, key, raised + ".1");
                committed = raised;
                continue;
            }
            System.out.printf("[committed-fences] %s: token %d accepted in the open transaction, /fences answered %s%n", key,
                    raised, read.body());
            assertThat(read.statusCode()).as("GET /fences/%s: %s", key, read.body()).isEqualTo(200);
            ShippedSchemas.assertEnforcerAnswer(read);
            assertThat(fence(read)).as("the fence while the transaction that raised it to %d is open", raised)
                    .isEqualTo(committed + ".1");
            awaitAnswer(owner, key, raised + ".1");
            return;
        }
        throw new AssertionError("the owner committed during every one of 5 writes: no open transaction was seen");
    }

    @Test
    @Order(2)
    void aPausedOwnerResumedAfterItsSessionTimeoutAnswers503NotItsStaleFence() throws Exception {
        String key = "paused-owner";
        Service owner = writeAndFindOwner(key, 5);
        Service survivor = enforcers.get(0) == owner ? enforcers.get(1) : enforcers.get(0);
        owner.process().signal("STOP");
        long paused = System.nanoTime();
        CompletableFuture<HttpResponse<String>> fromZombie;
        try {
            // Until the rebalance the survivor proxies the key to the stopped owner, which does not answer (timeouts).
            await("the survivor owns " + key).atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(500))
                    .ignoreExceptions().until(() -> survivor.address().endsWith(servedBy(survivor, key)));
            write(key, 9);
            awaitAnswer(survivor, key, "9.1");
            // Asked while the owner is still stopped: its kernel accepts the connection, and the request is the first thing
            // the resumed process can answer, before its consumer learns that the group gave its tasks away.
            fromZombie = HttpClient.newHttpClient().sendAsync(HttpRequest.newBuilder(URI.create(owner.address()
                    + "/fences/" + key)).timeout(Duration.ofSeconds(60)).GET().build(), HttpResponse.BodyHandlers.ofString());
        } finally {
            owner.process().signal("CONT");
        }
        HttpResponse<String> zombie = fromZombie.get(1, TimeUnit.MINUTES);
        System.out.printf("[committed-fences] owner paused %.1f s; the survivor answered 9.1; after SIGCONT the old owner "
                + "answered %d %s%n", (System.nanoTime() - paused) / 1e9, zombie.statusCode(), zombie.body());
        assertThat(zombie.statusCode()).as("the resumed owner's answer: %s", zombie.body()).isEqualTo(503);
        assertThat(JSON.readTree(zombie.body()).path("error").asText()).contains("paused", "session.timeout.ms=6000");
        awaitAnswer(owner, key, "9.1");
    }

    @Test
    @Order(3)
    void anOwnerWhoseStreamThreadIsStuckPastHalfItsMaxPollIntervalAnswers503() throws Exception {
        String key = "stuck-thread";
        kafka.admin().createTopics(List.of(new NewTopic("stuck-in", 1, (short) 1), new NewTopic("stuck-accepted", 1, (short) 1),
                new NewTopic("stuck-rejected", 1, (short) 1))).all().get(1, TimeUnit.MINUTES);
        Map<String, String> settings = new HashMap<>(SETTINGS);
        settings.putAll(Map.of("application.id", "stuck-fences", "input.topic", "stuck-in", "accepted.topic", "stuck-accepted",
                "rejected.topic", "stuck-rejected", "etcd.endpoints", etcd.endpoint(),
                "streams.max.poll.interval.ms", "10000"));
        try (Service stuck = EnforcerProcess.start(dir.resolve("stuck"), kafka.log4j2(), kafka.bootstrapServers(), settings)) {
            await("no fence for " + key).atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(200))
                    .ignoreExceptions().until(() -> Http.get(stuck.address() + "/fences/" + key).statusCode() == 404);
            // A raising token is verified in etcd; with etcd stopped the stream thread waits, and polls no more.
            etcd.service().process().signal("STOP");
            HttpResponse<String> refused;
            try {
                write("stuck-in", key, 5);
                long written = System.nanoTime();
                refused = await("a 503 naming max.poll.interval.ms").atMost(Duration.ofMinutes(1))
                        .pollInterval(Duration.ofMillis(200)).ignoreExceptions()
                        .until(() -> Http.get(stuck.address() + "/fences/" + key), r -> r.statusCode() == 503);
                System.out.printf("[committed-fences] etcd stopped, the stream thread waits to verify a token; after %.1f s "
                        + "the owner answered %d %s%n", (System.nanoTime() - written) / 1e9, refused.statusCode(),
                        refused.body());
                ShippedSchemas.assertEnforcerAnswer(refused);
            } finally {
                etcd.service().process().signal("CONT");
            }
            assertThat(JSON.readTree(refused.body()).path("error").asText()).contains("has not run for",
                    "max.poll.interval.ms=10000");
            await("the owner answers again").atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(200))
                    .ignoreExceptions().until(() -> Http.get(stuck.address() + "/fences/" + key).statusCode() == 404);
        }
    }

    /**
     * Stop 23's CI failure: an idle stream thread commits right after a write, and the first rule, which counted only commits
     * seen between two observations, kept that last write out of the answers until another record came. Exactly-once's own
     * commit interval (100 ms) and a plain producer (no transaction markers after the records, which make Streams commit
     * once more) make that race likely: each of these writes may then stay unanswered under the old rule (seen: the 17th of 20).
     */
    @Test
    @Order(4)
    void everyWriteIsAnsweredOnceCommittedThoughNoRecordFollowsIt() throws Exception {
        kafka.admin().createTopics(List.of(new NewTopic("idle-in", 1, (short) 1), new NewTopic("idle-accepted", 1, (short) 1),
                new NewTopic("idle-rejected", 1, (short) 1))).all().get(1, TimeUnit.MINUTES);
        Map<String, String> settings = new HashMap<>(SETTINGS);
        settings.putAll(Map.of("application.id", "idle-fences", "input.topic", "idle-in", "accepted.topic", "idle-accepted",
                "rejected.topic", "idle-rejected"));
        settings.remove("streams.commit.interval.ms");
        try (Service idle = EnforcerProcess.start(dir.resolve("idle"), kafka.log4j2(), kafka.bootstrapServers(), settings)) {
            long slowest = 0;
            int writes = 40;
            for (int i = 0; i < writes; i++) {
                String key = "idle-" + i;
                // Tokens above the lease write() sends (7): a token equal to its lease is rejected LEASE_AS_TOKEN.
                long token = 100 + i;
                String expected = token + ".1";
                write("idle-in", key, token);
                long written = System.nanoTime();
                AtomicReference<String> last = new AtomicReference<>("none");
                try {
                    await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50)).ignoreExceptions().until(() -> {
                        HttpResponse<String> response = Http.get(idle.address() + "/fences/" + key);
                        last.set(response.statusCode() + " " + response.body());
                        return response.statusCode() == 200 && fence(response).equals(expected);
                    });
                } catch (ConditionTimeoutException e) {
                    throw new AssertionError("GET /fences/" + key + " did not answer " + expected + " within 20 s of the write, "
                            + "with no record after it; last answer: " + last.get(), e);
                }
                slowest = Math.max(slowest, System.nanoTime() - written);
                // Longer than the commit interval: the thread is idle before the next write, as at the end of a burst.
                Thread.sleep(300);
            }
            System.out.printf("[committed-fences] %d writes each followed by an idle spell: every one answered once committed, "
                    + "the slowest %.0f ms after its send returned%n", writes, slowest / 1e6);
        }
    }

    /**
     * Break-it finding F1: an owner cut off from its group coordinator while its process runs and its stream thread polls
     * is not paused and not stalled, yet once {@code session.timeout.ms} passes the group gives its keys to another
     * instance. A stopped broker (here the only one, the coordinator) cuts the owner off the same way; the owner must answer
     * 503 once a heartbeat response is overdue, not the fence it holds.
     */
    @Test
    @Order(5)
    void anOwnerWhoseConsumerHearsNothingFromItsCoordinatorAnswers503() throws Exception {
        String key = "cut-off";
        Service owner = writeAndFindOwner(key, 11);
        HttpResponse<String> refused;
        kafka.service().process().signal("STOP");
        long stopped = System.nanoTime();
        try {
            refused = await("a 503 naming the coordinator").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200))
                    .ignoreExceptions().until(() -> Http.get(owner.address() + "/fences/" + key), r -> r.statusCode() == 503);
            System.out.printf(
                    "[committed-fences] broker (the group coordinator) stopped; after %.1f s the owner answered %d %s%n",
                    (System.nanoTime() - stopped) / 1e9, refused.statusCode(), refused.body());
            ShippedSchemas.assertEnforcerAnswer(refused);
        } finally {
            kafka.service().process().signal("CONT");
        }
        assertThat(JSON.readTree(refused.body()).path("error").asText()).contains("no heartbeat response",
                "session.timeout.ms=6000");
        awaitAnswer(owner, key, "11.1");
    }

    private static void write(String key, long token) throws Exception {
        write(INPUT, key, token);
    }

    private static void write(String topic, String key, long token) throws Exception {
        ProducerRecord<String, byte[]> record = new ProducerRecord<>(topic, key, new byte[]{1});
        record.headers().add(FenceHeaders.TOKEN, FenceHeaders.encode(token));
        record.headers().add(FenceHeaders.SEQ, FenceHeaders.encode(1));
        // A lease, so that a verifying enforcer asks etcd (no lock holds it: the answer would be LOCK_NOT_HELD).
        record.headers().add(FenceHeaders.LEASE, FenceHeaders.encode(7));
        producer.send(record).get(1, TimeUnit.MINUTES);
    }

    /** Waits until the accepted topic holds the write, read uncommitted: the enforcer decided it and raised the fence. */
    private static void awaitUncommittedAccept(String key, long token) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, IsolationLevel.READ_UNCOMMITTED.toString());
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(props, new StringDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = List.of(new TopicPartition(ACCEPTED, 0), new TopicPartition(ACCEPTED, 1));
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            await("token " + token + " of " + key + " on the accepted topic").atMost(Duration.ofMinutes(1))
                    .pollInterval(Duration.ZERO).until(() -> {
                        for (ConsumerRecord<String, byte[]> accepted : consumer.poll(Duration.ofMillis(200))) {
                            Header header = accepted.headers().lastHeader(FenceHeaders.TOKEN);
                            if (accepted.key().equals(key) && header != null
                                    && new String(header.value(), StandardCharsets.UTF_8).equals(Long.toString(token))) {
                                return true;
                            }
                        }
                        return false;
                    });
        }
    }

    private static void awaitAnswer(Service enforcer, String key, String fence) {
        await("GET /fences/" + key + " = " + fence + " from " + enforcer.address()).atMost(Duration.ofMinutes(2))
                .pollInterval(Duration.ofMillis(200)).ignoreExceptions().until(() -> {
                    HttpResponse<String> response = Http.get(enforcer.address() + "/fences/" + key);
                    return response.statusCode() == 200 && fence.equals(fence(response));
                });
    }

    private static String fence(HttpResponse<String> response) throws Exception {
        JsonNode body = JSON.readTree(response.body());
        return body.path("seq").isNull()
                ? body.path("token").asText()
                : body.path("token").asText() + "." + body.path("seq").asText();
    }

    /** The instance {@code served_by} names when {@code enforcer} is asked for {@code key}; empty when none answered. */
    private static String servedBy(Service enforcer, String key) throws Exception {
        HttpResponse<String> response = Http.get(enforcer.address() + "/fences/" + key);
        ShippedSchemas.assertEnforcerAnswer(response);
        return response.statusCode() == 200 ? JSON.readTree(response.body()).path("served_by").asText() : "-";
    }

    /** Writes {@code key} at {@code token}.1, waits until it is answered, and returns the instance that owns it. */
    private static Service writeAndFindOwner(String key, long token) throws Exception {
        write(key, token);
        awaitAnswer(enforcers.get(0), key, token + ".1");
        return ownerOf(key);
    }

    private static Service ownerOf(String key) throws Exception {
        String owner = servedBy(enforcers.get(0), key);
        return enforcers.stream().filter(e -> e.address().endsWith(owner)).findFirst()
                .orElseThrow(() -> new AssertionError("no instance named " + owner + " owns " + key));
    }

    /** The owner's stream threads' successful commits ({@code commit-total}, as Prometheus text on {@code /metrics}). */
    private static double commitTotal(Service enforcer) throws Exception {
        double total = 0;
        boolean found = false;
        for (String line : Http.get(enforcer.address() + "/metrics").body().split("\n")) {
            if (line.startsWith("kafka_stream_thread_commit_total{")) {
                total += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                found = true;
            }
        }
        assertThat(found).as("kafka_stream_thread_commit_total on %s/metrics", enforcer.address()).isTrue();
        return total;
    }
}
