package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.enforcer.internal.StoredFence;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The topology wires the commit signal into a real Kafka Streams task: {@link TopologyTestDriver}
 * commits after every record through {@code StreamTask.prepareCommit} and {@code postCommit}, so the
 * stored history of a key never holds more than the accept since the last commit.
 */
class CommitSignalTest {
    private static final String KEY = "customer-42";

    @TempDir
    Path stateDir;

    @Test
    void eachCommitOfTheTaskFoldsTheAcceptsBeforeIt() {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "commit-signal-test");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        try (TopologyTestDriver driver = new TopologyTestDriver(
                FenceEnforcerTopology.build("in", "ok", "dlq", 1, new SimpleMeterRegistry()), props)) {
            TestInputTopic<byte[], byte[]> input = driver.createInputTopic("in", new ByteArraySerializer(),
                    new ByteArraySerializer());
            for (int seq = 1; seq <= 3; seq++) {
                RecordHeaders headers = new RecordHeaders();
                headers.add(FenceHeaders.TOKEN, "6".getBytes(StandardCharsets.UTF_8));
                headers.add(FenceHeaders.SEQ, Integer.toString(seq).getBytes(StandardCharsets.UTF_8));
                input.pipeInput(
                        new TestRecord<>(KEY.getBytes(StandardCharsets.UTF_8), "v".getBytes(StandardCharsets.UTF_8), headers));
            }

            StoredFence stored = driver.<Bytes, StoredFence>getKeyValueStore(FenceEnforcerTopology.STORE)
                    .get(Bytes.wrap(KEY.getBytes(StandardCharsets.UTF_8)));

            assertThat(stored)
                    .isEqualTo(new StoredFence(new Fence(6, 2), 2, List.of(new StoredFence.Accept(2, new Fence(6, 3)))));
        }
    }
}
