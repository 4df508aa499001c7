package dev.fencedwrites.enforcer;

import dev.fencedwrites.enforcer.internal.CommitSignal;
import dev.fencedwrites.enforcer.internal.EnforcerMetrics;
import dev.fencedwrites.enforcer.internal.FenceProcessor;
import dev.fencedwrites.enforcer.internal.FenceSerde;
import dev.fencedwrites.enforcer.internal.LenientTimestampExtractor;
import dev.fencedwrites.enforcer.internal.StoredFence;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.AutoOffsetReset;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.state.Stores;

/**
 * Builds the enforcer's topology: source (input topic, raw bytes) → fence processor with the
 * persistent {@value #STORE} state store (and the {@value #COMMIT_SIGNAL} store, which holds
 * nothing) → accepted sink, rejected sink and, when set, the markers sink (winning FENCE markers,
 * for the sink connector to raise the row's fence). Does no I/O.
 */
public final class FenceEnforcerTopology {
    /** Name of the state store holding the highest accepted fence per key (changelog-backed). */
    public static final String STORE = "fences";
    /** Name of the store that holds nothing and tells the processor of each commit of its task (see {@code CommitSignal}). */
    static final String COMMIT_SIGNAL = "fence-commits";
    static final String SOURCE = "input";
    static final String PROCESSOR = "fence";
    static final String ACCEPTED_SINK = "accepted";
    static final String REJECTED_SINK = "rejected";
    static final String MARKERS_SINK = "markers";

    private FenceEnforcerTopology() {
    }

    /**
     * What the topology must know about its topics: the input's partition count and the largest
     * record it may write to each output (issue 13: no record may stop the enforcer). Each size is
     * the smaller of the topic's {@code max.message.bytes} (read from the broker) and the Streams
     * producer's effective {@code max.request.size}, in bytes, compared with a record's
     * uncompressed size.
     *
     * @param inputPartitions  the input topic's partition count (records on the wrong partition for their key are rejected)
     * @param acceptedMaxBytes the largest accepted record (larger winning writes are rejected {@code TOO_LARGE})
     * @param rejectedMaxBytes the largest rejected copy (larger copies are reduced, down to a reference record);
     *                         at least {@link #MIN_REJECTED_MAX_BYTES}
     * @param storeMaxBytes    the largest record of the fence store's changelog topic (a key whose changelog
     *                         record would be larger is rejected {@code KEY_TOO_LARGE} and never stored)
     * @throws IllegalArgumentException when {@code rejectedMaxBytes} cannot hold a reference record
     */
    public record Limits(int inputPartitions, int acceptedMaxBytes, int rejectedMaxBytes, int storeMaxBytes) {
        /** The smallest rejected-topic limit that still takes a reference record (its headers are under 1 KiB). */
        public static final int MIN_REJECTED_MAX_BYTES = 2048;
        /**
         * Room kept beside the key for the stored value and the changelog record's framing: the
         * largest value {@link FenceSerde} writes (a base fence and {@value StoredFence#MAX_ACCEPTS}
         * accepts of at most three 10-byte varlongs each, about 30 KiB; typically a few bytes to a
         * few hundred), plus the batch and record framing.
         */
        public static final int STORED_VALUE_ALLOWANCE_BYTES = FenceSerde.MAX_SIZE_BYTES + 1024;

        public Limits {
            if (rejectedMaxBytes < MIN_REJECTED_MAX_BYTES) {
                throw new IllegalArgumentException("the rejected topic must take records of at least " + MIN_REJECTED_MAX_BYTES
                        + " bytes (max.message.bytes and max.request.size), got " + rejectedMaxBytes);
            }
        }

        /** No size limits: for tests and topologies whose topics take any record. */
        public static Limits unbounded(int inputPartitions) {
            return new Limits(inputPartitions, Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE);
        }

        /** Whether the fence of {@code key} can be written to the store's changelog. */
        public boolean storable(byte[] key) {
            return key.length + (long) STORED_VALUE_ALLOWANCE_BYTES <= storeMaxBytes;
        }
    }

    /** {@link #build(String, String, String, Limits, MeterRegistry)} without size limits. */
    public static Topology build(String input, String accepted, String rejected, int inputPartitions, MeterRegistry meters) {
        return build(input, accepted, rejected, Limits.unbounded(inputPartitions), meters);
    }

