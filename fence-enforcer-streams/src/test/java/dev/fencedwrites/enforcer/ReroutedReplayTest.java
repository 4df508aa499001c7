package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.enforcer.internal.CommitSignal;
import dev.fencedwrites.enforcer.internal.EnforcerMetrics;
import dev.fencedwrites.enforcer.internal.FenceProcessor;
import dev.fencedwrites.enforcer.internal.FenceSerde;
import dev.fencedwrites.enforcer.internal.PartitionRoute;
import dev.fencedwrites.enforcer.internal.StoredFence;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Replays of re-routed records under at_least_once, around the real
 * {@link FenceProcessor} of the task that owns the key, fed from the repartition
 * topic. A crash restarts the processor over the store as it was (its cache had reached the
 * changelog), and the sending task, which had not committed, sends its records again at new
 * repartition offsets: each copy is recognised by its input partition and offset.
 */
class ReroutedReplayTest {
    private static final String INPUT = "in";
    private static final String REPARTITION = "app-" + FenceEnforcerTopology.REROUTE + "-repartition";
    private static final String KEY = "customer-7";

    private final MockProcessorContext<byte[], byte[]> context = new MockProcessorContext<>(atLeastOnce());
    private final EnforcerMetrics metrics = new EnforcerMetrics(new SimpleMeterRegistry());
    private KeyValueStore<Bytes, StoredFence> store;
    private CommitSignal signal;
    private FenceProcessor processor;
    private long repartitionOffset;

    private static Properties atLeastOnce() {
        Properties props = new Properties();
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        return props;
    }

    @BeforeEach
    void startTask() {
        store = Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore(FenceEnforcerTopology.STORE), Serdes.Bytes(),
                new FenceSerde()).withLoggingDisabled().withCachingDisabled().build();
        store.init(context.getStateStoreContext(), store);
        restart();
    }

    /** A new processor over the same store, told of the restore as StreamTask.completeRestoration tells the stores. */
    private void restart() {
        signal = new CommitSignal(FenceEnforcerTopology.COMMIT_SIGNAL);
        signal.init(context.getStateStoreContext(), signal);
        processor = new FenceProcessor(new FenceProcessor.Nodes(FenceEnforcerTopology.STORE,
                FenceEnforcerTopology.COMMIT_SIGNAL, "accepted", "rejected", "markers"),
                FenceEnforcerTopology.Settings.of(INPUT, "accepted", "rejected", FenceEnforcerTopology.Limits.unbounded(3)),
                metrics);
        processor.init(context);
        signal.commit(Map.of());
        context.resetForwards();
    }

    @Test
    void aReroutedWriteSentAgainAfterACrashGetsItsFirstOutcome() {
        List<String> first = outcomes(rerouted(5, 0, 7, 1), rerouted(6, 0, 7, 2), rerouted(7, 0, 5, 1));

        restart();
        List<String> again = outcomes(rerouted(5, 0, 7, 1), rerouted(6, 0, 7, 2), rerouted(7, 0, 5, 1));

        assertThat(first).containsExactly("accepted 7.1", "accepted 7.2", "rejected STALE_TOKEN");
        assertThat(again).as("the sender's copies, at new repartition offsets").isEqualTo(first);
    }

    @Test
    void aReroutedWriteIsForgottenOnceItsSendersCommitPassedItAndThisTaskCommitted() {
        outcomes(rerouted(5, 0, 7, 1));
        outcomes(rerouted(6, 6, 7, 2)); // its sender had committed up to offset 6 when it sent this one
        signal.commit(Map.of());

        outcomes(rerouted(8, 6, 8, 1));

        assertThat(store.get(Bytes.wrap(utf8(KEY))).accepts()).extracting(StoredFence.Accept::offset)
                .as("accepts kept for replays: offset 5 is behind both commits").containsExactly(6L, 8L);
        assertThat(store.get(Bytes.wrap(utf8(KEY))).origin()).isEqualTo(1);
    }

    @Test
    void aRecordOfAnotherInputPartitionAtARememberedOffsetIsNotTakenForAReplay() {
        outcomes(rerouted(5, 0, 7, 1), rerouted(6, 0, 7, 2));

        List<String> fromPartitionTwo = outcomes(record(2, 5, 0, 7, 1));

        assertThat(fromPartitionTwo).containsExactly("rejected OUT_OF_ORDER");
    }

    /**
     * A copy placed straight onto a repartition partition that does not own the key, claiming a remembered input offset, is
     * rejected there; the owner still takes the real copy for the replay it is.
     */
    @Test
    void aCopyOnAPartitionThatDoesNotOwnTheKeyIsRejectedAndSteersNoReplay() {
        outcomes(rerouted(5, 0, 7, 1), rerouted(6, 0, 7, 2));
        int elsewhere = (PartitionRoute.owner(utf8(KEY), 3) + 1) % 3;

        List<String> straight = outcomesOn(elsewhere, rerouted(5, 99, 7, 1));
        restart();
        List<String> replayed = outcomes(rerouted(5, 0, 7, 1));

        assertThat(straight).containsExactly("rejected WRONG_PARTITION");
        assertThat(replayed).as("a replay of its first outcome").containsExactly("accepted 7.1");
    }

    private Record<byte[], byte[]> rerouted(long inputOffset, long senderCommitted, long token, long seq) {
        return record(1, inputOffset, senderCommitted, token, seq);
    }

    /** A write of {@link #KEY} written to input {@code partition} at {@code inputOffset}, read from the repartition topic. */
    private Record<byte[], byte[]> record(int partition, long inputOffset, long senderCommitted, long token, long seq) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, utf8(Long.toString(token)));
        headers.add(FenceHeaders.SEQ, utf8(Long.toString(seq)));
        headers.add(PartitionRoute.ORIGIN_HEADER, utf8(partition + ":" + inputOffset + ":" + senderCommitted));
        return new Record<>(utf8(KEY), utf8("v"), 1_000L, headers);
    }

    /** The outcomes of {@code records} read from the repartition topic's partition that owns the key, as the enforcer sends. */
    @SafeVarargs
    private List<String> outcomes(Record<byte[], byte[]>... records) {
        return outcomesOn(PartitionRoute.owner(utf8(KEY), 3), records);
    }

    @SafeVarargs
    private List<String> outcomesOn(int partition, Record<byte[], byte[]>... records) {
        List<String> outcomes = new ArrayList<>();
        for (Record<byte[], byte[]> record : records) {
            context.setRecordMetadata(REPARTITION, partition, repartitionOffset++);
            processor.process(record);
            for (MockProcessorContext.CapturedForward<? extends byte[], ? extends byte[]> forward : context.forwarded()) {
                boolean accepted = forward.childName().orElseThrow().equals("accepted");
                outcomes.add(accepted
                        ? "accepted " + text(forward.record().headers().lastHeader(FenceHeaders.TOKEN)) + "."
                                + text(forward.record().headers().lastHeader(FenceHeaders.SEQ))
                        : "rejected " + text(forward.record().headers().lastHeader(FenceHeaders.REJECTED_REASON)));
            }
            context.resetForwards();
        }
        return outcomes;
    }

    private static String text(Header header) {
        return new String(header.value(), StandardCharsets.UTF_8);
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
