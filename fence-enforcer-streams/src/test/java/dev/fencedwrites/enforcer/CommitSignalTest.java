package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.enforcer.internal.StoredFence;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.Test;

/**
 * The topology wires the commit signal into a real Kafka Streams task: {@link TopologyTestDriver}
 * commits after every record through {@code StreamTask.prepareCommit} and {@code postCommit}, so the
 * stored history of a key never holds more than the accept since the last commit.
 */
class CommitSignalTest extends TopologyFixture {
    private static final String KEY = "customer-42";

    @Test
    void eachCommitOfTheTaskFoldsTheAcceptsBeforeIt() {
        start(FenceEnforcerTopology.build(
                FenceEnforcerTopology.Settings.of(INPUT, ACCEPTED, REJECTED, FenceEnforcerTopology.Limits.unbounded(1)), meters),
                "commit-signal-test",
                StreamsConfig.AT_LEAST_ONCE);
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
