package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.contract.NewTopics;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.enforcer.ReferenceModel.Kind;
import dev.fencedwrites.enforcer.ReferenceModel.Outcome;
import dev.fencedwrites.etcd.LockKeys;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A reproducible workload for the enforcer's failure tests: lease holders per key writing,
 * taking over, writing stale, redelivering, deleting, plus bad records and forged tokens; each
 * record tagged with {@value #ID} and the outcome {@link ReferenceModel} gives it. {@link Outputs}
 * reads what the enforcer committed and checks it against the model.
 *
 * <p>Tokens are real: every takeover takes the key's lock in etcd through
 * {@link RealLocks}, and each write carries that acquisition's token and lease, so the enforcer
 * runs with token verification on. Stale writes carry an earlier holder's real token and lease.
 * Forged records carry a token the lock service never issued for their key and lease, either
 * {@link Long#MAX_VALUE} ({@code FUTURE_TOKEN}) or another key's real token with its lease
 * ({@code LOCK_NOT_HELD}); the generator knows it forged them and tells the model the reason, as
 * it does for bad records, so the model stays free of etcd.
 */
final class Workload implements AutoCloseable {
    static final String ID = "test.id";

    /** One input record as produced, with the outcome the reference model gives it. */
    record Sent(String key, long token, Long seq, long lease, Outcome expected) {
    }

    private final Random random;
    private final int keys;
    private final ReferenceModel model = new ReferenceModel();
    private final RealLocks locks;
    /** Per key, its lock's acquisitions in order; the last one holds the lock. */
    private final List<List<RealLocks.Acquisition>> held = new ArrayList<>();
    private final long[] seq;
    private final KafkaProducer<byte[], byte[]> producer;
    private final List<Sent> sent = new ArrayList<>();

    /** Workload writers (etcd leases) taking turns on each key's lock. */
    static final int WRITERS = 4;

    /**
     * @param etcd where each key's lock is taken, at the key's first write and at every takeover;
     *             the enforcer must verify tokens against it under {@link LockKeys#DEFAULT_PREFIX}
     */
    Workload(String bootstrap, String etcd, int keys, long seed) throws Exception {
        this.random = new Random(seed);
        this.keys = keys;
        List<String> names = new ArrayList<>();
        for (int k = 0; k < keys; k++) {
            names.add(key(k));
        }
        this.locks = new RealLocks(etcd, LockKeys.DEFAULT_PREFIX, names, WRITERS, seed);
        this.seq = new long[keys];
        for (int k = 0; k < keys; k++) {
            held.add(new ArrayList<>());
        }
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        producer = new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** Creates the default input, accepted, rejected and markers topics. */
    static void createTopics(String bootstrap, int partitions) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic(FenceTopics.INPUT, partitions, (short) 1),
                    new NewTopic(FenceTopics.ACCEPTED, partitions, (short) 1),
                    new NewTopic(FenceTopics.REJECTED, partitions, (short) 1),
                    new NewTopic(FenceTopics.MARKERS, partitions, (short) 1))).all().get(60, TimeUnit.SECONDS);
            NewTopics.awaitWritable(admin,
                    List.of(FenceTopics.INPUT, FenceTopics.ACCEPTED, FenceTopics.REJECTED, FenceTopics.MARKERS),
                    Duration.ofSeconds(60));
        }
    }

    /**
     * Whether the consumer group {@code groupId} (the enforcer's application.id) has committed the
     * end of every input partition: every input record was processed and, under both guarantees,
     * its outputs were flushed before that commit.
     */
    static boolean inputCommitted(String bootstrap, String groupId) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(groupId)
                    .partitionsToOffsetAndMetadata()
                    .get(30, TimeUnit.SECONDS);
            Map<TopicPartition, OffsetSpec> ends = new HashMap<>();
            for (TopicPartition partition : admin.describeTopics(List.of(FenceTopics.INPUT)).allTopicNames()
                    .get(30, TimeUnit.SECONDS)
                    .get(FenceTopics.INPUT).partitions().stream().map(p -> new TopicPartition(FenceTopics.INPUT, p.partition()))
                    .toList()) {
                ends.put(partition, OffsetSpec.latest());
            }
            var end = admin.listOffsets(ends).all().get(30, TimeUnit.SECONDS);
            return end.entrySet().stream().allMatch(
                    e -> committed.get(e.getKey()) != null && committed.get(e.getKey()).offset() >= e.getValue().offset());
        }
    }

    /** Produces records until {@code total} have been sent, then flushes. */
    void produceUntil(int total) throws Exception {
        while (sent.size() < total) {
            sent.add(next(sent.size()));
        }
        producer.flush();
    }

    List<Sent> sent() {
        return sent;
    }

    /** What taking the workload's locks in etcd cost, for the test's log. */
    String lockCost() {
        return locks.cost();
    }

    /** The model's fence of {@code key} as {@code token.seq}. */
    String fence(String key) {
        return model.fence(key);
    }

    static String key(int index) {
        return "key-" + index;
    }

    /** How many records reach an output topic (all but winning markers). */
    long expectedOutputs() {
        return sent.stream().filter(s -> s.expected().kind() != Kind.MARKER_ACCEPTED).count();
    }

    /** The key's current lock holder; takes the lock first when the key has none yet. */
    private RealLocks.Acquisition holder(int k) throws Exception {
        List<RealLocks.Acquisition> history = held.get(k);
        if (history.isEmpty()) {
            history.add(locks.acquire(key(k)));
        }
        return history.get(history.size() - 1);
    }

    private Sent next(int id) throws Exception {
        int k = random.nextInt(keys);
        String key = key(k);
        RecordHeaders headers = new RecordHeaders();
        headers.add(ID, bytes(Integer.toString(id)));
        byte[] value = bytes(String.format("value-%08d-%s", id, "x".repeat(80)));
        int roll = random.nextInt(100);
        RejectionReason invalid = null;
        long t = 0;
        long lease = 0;
        Long s;
        byte[] recordKey = bytes(key);
        List<RealLocks.Acquisition> history = held.get(k);
        if (roll < 5) {
            invalid = badRecord(headers);
            recordKey = invalid == RejectionReason.MISSING_KEY ? null : recordKey;
            s = null;
        } else if (roll < 13) {
            RealLocks.Acquisition taken = locks.acquire(key);
            history.add(taken);
            seq[k] = 1;
            t = taken.token();
            lease = taken.lease();
            s = 1L;
        } else if (roll < 25 && history.size() > 1) {
            RealLocks.Acquisition earlier = history.get(random.nextInt(history.size() - 1));
            t = earlier.token();
            lease = earlier.lease();
            s = 1L + random.nextInt(5);
        } else if (roll >= 97) {
            RealLocks.Acquisition forged = forged(k);
            invalid = forged.token() == Long.MAX_VALUE ? RejectionReason.FUTURE_TOKEN : RejectionReason.LOCK_NOT_HELD;
            t = forged.token();
            lease = forged.lease();
            s = seq[k] + 1;
        } else {
            RealLocks.Acquisition holder = holder(k);
            t = holder.token();
            lease = holder.lease();
            if (roll < 29 && seq[k] > 0) {
                s = seq[k];
            } else {
                s = ++seq[k];
                if (roll < 32) {
                    value = null;
                }
            }
        }
        if (t != 0) {
            headers.add(FenceHeaders.TOKEN, bytes(Long.toString(t)));
            headers.add(FenceHeaders.SEQ, bytes(Long.toString(s)));
            headers.add(FenceHeaders.LEASE, bytes(Long.toString(lease)));
        }
        Outcome expected = model.apply(recordKey == null ? "" : key, invalid, t, s, false, value != null);
        producer.send(new ProducerRecord<>(FenceTopics.INPUT, null, recordKey, value, headers));
        return new Sent(recordKey == null ? null : key, t, s, lease, expected);
    }

    /**
     * A token that would raise key {@code k}'s fence but that no lock of the key issued to its
     * lease: the latest drawn acquisition of another key, when its token is above this key's
     * current one and its lease is not the one that held this key's lock at that revision;
     * otherwise {@link Long#MAX_VALUE}, a revision etcd has not reached.
     */
    private RealLocks.Acquisition forged(int k) {
        List<RealLocks.Acquisition> own = held.get(k);
        RealLocks.Acquisition holder = own.isEmpty() ? null : own.get(own.size() - 1);
        List<RealLocks.Acquisition> other = held.get(random.nextInt(keys));
        if (random.nextBoolean() && !other.isEmpty()) {
            RealLocks.Acquisition borrowed = other.get(other.size() - 1);
            if (!borrowed.resource().equals(key(k)) && (holder == null || borrowed.token() > holder.token())
                    && locks.holderAt(key(k), borrowed.token()) != borrowed.lease()) {
                return borrowed;
            }
        }
        return new RealLocks.Acquisition(key(k), Long.MAX_VALUE, holder == null ? 1 : holder.lease());
    }

    private RejectionReason badRecord(RecordHeaders headers) {
        switch (random.nextInt(5)) {
            case 0 :
                headers.add(FenceHeaders.TOKEN, bytes("5"));
                return RejectionReason.MISSING_KEY;
            case 1 :
                return RejectionReason.MISSING_TOKEN;
            case 2 :
                headers.add(FenceHeaders.TOKEN, bytes("99999999999999999999"));
                return RejectionReason.MALFORMED_TOKEN;
            case 3 :
                headers.add(FenceHeaders.TOKEN, bytes("5"));
                headers.add(FenceHeaders.SEQ, bytes("-1"));
                return RejectionReason.MALFORMED_SEQ;
            default :
                headers.add(FenceHeaders.TOKEN, bytes("5"));
                headers.add(FenceHeaders.OP, bytes("MERGE"));
                return RejectionReason.UNKNOWN_OP;
        }
    }

    @Override
    public void close() {
        producer.close();
        locks.close();
    }

    /** What the enforcer committed to the accepted and rejected topics, read from the beginning. */
    static final class Outputs implements AutoCloseable {
        private final KafkaConsumer<byte[], byte[]> consumer;
        private final Map<Integer, List<Outcome>> seen = new HashMap<>();
        private final Map<String, List<Integer>> acceptedByKey = new HashMap<>();

        Outputs(String bootstrap, int partitions) {
            Properties props = new Properties();
            props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5_000);
            consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            List<TopicPartition> assigned = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                assigned.add(new TopicPartition(FenceTopics.ACCEPTED, p));
                assigned.add(new TopicPartition(FenceTopics.REJECTED, p));
            }
            consumer.assign(assigned);
            consumer.seekToBeginning(assigned);
        }

        /** Reads what is there; returns how many distinct input records have been seen. */
        int poll() {
            for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                int id = Integer.parseInt(text(record, ID));
                Outcome outcome = record.topic().equals(FenceTopics.ACCEPTED)
                        ? Outcome.accepted()
                        : Outcome.rejected(RejectionReason.valueOf(text(record, FenceHeaders.REJECTED_REASON)));
                seen.computeIfAbsent(id, i -> new ArrayList<>()).add(outcome);
                if (outcome.kind() == Kind.ACCEPTED) {
                    acceptedByKey.computeIfAbsent(new String(record.key(), StandardCharsets.UTF_8), k -> new ArrayList<>())
                            .add(id);
                }
            }
            return seen.size();
        }

        /** Keeps reading for {@code duration}, so that anything committed twice shows up too. */
        void settle(Duration duration) {
            long until = System.nanoTime() + duration.toNanos();
            while (System.nanoTime() < until) {
                poll();
            }
        }

        /** Every input record decided exactly once, as the model decides it, and accepted in the model's order per key. */
        void assertMatches(List<Sent> sent) {
            List<Integer> decidedTwice = new ArrayList<>();
            List<Integer> wrong = new ArrayList<>();
            Map<String, List<Integer>> expectedAcceptedByKey = new HashMap<>();
            for (int id = 0; id < sent.size(); id++) {
                Outcome expected = sent.get(id).expected();
                List<Outcome> actual = seen.getOrDefault(id, List.of());
                if (actual.size() > 1) {
                    decidedTwice.add(id);
                } else if (expected.kind() == Kind.MARKER_ACCEPTED ? !actual.isEmpty() : !actual.equals(List.of(expected))) {
                    wrong.add(id);
                }
                if (expected.kind() == Kind.ACCEPTED) {
                    expectedAcceptedByKey.computeIfAbsent(sent.get(id).key(), k -> new ArrayList<>()).add(id);
                }
            }
            assertThat(decidedTwice).as("input records on the output topics more than once").isEmpty();
            assertThat(wrong).as("input records missing or decided unlike the reference model (first: %s)",
                    wrong.isEmpty() ? "" : sent.get(wrong.get(0)) + " -> " + seen.get(wrong.get(0))).isEmpty();
            assertThat(acceptedByKey).as("accepted order per key").isEqualTo(expectedAcceptedByKey);
        }

        /** How often input records appeared more than once on the output topics under at_least_once. */
        record Duplicates(int acceptedTwice, int rejectedTwice, int onBothTopics) {
        }

        /**
         * What at_least_once promises after crashes: every record the model accepts is on the
         * accepted topic, no record it rejects is, every rejected copy carries the model's reason,
         * winning markers are on neither topic, and the first copies of each key's accepts keep the
         * model's order. A record may appear more than once.
         */
        Duplicates assertMatchesAtLeastOnce(List<Sent> sent) {
            List<Integer> missing = new ArrayList<>();
            List<Integer> acceptedButRejectedByModel = new ArrayList<>();
            List<Integer> wrongReason = new ArrayList<>();
            List<Integer> markersForwarded = new ArrayList<>();
            Map<String, List<Integer>> expectedAcceptedByKey = new HashMap<>();
            int acceptedTwice = 0;
            int rejectedTwice = 0;
            int both = 0;
            for (int id = 0; id < sent.size(); id++) {
                Outcome expected = sent.get(id).expected();
                List<Outcome> actual = seen.getOrDefault(id, List.of());
                long acceptedCopies = actual.stream().filter(o -> o.kind() == Kind.ACCEPTED).count();
                long rejectedCopies = actual.size() - acceptedCopies;
                acceptedTwice += acceptedCopies > 1 ? 1 : 0;
                rejectedTwice += rejectedCopies > 1 ? 1 : 0;
                both += acceptedCopies > 0 && rejectedCopies > 0 ? 1 : 0;
                switch (expected.kind()) {
                    case ACCEPTED -> {
                        if (acceptedCopies == 0) {
                            missing.add(id);
                        }
                        expectedAcceptedByKey.computeIfAbsent(sent.get(id).key(), k -> new ArrayList<>()).add(id);
                    }
                    case MARKER_ACCEPTED -> {
                        if (!actual.isEmpty()) {
                            markersForwarded.add(id);
                        }
                    }
                    default -> {
                        if (acceptedCopies > 0) {
                            acceptedButRejectedByModel.add(id);
                        }
                        if (rejectedCopies == 0
                                || actual.stream().anyMatch(o -> o.kind() == Kind.REJECTED && o.reason() != expected.reason())) {
                            wrongReason.add(id);
                        }
                    }
                }
            }
            Map<String, List<Integer>> firstAcceptedByKey = new HashMap<>();
            acceptedByKey.forEach((key, ids) -> firstAcceptedByKey.put(key, List.copyOf(new LinkedHashSet<>(ids))));
            assertThat(missing).as(
                    "records the model accepts that are missing from the accepted topic (%d; id, record -> outcomes seen): %s",
                    missing.size(), describe(sent, missing)).isEmpty();
            assertThat(acceptedButRejectedByModel).as("records the model rejects that are on the accepted topic: %s",
                    describe(sent, acceptedButRejectedByModel)).isEmpty();
            assertThat(wrongReason).as("rejected records missing from the rejected topic or with another reason: %s",
                    describe(sent, wrongReason)).isEmpty();
            assertThat(markersForwarded).as("winning markers on an output topic").isEmpty();
            assertThat(firstAcceptedByKey).as("first copies of the accepted records, in order per key")
                    .isEqualTo(expectedAcceptedByKey);
            return new Duplicates(acceptedTwice, rejectedTwice, both);
        }

        private String describe(List<Sent> sent, List<Integer> ids) {
            StringBuilder text = new StringBuilder();
            ids.stream().limit(10).forEach(
                    id -> text.append(String.format("%n  %d %s -> %s", id, sent.get(id), seen.getOrDefault(id, List.of()))));
            return ids.size() > 10 ? text + String.format("%n  ... and %d more", ids.size() - 10) : text.toString();
        }

        @Override
        public void close() {
            consumer.close();
        }
    }

    private static String text(ConsumerRecord<?, ?> record, String header) {
        return new String(record.headers().lastHeader(header).value(), StandardCharsets.UTF_8);
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
