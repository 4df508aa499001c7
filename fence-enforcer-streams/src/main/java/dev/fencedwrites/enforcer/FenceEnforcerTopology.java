package dev.fencedwrites.enforcer;

import dev.fencedwrites.enforcer.internal.EnforcerMetrics;
import dev.fencedwrites.enforcer.internal.FenceProcessor;
import dev.fencedwrites.enforcer.internal.FenceSerde;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.state.Stores;

/**
 * Builds the enforcer's topology: source (input topic, raw bytes) → fence processor with the
 * persistent {@value #STORE} state store → accepted sink and rejected sink. Does no I/O.
 */
public final class FenceEnforcerTopology {
    /** Name of the state store holding the highest accepted fence per key (changelog-backed). */
    public static final String STORE = "fences";
    static final String SOURCE = "input";
    static final String PROCESSOR = "fence";
    static final String ACCEPTED_SINK = "accepted";
    static final String REJECTED_SINK = "rejected";

    private FenceEnforcerTopology() {
    }

    /**
     * @param input    the input topic
     * @param accepted the accepted topic
     * @param rejected        the rejected topic
     * @param inputPartitions the input topic's partition count (records on the wrong partition for their key are rejected)
     * @param meters          where the fenced-writes counters are registered
     */
    public static Topology build(String input, String accepted, String rejected, int inputPartitions, MeterRegistry meters) {
        EnforcerMetrics metrics = new EnforcerMetrics(meters);
        Topology topology = new Topology();
        topology.addSource(SOURCE, new ByteArrayDeserializer(), new ByteArrayDeserializer(), input);
        topology.addProcessor(PROCESSOR, () -> new FenceProcessor(STORE, ACCEPTED_SINK, REJECTED_SINK, metrics, inputPartitions), SOURCE);
        topology.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(STORE), Serdes.Bytes(), new FenceSerde()), PROCESSOR);
        topology.addSink(ACCEPTED_SINK, accepted, new ByteArraySerializer(), new ByteArraySerializer(), PROCESSOR);
        topology.addSink(REJECTED_SINK, rejected, new ByteArraySerializer(), new ByteArraySerializer(), PROCESSOR);
        return topology;
    }

    /** Builds the topology for the topics named in {@code config}. */
    public static Topology build(FenceEnforcerConfig config, int inputPartitions, MeterRegistry meters) {
        return build(config.inputTopic(), config.acceptedTopic(), config.rejectedTopic(), inputPartitions, meters);
    }
}
