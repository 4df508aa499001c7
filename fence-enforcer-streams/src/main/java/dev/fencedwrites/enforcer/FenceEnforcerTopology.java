package dev.fencedwrites.enforcer;

import dev.fencedwrites.enforcer.internal.CommitSignal;
import dev.fencedwrites.enforcer.internal.CommittedFences;
import dev.fencedwrites.enforcer.internal.EnforcerMetrics;
import dev.fencedwrites.enforcer.internal.FenceExpiry;
import dev.fencedwrites.enforcer.internal.FenceProcessor;
import dev.fencedwrites.enforcer.internal.FenceSerde;
import dev.fencedwrites.enforcer.internal.FenceStoreRocksDBConfig;
import dev.fencedwrites.enforcer.internal.HighestFenceStore;
import dev.fencedwrites.enforcer.internal.LenientTimestampExtractor;
import dev.fencedwrites.enforcer.internal.PartitionRoute;
import dev.fencedwrites.enforcer.internal.StoredFence;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.AutoOffsetReset;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.state.Stores;
import org.rocksdb.Options;

/**
 * Builds the enforcer's topology: source (input topic, raw bytes) → fence processor with the
 * persistent {@value #STORE} state store (and the {@value #COMMIT_SIGNAL} store, which holds
 * nothing) → accepted sink, rejected sink and, when set, the markers sink (winning FENCE markers,
 * for the sink connector to raise the row's fence). Does no I/O.
 *
 * <p>Under {@link PartitionMismatch#REROUTE} (the default) the source splits in two
 * ({@code PartitionRoute}): records on the partition murmur2 assigns their key go straight to the
 * fence processor; the others go through the repartition topic {@code <application.id>-}{@value #REROUTE}{@code
 * -repartition} (the input's partition count, murmur2 of the key as its partitioner) and are merged back
 * in front of it. Both sources feed the one processor, so they form one sub-topology: the task of
 * partition p reads input partition p and repartition partition p, and owns the fences of the keys
 * murmur2 puts on p. Kafka Streams creates, purges and (under exactly_once_v2) writes the
 * repartition topic inside the task's transaction.
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
    /** Name of the repartition step: Kafka Streams names its topic {@code <application.id>-fence-reroute-repartition}. */
    public static final String REROUTE = "fence-reroute";
    static final String HOME = "on-its-partition";
    static final String AWAY = "misrouted";
    static final String MERGE = "to-decide";
    /** The {@code CommitSignal} of the side that re-routes: it tells the receiving task what its input commits cover. */
    static final String REROUTE_COMMIT_SIGNAL = "fence-reroute-commits";

    /** The shortest time a fence store changelog record stays uncompacted under {@code at_least_once}: one hour. */
    public static final long CHANGELOG_COMPACTION_LAG_MS = 3_600_000L;

    /** The fence store's changelog topic of application {@code applicationId}: Kafka Streams' {@code <id>-<store>-changelog}. */
    public static String changelogTopic(String applicationId) {
        return applicationId + "-" + STORE + "-changelog";
    }

    /** The repartition topic re-routed records take: Kafka Streams' {@code <application.id>-<name>-repartition}. */
    public static String rerouteTopic(String applicationId) {
        return applicationId + "-" + REROUTE + "-repartition";
    }

    private FenceEnforcerTopology() {
    }

    /**
     * What the topology must know about its topics: the input's partition count and the largest
     * record it may write to each output (no record may stop the enforcer). Each size is
     * the smaller of the topic's {@code max.message.bytes} (read from the broker) and the Streams
     * producer's effective {@code max.request.size}, in bytes, compared with a record's
     * uncompressed size.
     *
     * @param inputPartitions  the input topic's partition count, and the repartition topic's (a key's fence lives with the
     *                         partition murmur2 assigns it)
     * @param acceptedMaxBytes the largest accepted record (larger winning writes are rejected {@code TOO_LARGE})
     * @param rejectedMaxBytes the largest rejected copy (larger copies are reduced, down to a reference record);
     *                         at least {@link #MIN_REJECTED_MAX_BYTES}
     * @param storeMaxBytes    the largest record of the fence store's changelog topic (a key whose changelog
     *                         record would be larger is rejected {@code KEY_TOO_LARGE} and never stored)
     * @param rerouteMaxBytes  the largest record of the repartition topic that re-routed records take (a misrouted
     *                         record that would not fit, with its origin header, is rejected {@code TOO_LARGE})
     * @param rerouteOwnerChecked whether a record read from the repartition topic is rejected {@code WRONG_PARTITION} on a
     *                         partition that does not own its key (one written there straight, not by the enforcer);
     *                         {@code false} only under {@code TopologyTestDriver}, which reads every partition as 0
     * @throws IllegalArgumentException when {@code rejectedMaxBytes} cannot hold a reference record
     */
    public record Limits(int inputPartitions, int acceptedMaxBytes, int rejectedMaxBytes, int storeMaxBytes,
            int rerouteMaxBytes, boolean rerouteOwnerChecked) {
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

        /**
         * Limits whose repartition topic takes what the changelog takes (Kafka Streams creates both from the same
         * {@code streams.topic.*} settings).
         */
        public Limits(int inputPartitions, int acceptedMaxBytes, int rejectedMaxBytes, int storeMaxBytes) {
            this(inputPartitions, acceptedMaxBytes, rejectedMaxBytes, storeMaxBytes, storeMaxBytes);
        }

        /** Limits whose re-routed records are decided only by the partition that owns their key. */
        public Limits(int inputPartitions, int acceptedMaxBytes, int rejectedMaxBytes, int storeMaxBytes,
                int rerouteMaxBytes) {
            this(inputPartitions, acceptedMaxBytes, rejectedMaxBytes, storeMaxBytes, rerouteMaxBytes, true);
        }

        /**
         * These limits without the owner check of re-routed records: for {@code TopologyTestDriver}, which runs one task
         * and reads the repartition topic as partition 0 whatever partition the partitioner chose.
         */
        Limits withRerouteOwnerUnchecked() {
            return new Limits(inputPartitions, acceptedMaxBytes, rejectedMaxBytes, storeMaxBytes, rerouteMaxBytes, false);
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

    /**
     * What {@link #build(Settings, MeterRegistry)} builds: the topics and their limits, and the optional parts, each off
     * until a {@code with...} method sets it: no markers topic, every positive token believed (no {@link TokenVerifier}),
     * records on another partition than murmur2 assigns re-routed ({@link PartitionMismatch#REROUTE}), no committed-fence
     * bookkeeping, and the fence store's changelog created with Kafka Streams' topic configs. Immutable.
     */
    public static final class Settings {
        private final String input;
        private final String accepted;
        private final String rejected;
        private final Limits limits;
        private final String markers;
        private final TokenVerifier verifier;
        private final PartitionMismatch mismatch;
        private final CommittedFences committed;
        private final Map<String, String> changelogConfig;
        private final FenceExpiry expiry;

        private Settings(String input, String accepted, String rejected, Limits limits, String markers, TokenVerifier verifier,
                PartitionMismatch mismatch, CommittedFences committed, Map<String, String> changelogConfig) {
            this(input, accepted, rejected, limits, markers, verifier, mismatch, committed, changelogConfig, null);
        }

        private Settings(String input, String accepted, String rejected, Limits limits, String markers, TokenVerifier verifier,
                PartitionMismatch mismatch, CommittedFences committed, Map<String, String> changelogConfig,
                FenceExpiry expiry) {
            this.input = Objects.requireNonNull(input, "input");
            this.accepted = Objects.requireNonNull(accepted, "accepted");
            this.rejected = Objects.requireNonNull(rejected, "rejected");
            this.limits = Objects.requireNonNull(limits, "limits");
            this.markers = markers;
            this.verifier = verifier;
            this.mismatch = Objects.requireNonNull(mismatch, "mismatch");
            this.committed = committed;
            this.changelogConfig = Map.copyOf(changelogConfig);
            this.expiry = expiry;
        }

        /** A topology from {@code input} to {@code accepted} and {@code rejected}, with nothing optional. */
        public static Settings of(String input, String accepted, String rejected, Limits limits) {
            return new Settings(input, accepted, rejected, limits, null, null, PartitionMismatch.REROUTE, null, Map.of());
        }

        /** As the enforcer builds it from {@code config}: its topics, markers topic, mismatch policy and changelog configs. */
        public static Settings from(FenceEnforcerConfig config, Limits limits) {
            Settings settings = of(config.inputTopic(), config.acceptedTopic(), config.rejectedTopic(), limits)
                    .withPartitionMismatch(config.partitionMismatch())
                    .withChangelogConfig(FenceEnforcerTopology.changelogConfig(config));
            return config.markersTopic().map(settings::withMarkers).orElse(settings);
        }

        /** Winning FENCE markers are published to {@code topic}. */
        public Settings withMarkers(String topic) {
            return new Settings(input, accepted, rejected, limits, Objects.requireNonNull(topic, "markers"), verifier, mismatch,
                    committed, changelogConfig, expiry);
        }

        /** {@code tokens} checks the token of every record the rule would accept; shared by all tasks, so thread-safe. */
        public Settings withVerifier(TokenVerifier tokens) {
            return new Settings(input, accepted, rejected, limits, markers, Objects.requireNonNull(tokens, "verifier"), mismatch,
                    committed, changelogConfig, expiry);
        }

        /** What a record on another partition than murmur2 assigns its key becomes. */
        public Settings withPartitionMismatch(PartitionMismatch policy) {
            return new Settings(input, accepted, rejected, limits, markers, verifier, policy, committed, changelogConfig, expiry);
        }

        /** Every task tells {@code fences} which stored fences may not be committed yet ({@code GET /fences/{key}}). */
        public Settings withCommittedFences(CommittedFences fences) {
            return new Settings(input, accepted, rejected, limits, markers, verifier, mismatch,
                    Objects.requireNonNull(fences, "committed"), changelogConfig, expiry);
        }

        /** Topic configs for the fence store's changelog when Kafka Streams creates it ({@link #changelogConfig}). */
        public Settings withChangelogConfig(Map<String, String> topicConfig) {
            return new Settings(input, accepted, rejected, limits, markers, verifier, mismatch, committed, topicConfig, expiry);
        }

        /**
         * Every task keeps a floor and drops the fences below it as {@code expiry} allows (fence expiry); the caller
         * starts and closes {@code expiry}.
         */
        public Settings withExpiry(FenceExpiry expiry) {
            return new Settings(input, accepted, rejected, limits, markers, verifier, mismatch, committed, changelogConfig,
                    Objects.requireNonNull(expiry, "expiry"));
        }

        public Optional<FenceExpiry> expiry() {
            return Optional.ofNullable(expiry);
        }

        public String input() {
            return input;
        }

        public String accepted() {
            return accepted;
        }

        public String rejected() {
            return rejected;
        }

        public Limits limits() {
            return limits;
        }

        public Optional<String> markers() {
            return Optional.ofNullable(markers);
        }

        public Optional<TokenVerifier> verifier() {
            return Optional.ofNullable(verifier);
        }

        public PartitionMismatch partitionMismatch() {
            return mismatch;
        }

        public Optional<CommittedFences> committedFences() {
            return Optional.ofNullable(committed);
        }

        public Map<String, String> changelogConfig() {
            return changelogConfig;
        }
    }

    /**
     * The enforcer's topology.
     *
     * @param settings its topics, limits and optional parts
     * @param meters   where the fenced-writes meters are registered
     */
    public static Topology build(Settings settings, MeterRegistry meters) {
        EnforcerMetrics metrics = new EnforcerMetrics(meters);
        Serde<byte[]> bytes = Serdes.ByteArray();
        StreamsBuilder builder = new StreamsBuilder();
        // Cached: gets and puts hit an in-memory cache, and RocksDB and the changelog get one write
        // per key per commit instead of one per record. The processor and /fences/{key} read
        // through the cache (/fences/{key} then answers the committed fence, CommittedFences).
        // Under exactly_once_v2 the cache is flushed into the transaction
        // before each commit, so the changelog and the outcomes commit together. Under
        // at_least_once, evictions and flushes reach the changelog before the offsets are
        // committed, and possibly before the outputs of the same records are delivered: after a
        // crash the restored fence can be ahead of the committed offsets. The stored value keeps
        // each key's accepts since the last commit (StoredFence), so the replayed records are
        // decided against the fence each met the first time. That holds only while a
        // decision depends on nothing but the input and the store (no wall clock, no
        // punctuator). Without the cache the enforcer ran at 0.34 of a pass-through under
        // at_least_once at 10k keys, 0.57 with it (./fence bench; JFR showed a RocksDB put and a
        // changelog send on every record).
        // A restore never lowers a fence (HighestFenceStore): under at_least_once an instance that lost its tasks can still
        // flush older fences to the changelog after the new owner's, which writes its own again (ChangelogWatch).
        // Kafka Streams drops the cache from every store when statestore.cache.max.bytes is 0 (InternalTopologyBuilder's
        // rewriteTopology): each put then reaches RocksDB and the changelog at once, as an eviction does, and the same rules
        // hold. With most keys coming once per commit interval that is the cheaper store (./fence bench --only state).
        builder.addStateStore(Stores.keyValueStoreBuilder(HighestFenceStore.supplier(Stores.persistentKeyValueStore(STORE)),
                Serdes.Bytes(), new FenceSerde()).withCachingEnabled().withLoggingEnabled(settings.changelogConfig()));
        builder.addStateStore(CommitSignal.builder(COMMIT_SIGNAL));
        Limits limits = settings.limits();
        KStream<byte[], byte[]> in = builder.stream(settings.input(), Consumed.with(bytes, bytes)
                .withTimestampExtractor(new LenientTimestampExtractor())
                .withOffsetResetPolicy(AutoOffsetReset.earliest())
                .withName(SOURCE));
        KStream<byte[], byte[]> toDecide = in;
        if (settings.partitionMismatch() == PartitionMismatch.REROUTE) {
            KStream<byte[], byte[]> home = in.process(() -> PartitionRoute.home(metrics, limits), Named.as(HOME));
            builder.addStateStore(CommitSignal.builder(REROUTE_COMMIT_SIGNAL));
            KStream<byte[], byte[]> away = in.process(() -> PartitionRoute.away(metrics, limits, REROUTE_COMMIT_SIGNAL),
                    Named.as(AWAY), REROUTE_COMMIT_SIGNAL)
                    .repartition(Repartitioned.<byte[], byte[]>as(REROUTE).withKeySerde(bytes).withValueSerde(bytes)
                            .withNumberOfPartitions(limits.inputPartitions())
                            .withStreamPartitioner(PartitionRoute.partitioner()));
            toDecide = home.merge(away, Named.as(MERGE));
        }
        FenceProcessor.Nodes nodes = new FenceProcessor.Nodes(STORE, COMMIT_SIGNAL, ACCEPTED_SINK, REJECTED_SINK, MARKERS_SINK);
        KStream<byte[], byte[]> decided = toDecide.process(() -> new FenceProcessor(nodes, settings, metrics),
                Named.as(PROCESSOR), STORE, COMMIT_SIGNAL);
        decided.to(settings.accepted(), Produced.with(bytes, bytes).withName(ACCEPTED_SINK));
        decided.to(settings.rejected(), Produced.with(bytes, bytes).withName(REJECTED_SINK));
        settings.markers().ifPresent(markers -> decided.to(markers, Produced.with(bytes, bytes).withName(MARKERS_SINK)));
        return builder.build();
    }

    /**
     * A topology as the enforcer builds it, and the committed-fence bookkeeping its tasks feed ({@code GET /fences/{key}}'s),
     * already started: close it after the topology's {@code KafkaStreams} is closed.
     */
    public record Built(Topology topology, AutoCloseable committedFences) {
    }

    /**
     * Builds the topology as the enforcer does from {@code config} (its topics, partition mismatch policy and
     * committed-fence bookkeeping, started with the commit interval of {@code config}'s Kafka Streams settings; without
     * fence expiry), for a {@code KafkaStreams} run outside the enforcer's main, such as {@code ./fence bench}'s.
     */
    public static Built buildAsTheEnforcer(FenceEnforcerConfig config, Limits limits, MeterRegistry meters,
            TokenVerifier verifier) {
        CommittedFences committed = new CommittedFences();
        Settings settings = Settings.from(config, limits).withCommittedFences(committed);
        Topology topology = build(verifier == null ? settings : settings.withVerifier(verifier), meters);
        committed.start(CommittedFences.observationInterval(FenceEnforcerConfig.quietStreamsConfig(config.streamsProperties())
                .getLong(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG)));
        return new Built(topology, committed);
    }

    /**
     * Sets the RocksDB options the fence store has over Kafka Streams' own ({@code FenceStoreRocksDBConfig}: bloom filters
     * for a store whose reads mostly miss), for a store of one's own such as {@code ./fence bench}'s stateful baseline.
     */
    public static void fenceStoreRocksDBOptions(Options options) {
        FenceStoreRocksDBConfig.forMisses(options);
    }

    /**
     * The fence store changelog's topic configs {@code config} needs. Under {@code at_least_once}, an instance that lost its
     * task can still write older fences to the changelog, and the task's owner writes its fences again after them (at its
     * next commit, or within seconds when idle; a restore that skips them writes them again too). Until then the higher
     * record must survive the cleaner, which keeps only a key's last record: {@code min.compaction.lag.ms} keeps every record
     * for {@value #CHANGELOG_COMPACTION_LAG_MS} ms after it was appended ({@code message.timestamp.type=LogAppendTime}: the
     * lag counts from the broker's clock, not from the input record's timestamp). Empty under {@code exactly_once_v2}, whose
     * transactions fence such an instance.
     */
    public static Map<String, String> changelogConfig(FenceEnforcerConfig config) {
        if (StreamsConfig.EXACTLY_ONCE_V2.equals(config.getString(FenceEnforcerConfig.PROCESSING_GUARANTEE))) {
            return Map.of();
        }
        return Map.of(TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG, "LogAppendTime", TopicConfig.MIN_COMPACTION_LAG_MS_CONFIG,
                Long.toString(CHANGELOG_COMPACTION_LAG_MS));
    }
}
