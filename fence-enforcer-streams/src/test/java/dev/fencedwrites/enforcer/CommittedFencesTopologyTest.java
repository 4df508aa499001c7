package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.enforcer.internal.CommittedFences;
import dev.fencedwrites.enforcer.internal.PendingFences;
import dev.fencedwrites.enforcer.internal.StoredFence;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fence processor tells {@link CommittedFences} which stored fences are not committed yet: the store holds
 * the new fence at once, the committed view only once the stream thread's commit after the write is counted. The stream
 * thread's commit count is a counter the test raises where the thread would commit.
 */
class CommittedFencesTopologyTest {
    private static final String KEY = "customer-42";
    private static final Bytes STORE_KEY = Bytes.wrap(KEY.getBytes(StandardCharsets.UTF_8));

    @TempDir
    Path stateDir;

    private final AtomicLong commitCount = new AtomicLong(100);
    private final AtomicLong pollCount = new AtomicLong(100);
    private final CommittedFences committed = new CommittedFences(
            context -> new CommittedFences.ThreadCounts(commitCount::get, pollCount::get));
    private TopologyTestDriver driver;
    private TestInputTopic<byte[], byte[]> input;

    @BeforeEach
    void startDriver() {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "committed-fences-test");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        driver = new TopologyTestDriver(FenceEnforcerTopology.build(FenceEnforcerTopology.Settings
                .of("in", "ok", "dlq", FenceEnforcerTopology.Limits.unbounded(1)).withCommittedFences(committed),
                new SimpleMeterRegistry()), props);
        input = driver.createInputTopic("in", new ByteArraySerializer(), new ByteArraySerializer());
    }

    @AfterEach
    void closeDriver() {
        if (driver != null) {
            driver.close();
        }
    }

    private void write(long token) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, FenceHeaders.encode(token));
        headers.add(FenceHeaders.SEQ, FenceHeaders.encode(1));
        input.pipeInput(new TestRecord<>(KEY.getBytes(StandardCharsets.UTF_8), new byte[]{1}, headers));
    }

    private Fence stored() {
        KeyValueStore<Bytes, StoredFence> store = driver.getKeyValueStore(FenceEnforcerTopology.STORE);
        StoredFence value = store.get(STORE_KEY);
        return value == null ? null : value.fence();
    }

    /** What {@code GET /fences/{key}} reads: the task's pending keys, the store, then the committed view. */
    private Fence answered() {
        PendingFences pending = committed.pending(0);
        return committed.committed(0, pending, STORE_KEY, stored());
    }

    @Test
    void aFirstFenceIsInTheStoreButNotAnsweredUntilTheThreadCommits() {
        write(5);

        assertThat(stored()).isEqualTo(new Fence(5, 1));
        assertThat(answered()).as("no committed fence yet: 404").isNull();

        commitCount.incrementAndGet();

        assertThat(answered()).isEqualTo(new Fence(5, 1));
    }

    @Test
    void aRaisedFenceIsAnsweredAsTheCommittedOneUntilTheThreadCommitsAfterTheRaise() {
        write(5);
        commitCount.incrementAndGet();
        write(9);

        assertThat(stored()).isEqualTo(new Fence(9, 1));
        assertThat(answered()).isEqualTo(new Fence(5, 1));

        commitCount.incrementAndGet();

        assertThat(answered()).isEqualTo(new Fence(9, 1));
    }

    @Test
    void theTaskOfAPartitionReportsWhenItsStreamThreadLastPolledAndNoOtherPartitionDoes() {
        long before = System.nanoTime();
        pollCount.incrementAndGet();
        committed.observe();

        assertThat(committed.streamThreadSeenNanos(0)).isPresent();
        assertThat(committed.streamThreadSeenNanos(0).getAsLong()).isGreaterThanOrEqualTo(before);
        assertThat(committed.streamThreadSeenNanos(1)).isEmpty();
    }

    @Test
    void withoutCommitsTheAnswerStaysAtTheLastCommittedFence() {
        write(5);
        commitCount.incrementAndGet();
        for (long token = 6; token < 50; token++) {
            write(token);
        }

        assertThat(stored()).isEqualTo(new Fence(49, 1));
        assertThat(answered()).isEqualTo(new Fence(5, 1));
    }

    @Test
    void aReadAcrossTheTaskClosingFailsInsteadOfAnsweringWhatTheStoreHeld() {
        write(5);
        PendingFences pending = committed.pending(0);
        Fence stored = stored();
        driver.close();
        driver = null;

        assertThatThrownBy(() -> committed.committed(0, pending, STORE_KEY, stored))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed during the read");
    }

    /** Break-it finding F6: a Kafka Streams without the thread metrics stops nothing; the answers say why they cannot be. */
    @Test
    void withoutTheStreamThreadMetricsRecordsAreStillDecidedAndEveryReadFailsSayingWhy() {
        driver.close();
        CommittedFences blind = new CommittedFences(context -> {
            throw new IllegalStateException("no stream-thread-metrics commit-total metric for stream thread t");
        });
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "committed-fences-blind");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.resolve("blind").toString());
        driver = new TopologyTestDriver(FenceEnforcerTopology.build(FenceEnforcerTopology.Settings
                .of("in", "ok", "dlq", FenceEnforcerTopology.Limits.unbounded(1)).withCommittedFences(blind),
                new SimpleMeterRegistry()),
                props);
        input = driver.createInputTopic("in", new ByteArraySerializer(), new ByteArraySerializer());

        write(5);

        assertThat(stored()).isEqualTo(new Fence(5, 1));
        assertThat(driver.createOutputTopic("ok", new ByteArrayDeserializer(), new ByteArrayDeserializer()).getQueueSize())
                .as("accepted as before").isOne();
        assertThatThrownBy(() -> blind.committed(0, blind.pending(0), STORE_KEY, stored()))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("commit-total");
    }
}
