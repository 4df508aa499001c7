package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.enforcer.ReferenceModel.Kind;
import dev.fencedwrites.enforcer.ReferenceModel.Outcome;
import dev.fencedwrites.localstack.internal.Await;
import dev.fencedwrites.localstack.internal.EnforcerProcess;
import dev.fencedwrites.localstack.internal.KafkaBroker;
import dev.fencedwrites.localstack.internal.PropertiesFiles;
import dev.fencedwrites.localstack.internal.Service;
import dev.fencedwrites.schemas.FenceHeaders;
import dev.fencedwrites.schemas.FenceTopics;
import dev.fencedwrites.schemas.RejectionReason;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: exactly-once across {@code kill -9} is a property of the real broker's
 * transactions and of the state store restored from its real changelog, which no test driver has.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class EnforcerCrashIT {
    private static final int RECORDS = 100_000;
    private static final int BATCHES = 4;
    private static final int KEYS = 200;
    private static final int PARTITIONS = 3;
    private static final String ID = "test.id";

    @TempDir
    Path dir;

    /** One input record as produced, with the outcome the reference model gives it. */
    private record Sent(String key, long token, Long seq, Outcome expected) {
    }

    @Test
    void everyInputRecordIsDecidedExactlyOnceAcrossThreeKillNineRestarts() throws Exception {
        Path log4j2 = PropertiesFiles.log4j2(dir.resolve("log4j2.properties"), "INFO");
        try (Service kafka = KafkaBroker.start(dir.resolve("kafka"), log4j2)) {
            createTopics(kafka.address());
            Map<String, String> overrides = Map.of("streams.session.timeout.ms", "6000", "streams.heartbeat.interval.ms", "1000");
            List<Sent> sent = new ArrayList<>();
            Map<Integer, List<Outcome>> seen = new HashMap<>();
            Map<String, List<Integer>> acceptedByKey = new HashMap<>();
            Random random = new Random(42);
            Generator generator = new Generator(random);
            try (KafkaProducer<byte[], byte[]> producer = producer(kafka.address());
                 KafkaConsumer<byte[], byte[]> outputs = outputConsumer(kafka.address())) {
                Service enforcer = EnforcerProcess.start(dir.resolve("enforcer"), log4j2, kafka.address(), overrides);
                try {
                    for (int batch = 0; batch < BATCHES; batch++) {
                        int target = (batch + 1) * RECORDS / BATCHES;
                        while (sent.size() < target) {
                            sent.add(generator.next(producer, sent.size()));
                        }
                        producer.flush();
                        if (batch == BATCHES - 1) {
                            break;
                        }
                        int killAt = batch * RECORDS / BATCHES + 5_000;
                        Await.until(killAt + " outputs before the kill", Duration.ofMinutes(3), enforcer.process(),
                                () -> poll(outputs, seen, acceptedByKey) >= killAt);
                        enforcer.process().signal("KILL");
                        enforcer.process().waitFor(Duration.ofSeconds(30));
                        System.out.printf("killed the enforcer with %d of %d outputs committed%n", seen.size(), target);
                        enforcer = EnforcerProcess.start(dir.resolve("enforcer"), log4j2, kafka.address(), overrides);
                    }
                    Await.until("all " + RECORDS + " inputs decided", Duration.ofMinutes(5), enforcer.process(),
                            () -> poll(outputs, seen, acceptedByKey) >= expectedOutputs(sent));
                    // Anything committed twice would arrive after the last expected output too.
                    long settleUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
                    while (System.nanoTime() < settleUntil) {
                        poll(outputs, seen, acceptedByKey);
                    }
                } finally {
                    enforcer.close();
                }
            }

            List<Integer> decidedTwice = new ArrayList<>();
            List<Integer> wrong = new ArrayList<>();
            for (int id = 0; id < sent.size(); id++) {
                Outcome expected = sent.get(id).expected();
                List<Outcome> actual = seen.getOrDefault(id, List.of());
                if (actual.size() > 1) {
                    decidedTwice.add(id);
                } else if (expected.kind() == Kind.MARKER_ACCEPTED ? !actual.isEmpty() : !actual.equals(List.of(expected))) {
                    wrong.add(id);
                }
            }
            assertThat(sent).hasSize(RECORDS);
            assertThat(decidedTwice).as("input records on the output topics more than once").isEmpty();
            assertThat(wrong).as("input records missing or decided unlike the reference model (first: %s)",
                    wrong.isEmpty() ? "" : sent.get(wrong.get(0)) + " -> " + seen.get(wrong.get(0))).isEmpty();
            Map<String, List<Integer>> expectedAcceptedByKey = new HashMap<>();
            for (int id = 0; id < sent.size(); id++) {
                if (sent.get(id).expected().kind() == Kind.ACCEPTED) {
                    expectedAcceptedByKey.computeIfAbsent(sent.get(id).key(), k -> new ArrayList<>()).add(id);
                }
            }
            assertThat(acceptedByKey).as("accepted order per key").isEqualTo(expectedAcceptedByKey);
            long stale = sent.stream().filter(s -> s.expected().reason() == RejectionReason.STALE_TOKEN).count();
            assertThat(stale).as("the workload holds stale writes").isGreaterThan(RECORDS / 20);
        }
    }

    private static long expectedOutputs(List<Sent> sent) {
        return sent.stream().filter(s -> s.expected().kind() != Kind.MARKER_ACCEPTED).count();
    }

    /** Reads committed outputs; returns how many distinct input records have been seen. */
    private static int poll(KafkaConsumer<byte[], byte[]> consumer, Map<Integer, List<Outcome>> seen, Map<String, List<Integer>> acceptedByKey) {
        for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
            int id = Integer.parseInt(text(record, ID));
            Outcome outcome = record.topic().equals(FenceTopics.ACCEPTED) ? Outcome.accepted()
                    : Outcome.rejected(RejectionReason.valueOf(text(record, FenceHeaders.REJECTED_REASON)));
            seen.computeIfAbsent(id, i -> new ArrayList<>()).add(outcome);
            if (outcome.kind() == Kind.ACCEPTED) {
                acceptedByKey.computeIfAbsent(new String(record.key(), StandardCharsets.UTF_8), k -> new ArrayList<>()).add(id);
            }
        }
        return seen.size();
    }

    /** A workload of lease holders per key: writes, takeovers, stale writes, redeliveries, deletes, bad records. */
    private static final class Generator {
        private final Random random;
        private final ReferenceModel model = new ReferenceModel();
        private final long[] token = new long[KEYS];
        private final long[] seq = new long[KEYS];

        Generator(Random random) {
            this.random = random;
            java.util.Arrays.fill(token, 1);
        }

        Sent next(KafkaProducer<byte[], byte[]> producer, int id) {
            int k = random.nextInt(KEYS);
            String key = "key-" + k;
            RecordHeaders headers = new RecordHeaders();
            headers.add(ID, bytes(Integer.toString(id)));
            byte[] value = bytes(String.format("value-%08d-%s", id, "x".repeat(80)));
            int roll = random.nextInt(100);
            RejectionReason invalid = null;
            long t = token[k];
            Long s;
            byte[] recordKey = bytes(key);
            if (roll < 5) {
                invalid = badRecord(headers);
                recordKey = invalid == RejectionReason.MISSING_KEY ? null : recordKey;
                s = null;
            } else if (roll < 13) {
                token[k] += 1 + random.nextInt(3);
                seq[k] = 1;
                t = token[k];
                s = 1L;
            } else if (roll < 25 && token[k] > 1) {
                t = 1 + random.nextInt((int) token[k] - 1);
                s = 1L + random.nextInt(5);
            } else if (roll < 29 && seq[k] > 0) {
                s = seq[k];
            } else {
                s = ++seq[k];
                if (roll < 32) {
                    value = null;
                }
            }
            if (invalid == null) {
                headers.add(FenceHeaders.TOKEN, bytes(Long.toString(t)));
                headers.add(FenceHeaders.SEQ, bytes(Long.toString(s)));
            }
            Outcome expected = model.apply(recordKey == null ? "" : key, invalid, t, s, false, value != null);
            producer.send(new ProducerRecord<>(FenceTopics.INPUT, null, recordKey, value, headers));
            return new Sent(recordKey == null ? null : key, t, s, expected);
        }

        private RejectionReason badRecord(RecordHeaders headers) {
            switch (random.nextInt(5)) {
                case 0:
                    headers.add(FenceHeaders.TOKEN, bytes("5"));
                    return RejectionReason.MISSING_KEY;
                case 1:
                    return RejectionReason.MISSING_TOKEN;
                case 2:
                    headers.add(FenceHeaders.TOKEN, bytes("99999999999999999999"));
                    return RejectionReason.MALFORMED_TOKEN;
                case 3:
                    headers.add(FenceHeaders.TOKEN, bytes("5"));
                    headers.add(FenceHeaders.SEQ, bytes("-1"));
                    return RejectionReason.MALFORMED_SEQ;
                default:
                    headers.add(FenceHeaders.TOKEN, bytes("5"));
                    headers.add(FenceHeaders.OP, bytes("MERGE"));
                    return RejectionReason.UNKNOWN_OP;
            }
        }
    }

    private static void createTopics(String bootstrap) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic(FenceTopics.INPUT, PARTITIONS, (short) 1), new NewTopic(FenceTopics.ACCEPTED, PARTITIONS, (short) 1),
                    new NewTopic(FenceTopics.REJECTED, PARTITIONS, (short) 1))).all().get(60, TimeUnit.SECONDS);
        }
    }

    private static KafkaProducer<byte[], byte[]> producer(String bootstrap) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }

    private static KafkaConsumer<byte[], byte[]> outputConsumer(String bootstrap) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5_000);
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        List<TopicPartition> partitions = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) {
            partitions.add(new TopicPartition(FenceTopics.ACCEPTED, p));
            partitions.add(new TopicPartition(FenceTopics.REJECTED, p));
        }
        consumer.assign(partitions);
        consumer.seekToBeginning(partitions);
        return consumer;
    }

    private static String text(ConsumerRecord<?, ?> record, String header) {
        return new String(record.headers().lastHeader(header).value(), StandardCharsets.UTF_8);
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
