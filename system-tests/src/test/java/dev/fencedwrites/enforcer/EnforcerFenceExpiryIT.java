package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.etcd.LockKeys;
import dev.fencedwrites.services.EnforcerProcess;
import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.Service;
import dev.fencedwrites.testing.EtcdNodeExtension;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.PutOption;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Bytes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fence expiry on real services (docs/concepts/fence-expiry.md): 100,000 keys written once, each under a lock of one lease;
 * a live holder of another key; the lease revoked, so every tenure but the live one ends. The enforcer is killed in the
 * middle of the scan and restarted; it then has dropped every expired fence (the changelog gets a tombstone for each),
 * rejects a stale write to an expired key STALE_TOKEN at the floor, accepts the live holder's first write, and after a
 * restart from an empty state directory (a restore from the changelog) with expiry turned off still rejects the stale
 * write: a floor once raised stays in force. Needs real etcd (the oldest live lock) and a real broker (committed offsets,
 * the changelog).
 */
@Timeout(value = 8, unit = TimeUnit.MINUTES)
@ExtendWith(SharedKafkaBroker.class)
class EnforcerFenceExpiryIT {
    private static final int KEYS = 100_000;
    private static final String PREFIX = "expiry/locks/";
    private static final String APPLICATION = "ex-enforcer";
    private static final String CHANGELOG = APPLICATION + "-fences-changelog";
    private static final Duration WITHIN = Duration.ofSeconds(180);
    private static final Pattern ANY_PARTITION_FLOOR = Pattern.compile("fence_enforcer_expiry_floor\\{[^}]*} ([0-9.E]+)");

    @RegisterExtension
    static final EtcdNodeExtension etcdNode = new EtcdNodeExtension();
    @TempDir
    static Path dir;
    static Service kafka;
    static Path log4j2;
    static Client etcd;
    static Service enforcer;

    @BeforeAll
    static void start(SharedKafkaBroker.Broker broker) throws Exception {
        log4j2 = broker.log4j2();
        kafka = broker.service();
        etcd = Client.builder().endpoints(etcdNode.endpoint()).build();
        enforcer = startEnforcer("first", true);
    }

    @AfterAll
    static void stop() {
        if (enforcer != null) {
            enforcer.close();
        }
        if (etcd != null) {
            etcd.close();
        }
    }