    /** {@link #build(String, String, String, String, Limits, MeterRegistry)} without a markers topic. */
    public static Topology build(String input, String accepted, String rejected, Limits limits, MeterRegistry meters) {
        return build(input, accepted, rejected, null, limits, meters);
    }

    /**
     * @param input    the input topic
     * @param accepted the accepted topic
     * @param rejected the rejected topic
     * @param markers  the topic winning FENCE markers are published to, or {@code null} for none
     * @param limits   the topics' partition count and size limits
     * @param meters   where the fenced-writes counters are registered
     */
    public static Topology build(String input, String accepted, String rejected, String markers, Limits limits,
            MeterRegistry meters) {
        return build(input, accepted, rejected, markers, limits, meters, null);
    }

    /**
     * @param input    the input topic
     * @param accepted the accepted topic
     * @param rejected the rejected topic
     * @param markers  the topic winning FENCE markers are published to, or {@code null} for none
     * @param limits   the topics' partition count and size limits
     * @param meters   where the fenced-writes counters are registered
     * @param verifier checks the token of every record the rule would accept (issue 14), or {@code null} to believe every token;
     *                 shared by all tasks, so it must be thread-safe
     */
    public static Topology build(String input, String accepted, String rejected, String markers, Limits limits,
            MeterRegistry meters,
            TokenVerifier verifier) {
        EnforcerMetrics metrics = new EnforcerMetrics(meters);
        Topology topology = new Topology();
        topology.addSource(AutoOffsetReset.earliest(), SOURCE, new LenientTimestampExtractor(), new ByteArrayDeserializer(),
                new ByteArrayDeserializer(), input);
        topology.addProcessor(PROCESSOR, () -> new FenceProcessor(STORE, COMMIT_SIGNAL, ACCEPTED_SINK, REJECTED_SINK,
                markers == null ? null : new FenceProcessor.MarkerOutput(MARKERS_SINK, accepted), metrics, limits, verifier),
                SOURCE);
        // Cached: gets and puts hit an in-memory cache, and RocksDB and the changelog get one write
        // per key per commit instead of one per record. The processor and /fences/{key} read
        // through the cache. Under exactly_once_v2 the cache is flushed into the transaction
        // before each commit, so the changelog and the outcomes commit together. Under
        // at_least_once, evictions and flushes reach the changelog before the offsets are
        // committed, and possibly before the outputs of the same records are delivered: after a
        // crash the restored fence can be ahead of the committed offsets. The stored value keeps
        // each key's accepts since the last commit (StoredFence), so the replayed records are
        // decided against the fence each met the first time (issue 13). That holds only while a
        // decision depends on nothing but the input and the store (no wall clock, no
        // punctuator). Without the cache the enforcer ran at 0.34 of a pass-through under
        // at_least_once at 10k keys, 0.57 with it (./fence bench; JFR showed a RocksDB put and a
        // changelog send on every record).
        topology.addStateStore(
                Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(STORE), Serdes.Bytes(), new FenceSerde())
                        .withCachingEnabled(),
                PROCESSOR);
        topology.addStateStore(CommitSignal.builder(COMMIT_SIGNAL), PROCESSOR);
        topology.addSink(ACCEPTED_SINK, accepted, new ByteArraySerializer(), new ByteArraySerializer(), PROCESSOR);
        topology.addSink(REJECTED_SINK, rejected, new ByteArraySerializer(), new ByteArraySerializer(), PROCESSOR);
        if (markers != null) {
            topology.addSink(MARKERS_SINK, markers, new ByteArraySerializer(), new ByteArraySerializer(), PROCESSOR);
        }
        return topology;
    }

    /** Builds the topology for the topics named in {@code config}. */
    public static Topology build(FenceEnforcerConfig config, Limits limits, MeterRegistry meters) {
        return build(config, limits, meters, null);
    }

    /**
     * Builds the topology for the topics named in {@code config}, with {@code verifier} (or {@code null}) checking raising
     * tokens.
     */
    public static Topology build(FenceEnforcerConfig config, Limits limits, MeterRegistry meters, TokenVerifier verifier) {
        return build(config.inputTopic(), config.acceptedTopic(), config.rejectedTopic(), config.markersTopic().orElse(null),
                limits, meters, verifier);
    }
}
