package dev.fencedwrites.enforcer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.enforcer.FenceEnforcerTopology;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A closed task leaves nothing scheduled: Kafka Streams keeps a task's punctuation queue when it revives the task after a
 * corruption (a {@code TaskCorruptedException}), so a punctuation left behind would run against what {@code close()}
 * released. Under at_least_once the fence store is watched for changelog records written by someone else, with a
 * punctuation that checks an idle task.
 */
class FenceProcessorCloseTest {
    @TempDir
    Path stateDir;

    @Test
    void closingATaskCancelsEveryPunctuationItScheduled() {
        Properties props = new Properties();
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "close-test");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:9"); // the watch's consumer is made, never used
        MockProcessorContext<byte[], byte[]> context = new MockProcessorContext<>(props, new TaskId(0, 0), stateDir.toFile());
        KeyValueStore<Bytes, StoredFence> fences = Stores.keyValueStoreBuilder(
                HighestFenceStore.supplier(Stores.inMemoryKeyValueStore("fences")), Serdes.Bytes(), new FenceSerde())
                .withLoggingDisabled().withCachingDisabled().build();
        fences.init(context.getStateStoreContext(), fences);
        CommitSignal commits = new CommitSignal("fence-commits");
        commits.init(context.getStateStoreContext(), commits);
        FenceProcessor processor = new FenceProcessor(
                new FenceProcessor.Nodes("fences", "fence-commits", "accepted", "rejected", "markers"),
                FenceEnforcerTopology.Settings.of("input", "accepted", "rejected", FenceEnforcerTopology.Limits.unbounded(1)),
                new EnforcerMetrics(new SimpleMeterRegistry()));

        processor.init(context);
        assertThat(context.scheduledPunctuators()).as("the changelog watch's idle check").isNotEmpty();
        processor.close();

        assertThat(context.scheduledPunctuators()).allSatisfy(p -> assertThat(p.cancelled()).as("cancelled").isTrue());
    }
}
