package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.enforcer.internal.FenceSerde;
import dev.fencedwrites.enforcer.internal.StoredFence;
import dev.fencedwrites.testing.KafkaBrokerExtension;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Needs a real broker: under at_least_once nothing fences an instance that lost its task, and one that was paused (or
 * parked waiting for etcd) past max.poll.interval.ms still flushes its older fences to the changelog after the new owner's
 * newer ones. Here that late flush is a record placed at the end of the real changelog topic; the next restore, from the
 * local checkpoint or from nothing, is Kafka Streams' own.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class ZombieChangelogIT {
    private static final byte[] KEY = "acct".getBytes(StandardCharsets.UTF_8);

    @RegisterExtension
    static final KafkaBrokerExtension kafka = new KafkaBrokerExtension();

    /** A zombie's older fence at the end of the changelog does not lower the restored fence: the old holder stays fenced. */
    @ParameterizedTest(name = "local state kept: {0}")
    @ValueSource(booleans = {true, false})
    void anOlderFenceFlushedAfterTheNewOnesDoesNotLowerTheRestoredFence(boolean keepLocalState) throws Exception {
        String app = "zombie-" + (keepLocalState ? "local" : "fresh");
        kafka.admin().createTopics(List.of(new NewTopic(app + "-in", 1, (short) 1), new NewTopic(app + "-ok", 1, (short) 1),
                new NewTopic(app + "-dlq", 1, (short) 1))).all().get(1, TimeUnit.MINUTES);
        Path state = Files.createTempDirectory(app);
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            try (KafkaStreams enforcer = start(app, state)) {
                producer.send(write(app, 9, 1)).get(30, TimeUnit.SECONDS);
                assertThat(outcomes(app + "-ok", 1)).containsExactly("9.1");
                enforcer.close(Duration.ofSeconds(30));
            }
            byte[] older = new FenceSerde().serializer().serialize(null, StoredFence.of(new Fence(5, 1)));
            producer.send(new ProducerRecord<>(FenceEnforcerTopology.changelogTopic(app), 0, KEY, older)).get(30,
                    TimeUnit.SECONDS);

            try (KafkaStreams enforcer = start(app, keepLocalState ? state : Files.createTempDirectory(app))) {
                producer.send(write(app, 5, 2)).get(30, TimeUnit.SECONDS);
                producer.send(write(app, 9, 2)).get(30, TimeUnit.SECONDS);

                assertThat(outcomes(app + "-dlq", 1)).containsExactly("STALE_TOKEN");
                assertThat(outcomes(app + "-ok", 2)).containsExactly("9.1", "9.2");
            }
        }
    }

    /**
     * The changelog's cleaner keeps only a key's last record: a restore that skipped a zombie's older fence writes the
     * higher one again, so the changelog's last record of the key is the higher fence without any new input.
     */
    @Test
    void aRestoreThatSkippedAnOlderFenceWritesTheHigherOneAgain() throws Exception {
        String app = "zombie-rewrite";
        createTopics(app);
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            try (KafkaStreams enforcer = start(app, Files.createTempDirectory(app))) {
                producer.send(write(app, KEY, 9, 1)).get(30, TimeUnit.SECONDS);
                assertThat(outcomes(app + "-ok", 1)).containsExactly("9.1");
                enforcer.close(Duration.ofSeconds(30));
            }
            ConfigResource changelog = new ConfigResource(ConfigResource.Type.TOPIC, FenceEnforcerTopology.changelogTopic(app));
            Config made = kafka.admin().describeConfigs(List.of(changelog)).all().get(1, TimeUnit.MINUTES).get(changelog);
            assertThat(made.get(TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG).value()).isEqualTo("LogAppendTime");
            assertThat(made.get(TopicConfig.MIN_COMPACTION_LAG_MS_CONFIG).value()).isEqualTo("3600000");
            producer.send(olderFence(app)).get(30, TimeUnit.SECONDS);
            assertThat(lastChangelogFence(app)).isEqualTo(new Fence(5, 1));

            try (KafkaStreams enforcer = start(app, Files.createTempDirectory(app))) {
                await().atMost(Duration.ofMinutes(1)).untilAsserted(() -> assertThat(lastChangelogFence(app))
                        .isEqualTo(new Fence(9, 1)));
            }
        }
    }

    /**
     * A zombie's older fence written while the new owner runs: the owner finds it by counting the changelog's offsets (at
     * its next commit when it writes, by the end offset when idle) and writes its fence again.
     */
    @ParameterizedTest(name = "owner busy: {0}")
    @ValueSource(booleans = {true, false})
    void anOlderFenceWrittenWhileTheOwnerRunsIsWrittenOver(boolean busy) throws Exception {
        String app = "zombie-running-" + (busy ? "busy" : "idle");
        createTopics(app);
        try (KafkaProducer<byte[], byte[]> producer = producer();
                KafkaStreams enforcer = start(app, Files.createTempDirectory(app))) {
            producer.send(write(app, KEY, 9, 1)).get(30, TimeUnit.SECONDS);
            assertThat(outcomes(app + "-ok", 1)).containsExactly("9.1");
            await().atMost(Duration.ofMinutes(1)).untilAsserted(() -> assertThat(lastChangelogFence(app))
                    .isEqualTo(new Fence(9, 1)));

            producer.send(olderFence(app)).get(30, TimeUnit.SECONDS);
            if (busy) {
                producer.send(write(app, "other".getBytes(StandardCharsets.UTF_8), 3, 1)).get(30, TimeUnit.SECONDS);
            }

            await().atMost(Duration.ofMinutes(1)).untilAsserted(() -> assertThat(lastChangelogFence(app))
                    .isEqualTo(new Fence(9, 1)));
            assertThat(outcomes(app + "-ok", busy ? 2 : 1)).hasSize(busy ? 2 : 1);
        }
    }

    /**
     * The last commit before a stop finds a zombie's record behind the owner's own writes and moves the checkpoint past it:
     * the restart from that checkpoint never restores it, yet the owner still writes its fence over it (the ranges to read
     * back are kept in the task directory). No cache and no commit before the stop, so the stop's commit is the one that
     * finds it.
     */
    @Test
    void aZombieRecordFoundByTheCommitBeforeAStopIsWrittenOverAfterTheRestart() throws Exception {
        String app = "zombie-stop";
        createTopics(app);
        Path state = Files.createTempDirectory(app);
        Map<String, String> uncached = Map.of("streams.statestore.cache.max.bytes", "0", "streams.commit.interval.ms", "600000");
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            try (KafkaStreams enforcer = start(app, state, uncached)) {
                producer.send(write(app, KEY, 9, 1)).get(30, TimeUnit.SECONDS);
                assertThat(outcomes(app + "-ok", 1)).containsExactly("9.1");
                producer.send(olderFence(app)).get(30, TimeUnit.SECONDS);
                producer.send(write(app, "other".getBytes(StandardCharsets.UTF_8), 3, 1)).get(30, TimeUnit.SECONDS);
                assertThat(outcomes(app + "-ok", 2)).hasSize(2);
                enforcer.close(Duration.ofSeconds(30));
            }
            assertThat(lastChangelogFence(app)).isEqualTo(new Fence(5, 1));

            try (KafkaStreams enforcer = start(app, state, uncached)) {
                await().atMost(Duration.ofMinutes(1)).untilAsserted(() -> assertThat(lastChangelogFence(app))
                        .isEqualTo(new Fence(9, 1)));
            }
        }
    }

    /**
     * Kafka Streams never changes an existing internal topic's configs: an at_least_once start on a changelog made without
     * the compaction lag (before, or under exactly_once_v2) is refused, naming the configs; once set, it starts, and an
     * exactly_once_v2 start on that changelog is refused (instances of one application.id share one guarantee).
     */
    @Test
    void aChangelogSetUpForTheOtherProcessingGuaranteeIsRefused() throws Exception {
        String app = "zombie-lag";
        createTopics(app);
        String changelog = FenceEnforcerTopology.changelogTopic(app);
        kafka.admin().createTopics(List.of(new NewTopic(changelog, 1, (short) 1)
                .configs(Map.of(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT))))
                .all().get(1, TimeUnit.MINUTES);
        FenceEnforcerConfig config = config(app, Files.createTempDirectory(app));

        assertThatThrownBy(() -> TopicCheck.prepare(config, Duration.ofSeconds(30))).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("processing.guarantee=at_least_once needs the fence store's changelog '" + changelog)
                .hasMessageContaining("message.timestamp.type=CreateTime and min.compaction.lag.ms=0")
                .hasMessageContaining("kafka-configs.sh --bootstrap-server " + kafka.bootstrapServers() + " --alter")
                .hasMessageContaining("--add-config message.timestamp.type=LogAppendTime,min.compaction.lag.ms=3600000");

        ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, changelog);
        kafka.admin().incrementalAlterConfigs(Map.of(topic, List.of(
                new AlterConfigOp(new ConfigEntry(TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG, "LogAppendTime"),
                        AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry(TopicConfig.MIN_COMPACTION_LAG_MS_CONFIG, "3600000"),
                        AlterConfigOp.OpType.SET))))
                .all().get(1, TimeUnit.MINUTES);
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(TopicCheck.prepare(config,
                Duration.ofSeconds(30)).inputPartitions()).isEqualTo(1));

        // An exactly_once_v2 instance beside at_least_once ones is refused: its transactions would not fence them.
        Map<String, String> exactlyOnce = Map.of("processing.guarantee", StreamsConfig.EXACTLY_ONCE_V2);
        assertThatThrownBy(() -> TopicCheck.prepare(config(app, Files.createTempDirectory(app), exactlyOnce),
                Duration.ofSeconds(30))).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("processing.guarantee=exactly_once_v2 on the fence store's changelog '" + changelog)
                .hasMessageContaining("every instance of application.id " + app + " must use the same processing.guarantee")
                .hasMessageContaining("--delete-config message.timestamp.type,min.compaction.lag.ms");
    }

    private static void createTopics(String app) throws Exception {
        kafka.admin().createTopics(List.of(new NewTopic(app + "-in", 1, (short) 1), new NewTopic(app + "-ok", 1, (short) 1),
                new NewTopic(app + "-dlq", 1, (short) 1))).all().get(1, TimeUnit.MINUTES);
    }

    /** What a zombie that had accepted only up to (5, 1) flushes late: its older fence of {@link #KEY}. */
    private static ProducerRecord<byte[], byte[]> olderFence(String app) {
        byte[] older = new FenceSerde().serializer().serialize(null, StoredFence.of(new Fence(5, 1)));
        return new ProducerRecord<>(FenceEnforcerTopology.changelogTopic(app), 0, KEY, older);
    }

    /** The fence in the changelog's last record of {@link #KEY}: what a restore from nothing ends at once cleaned. */
    private static Fence lastChangelogFence(String app) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        TopicPartition partition = new TopicPartition(FenceEnforcerTopology.changelogTopic(app), 0);
        byte[] last = null;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            long end = consumer.endOffsets(List.of(partition)).get(partition);
            while (consumer.position(partition) < end) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    if (Arrays.equals(record.key(), KEY)) {
                        last = record.value();
                    }
                }
            }
        }
        return last == null ? null : new FenceSerde().deserializer().deserialize(null, last).fence();
    }

    private static KafkaStreams start(String app, Path state) {
        return start(app, state, Map.of());
    }

    private static KafkaStreams start(String app, Path state, Map<String, String> more) {
        FenceEnforcerConfig config = config(app, state, more);
        KafkaStreams streams = new KafkaStreams(FenceEnforcerTopology.build(
                FenceEnforcerTopology.Settings.from(config, FenceEnforcerTopology.Limits.unbounded(1)),
                new SimpleMeterRegistry()), config.streamsProperties());
        streams.start();
        return streams;
    }

    private static FenceEnforcerConfig config(String app, Path state) {
        return config(app, state, Map.of());
    }

    private static FenceEnforcerConfig config(String app, Path state, Map<String, String> more) {
        Map<String, String> settings = new HashMap<>(Map.of("bootstrap.servers", kafka.bootstrapServers(),
                "application.id", app, "input.topic", app + "-in", "accepted.topic", app + "-ok", "rejected.topic",
                app + "-dlq", "markers.topic", "", "processing.guarantee", StreamsConfig.AT_LEAST_ONCE, "state.dir",
                state.toString(), "token.verification.enable", "false"));
        // A short session: the first run's member, which Kafka Streams does not take out of the group, is dropped soon.
        settings.putAll(Map.of("streams.commit.interval.ms", "100", "streams.session.timeout.ms", "6000",
                "streams.heartbeat.interval.ms", "1000"));
        settings.putAll(more);
        return new FenceEnforcerConfig(settings);
    }

    private static ProducerRecord<byte[], byte[]> write(String app, long token, long seq) {
        return write(app, KEY, token, seq);
    }

    private static ProducerRecord<byte[], byte[]> write(String app, byte[] key, long token, long seq) {
        ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(app + "-in", key, new byte[]{1});
        record.headers().add(FenceHeaders.TOKEN, Long.toString(token).getBytes(StandardCharsets.UTF_8))
                .add(FenceHeaders.SEQ, Long.toString(seq).getBytes(StandardCharsets.UTF_8));
        return record;
    }

    /**
     * Waits for at least {@code count} records on {@code topic}, then a little longer, and returns each as {@code token.seq}
     * (or its rejection reason).
     */
    private static List<String> outcomes(String topic, int count) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.GROUP_ID_CONFIG, topic + "-reader-" + System.nanoTime());
        List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            await().atMost(Duration.ofMinutes(2)).until(() -> {
                consumer.poll(Duration.ofMillis(200)).forEach(records::add);
                return records.size() >= count;
            });
            consumer.poll(Duration.ofSeconds(2)).forEach(records::add);
        }
        return records.stream().map(r -> r.headers().lastHeader(FenceHeaders.REJECTED_REASON) != null
                ? text(r, FenceHeaders.REJECTED_REASON)
                : text(r, FenceHeaders.TOKEN) + "." + text(r, FenceHeaders.SEQ)).toList();
    }

    private static String text(ConsumerRecord<byte[], byte[]> record, String header) {
        return new String(record.headers().lastHeader(header).value(), StandardCharsets.UTF_8);
    }

    private static KafkaProducer<byte[], byte[]> producer() {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }
}