    @Test
    void fencesOfEndedTenuresExpireTheirStaleWritesStayRejectedAndARestartRestoresTheFloor() throws Exception {
        long lease = etcd.getLeaseClient().grant(600).get(30, TimeUnit.SECONDS).getID();
        long[] tokens = lockAll(lease);
        long written = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            for (int i = 0; i < KEYS; i++) {
                producer.send(new ProducerRecord<>("ex-in", null, utf8(key(i)), utf8("v"), headers(tokens[i], 1, lease)));
            }
            producer.flush();
        }
        await().atMost(WITHIN).pollInterval(Duration.ofSeconds(1))
                .until(() -> metric("fence_enforcer_records_accepted_total") >= KEYS);
        System.out.printf("%d keys accepted %d ms after the first write%n", KEYS,
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - written));
        assertThat(metric("fence_enforcer_expiry_fences_expired_total")).as("every tenure is live: nothing expires").isZero();
        assertThat(fenceStoreOptions("first")).as("each task's fence store under expiry: 512 KiB memtables, full compactions "
                + "once newer runs reach 25 % of the oldest").isNotEmpty().allSatisfy(options -> assertThat(options)
                        .contains("write_buffer_size=524288").contains("level0_file_num_compaction_trigger=2")
                        .contains("max_size_amplification_percent=25"));
        long storeBefore = storeBytes();

        long live = etcd.getLeaseClient().grant(600).get(30, TimeUnit.SECONDS).getID();
        long liveToken = put(LockKeys.key(PREFIX, utf8("live-key"), live), live);
        etcd.getLeaseClient().revoke(lease).get(30, TimeUnit.SECONDS);
        long sizeBefore = changelogBytes();

        // A crash in the middle of the scan (SIGKILL: the open transaction with its tombstones is aborted), then a restart
        // on the same state directory (exactly_once_v2 wipes it after a crash and restores from the changelog): the floor
        // comes back, and the restarted instance scans again and drops the rest.
        await().atMost(WITHIN).pollInterval(Duration.ofMillis(50))
                .until(() -> metric("fence_enforcer_expiry_fences_expired_total") >= KEYS / 10);
        double beforeCrash = metric("fence_enforcer_expiry_fences_expired_total");
        enforcer.process().signal("KILL");
        assertThat(enforcer.process().waitFor(Duration.ofSeconds(30))).as("exit status after SIGKILL").isNotEqualTo(-1);
        assertThat(beforeCrash).as("fences dropped when the enforcer was killed: in the middle of the scan").isLessThan(KEYS);
        enforcer = startEnforcer("first", true);
        await().atMost(WITHIN).pollInterval(Duration.ofSeconds(1)).until(() -> lastRecordIsATombstone() == KEYS);
        double afterRestart = metric("fence_enforcer_expiry_fences_expired_total");
        assertThat(afterRestart).as("fences the restarted instance dropped (the rest of the scan)").isPositive();
        assertThat(floors()).as("each partition's floor after the restore: the live lock's create revision")
                .containsOnly((double) liveToken);
        // RocksDB reclaims the dropped fences' bytes (with Kafka Streams' defaults they stay in a 16 MiB memtable).
        await().atMost(WITHIN).pollInterval(Duration.ofSeconds(1)).until(() -> storeBytes() < storeBefore / 4);
        System.out.printf("fence expiry: %.0f fences dropped before the SIGKILL, %.0f by the restarted instance; changelog "
                + "%d bytes before expiry, %d after its tombstones (compaction reclaims both); fence store %d bytes before "
                + "expiry, %d after%n", beforeCrash, afterRestart, sizeBefore, changelogBytes(), storeBefore, storeBytes());

        assertThat(decide(key(7), tokens[7], 2, lease)).isEqualTo("STALE_TOKEN at " + liveToken + ", floor " + liveToken);
        assertThat(decide("live-key", liveToken, 1, live)).isEqualTo("accepted");
        assertThat(Http.get(enforcer.address() + "/fences/" + key(8)).body()).contains("\"floor\":" + liveToken);

        // A restart from an empty state directory restores the store from the changelog: the floor comes back with it. With
        // expiry turned off, the floor still applies (the fences below it are gone); it is only never raised again.
        enforcer.close();
        enforcer = startEnforcer("restarted", false);
        assertThat(fenceStoreOptions("restarted")).as("each task's fence store without expiry: Kafka Streams' defaults")
                .isNotEmpty().allSatisfy(options -> assertThat(options).contains("write_buffer_size=16777216"));
        assertThat(decide(key(9), tokens[9], 2, lease)).isEqualTo("STALE_TOKEN at " + liveToken + ", floor " + liveToken);
        assertThat(decide("live-key", liveToken, 2, live)).isEqualTo("accepted");
    }

    private static Service startEnforcer(String name, boolean expiry) throws Exception {
        // 500 keys per 100 ms step: each partition's 50,000 fences take about 10 s to scan, long enough to crash in.
        Map<String, String> settings = new HashMap<>(Map.of("input.topic", "ex-in", "accepted.topic", "ex-ok",
                "rejected.topic", "ex-dlq", "application.id", APPLICATION, "topics.create.enable", "true",
                "topics.create.partitions", "2", EtcdSettings.ENDPOINTS, etcdNode.endpoint(), EtcdSettings.LOCK_PREFIX, PREFIX,
                "fence.expiry.enable", Boolean.toString(expiry), "fence.expiry.interval.ms", "1000"));
        settings.put("fence.expiry.batch.size", "500");
        // A killed instance's partitions go to its restarted self after 6 s, not the default 45 s.
        settings.put("streams.session.timeout.ms", "6000");
        settings.put("streams.heartbeat.interval.ms", "1500");
        return EnforcerProcess.start(dir.resolve(name), log4j2, kafka.address(), settings);
    }

    /** Puts each key's lock under {@code lease}, 128 to an etcd transaction (one revision each); each key's token. */
    private static long[] lockAll(long lease) throws Exception {
        long[] tokens = new long[KEYS];
        PutOption option = PutOption.builder().withLeaseId(lease).build();
        for (int from = 0; from < KEYS; from += 128) {
            List<Op> puts = new ArrayList<>();
            int to = Math.min(KEYS, from + 128);
            for (int i = from; i < to; i++) {
                puts.add(Op.put(bytes(LockKeys.key(PREFIX, utf8(key(i)), lease)), ByteSequence.EMPTY, option));
            }
            long revision = etcd.getKVClient().txn().Then(puts.toArray(new Op[0])).commit().get(30, TimeUnit.SECONDS)
                    .getHeader().getRevision();
            for (int i = from; i < to; i++) {
                tokens[i] = revision;
            }
        }
        return tokens;
    }

    private static long put(String name, long lease) throws Exception {
        return etcd.getKVClient().put(bytes(name), ByteSequence.EMPTY, PutOption.builder().withLeaseId(lease).build())
                .get(30, TimeUnit.SECONDS).getHeader().getRevision();
    }

    /**
     * Sends one write and waits for its outcome: "accepted", or the rejection's reason and the fence it met, and the floor
     * it was below when it names one.
     */
    private static String decide(String key, long token, long seq, long lease) throws Exception {
        long offset;
        int partition;
        Map<TopicPartition, Long> rejectedFrom = ends("ex-dlq");
        Map<TopicPartition, Long> acceptedFrom = ends("ex-ok");
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            var sent = producer.send(new ProducerRecord<>("ex-in", null, utf8(key), utf8("late"), headers(token, seq, lease)))
                    .get(30, TimeUnit.SECONDS);
            offset = sent.offset();
            partition = sent.partition();
        }
        String[] outcome = new String[1];
        await().atMost(WITHIN).pollInterval(Duration.ofSeconds(1)).until(() -> {
            for (ConsumerRecord<byte[], byte[]> record : read("ex-dlq", rejectedFrom)) {
                if (Long.toString(offset).equals(text(record, FenceHeaders.SOURCE_OFFSET))
                        && Integer.toString(partition).equals(text(record, FenceHeaders.SOURCE_PARTITION))) {
                    outcome[0] = text(record, FenceHeaders.REJECTED_REASON) + " at "
                            + text(record, FenceHeaders.REJECTED_HIGHEST) + (text(record, FenceHeaders.REJECTED_FLOOR) == null
                                    ? ""
                                    : ", floor " + text(record, FenceHeaders.REJECTED_FLOOR));
                    return true;
                }
            }
            for (ConsumerRecord<byte[], byte[]> record : read("ex-ok", acceptedFrom)) {
                if (key.equals(new String(record.key(), StandardCharsets.UTF_8))
                        && record.headers().lastHeader(FenceHeaders.SEQ) != null
                        && Long.toString(seq).equals(text(record, FenceHeaders.SEQ))
                        && Long.toString(token).equals(text(record, FenceHeaders.TOKEN))) {
                    outcome[0] = "accepted";
                    return true;
                }
            }
            return false;
        });
        return outcome[0];
    }

    /** The keys whose last record in the fence store's changelog is a tombstone. */
    private static long lastRecordIsATombstone() {
        Map<Bytes, Boolean> tombstone = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> record : readAll(CHANGELOG)) {
            tombstone.put(Bytes.wrap(record.key()), record.value() == null);
        }
        return tombstone.values().stream().filter(Boolean::booleanValue).count();
    }

    /** The changelog's bytes on the broker's disk. */
    private static long changelogBytes() throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.address()))) {
            long bytes = 0;
            for (Map<String, LogDirDescription> broker : admin.describeLogDirs(admin.describeCluster().nodes()
                    .get(30, TimeUnit.SECONDS).stream().map(node -> node.id()).toList()).allDescriptions()
                    .get(30, TimeUnit.SECONDS).values()) {
                for (LogDirDescription logDir : broker.values()) {
                    bytes += logDir.replicaInfos().entrySet().stream().filter(e -> e.getKey().topic().equals(CHANGELOG))
                            .mapToLong(e -> e.getValue().size()).sum();
                }
            }
            return bytes;
        }
    }

    private static double metric(String name) throws Exception {
        Matcher found = Pattern.compile("(?m)^" + name + "(\\{[^}]*})? ([0-9.E+-]+)$")
                .matcher(Http.get(enforcer.address() + "/metrics").body());
        double sum = 0;
        while (found.find()) {
            sum += Double.parseDouble(found.group(2));
        }
        return sum;
    }

    /** The fence store's bytes in RocksDB: its SST files and memtables, summed over the instance's tasks. */
    private static long storeBytes() throws Exception {
        String metrics = Http.get(enforcer.address() + "/metrics").body();
        assertThat(metrics).as("the enforcer's RocksDB metrics").contains("kafka_stream_state_total_sst_files_size{")
                .contains("kafka_stream_state_size_all_mem_tables{");
        return (long) (metric("kafka_stream_state_total_sst_files_size") + metric("kafka_stream_state_size_all_mem_tables"));
    }

    /**
     * The default column family's section of the newest RocksDB OPTIONS file of each task's fence store under the instance
     * {@code name}'s directory (Kafka Streams' {@code offsets} column family has options of its own).
     */
    private static List<String> fenceStoreOptions(String name) throws IOException {
        Map<Path, Path> newest = new HashMap<>();
        try (Stream<Path> files = Files.walk(dir.resolve(name))) {
            files.filter(f -> f.getFileName().toString().startsWith("OPTIONS-")
                    && f.getParent().getFileName().toString().equals(FenceEnforcerTopology.STORE))
                    .forEach(f -> newest.merge(f.getParent(), f, (a, b) -> a.toString().compareTo(b.toString()) > 0 ? a : b));
        }
        List<String> options = new ArrayList<>();
        for (Path file : newest.values()) {
            String text = Files.readString(file);
            int from = text.indexOf("[CFOptions \"default\"]");
            assertThat(from).as("the default column family's section in %s", file).isNotNegative();
            int to = text.indexOf("\n[", from + 1);
            options.add(text.substring(from, to < 0 ? text.length() : to));
        }
        return options;
    }

    private static List<Double> floors() throws Exception {
        Matcher found = ANY_PARTITION_FLOOR.matcher(Http.get(enforcer.address() + "/metrics").body());
        List<Double> floors = new ArrayList<>();
        while (found.find()) {
            floors.add(Double.parseDouble(found.group(1)));
        }
        return floors;
    }

    private static List<ConsumerRecord<byte[], byte[]>> readAll(String topic) {
        return read(topic, Map.of());
    }

    /** Each partition's end offset now. */
    private static Map<TopicPartition, Long> ends(String topic) {
        try (KafkaConsumer<byte[], byte[]> consumer = consumer()) {
            return consumer.endOffsets(consumer.partitionsFor(topic).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList());
        }
    }

    /** The committed records of {@code topic} from {@code from} (a partition not named: from its beginning) to its end. */
    private static List<ConsumerRecord<byte[], byte[]>> read(String topic, Map<TopicPartition, Long> from) {
        List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = consumer()) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            from.forEach(consumer::seek);
            Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (partitions.stream().anyMatch(p -> consumer.position(p) < ends.get(p)) && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(records::add);
            }
        }
        return records;
    }

    private static KafkaConsumer<byte[], byte[]> consumer() {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.address());
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        return new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    private static KafkaProducer<byte[], byte[]> producer() {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.address());
        props.put(ProducerConfig.LINGER_MS_CONFIG, 20);
        return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }

    private static RecordHeaders headers(long token, long seq, long lease) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, utf8(Long.toString(token)));
        headers.add(FenceHeaders.SEQ, utf8(Long.toString(seq)));
        headers.add(FenceHeaders.LEASE, utf8(Long.toString(lease)));
        return headers;
    }

    private static String key(int i) {
        return "expiring-" + i;
    }

    private static String text(ConsumerRecord<byte[], byte[]> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? null : FenceHeaders.decode(header.value());
    }

    private static ByteSequence bytes(String text) {
        return ByteSequence.from(text, StandardCharsets.UTF_8);
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
