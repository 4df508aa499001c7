package dev.fencedwrites.enforcer;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.enforcer.internal.CommitSignal;
import dev.fencedwrites.enforcer.internal.EnforcerMetrics;
import dev.fencedwrites.enforcer.internal.FenceProcessor;
import dev.fencedwrites.enforcer.internal.FenceSerde;
import dev.fencedwrites.enforcer.internal.StoredFence;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.function.Predicate;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * One input partition's enforcer task across crashes, around the real {@link FenceProcessor}: what
 * Kafka Streams does under at_least_once, reduced to the parts that decide what a replay sees.
 *
 * <ul>
 *   <li>The live fence store is what the processor reads and writes; the durable store is what a
 *       restart restores (the changelog). {@link #evict} copies one key's live value to the durable
 *       store at any moment, as a cache eviction does; {@link #commit} copies all of them, delivers
 *       every output sent so far, moves the committed offset to the next record, and then calls the
 *       {@link CommitSignal}, in the order of {@code StreamTask.prepareCommit}, {@code commitSync} and
 *       {@code StreamTask.postCommit}.</li>
 *   <li>{@link #crash} delivers any chosen subset of the outputs sent since the last commit (the
 *       rest were in the producer's buffer) and restarts from the committed offset against the
 *       durable store, with a new processor, calling the signal once before the first record as
 *       {@code StreamTask.completeRestoration} does.</li>
 * </ul>
 *
 * Input records carry a {@value #ID} header; outputs are read back by it.
 */
final class TaskSimulation {
    static final String ID = "test.id";
    static final String STORE = "fences";
    static final String SIGNAL = "fence-commits";
    static final String ACCEPTED = "accepted";
    static final String REJECTED = "rejected";

    /** One output record: the input it came from, its topic, and the rejection headers. */
    record Output(int id, boolean accepted, RejectionReason reason, String highest) {
    }

    private final List<Record<byte[], byte[]>> input = new ArrayList<>();
    private final Map<Bytes, StoredFence> durable = new HashMap<>();
    private final List<Output> pending = new ArrayList<>();
    private final List<Output> delivered = new ArrayList<>();
    private final MockProcessorContext<byte[], byte[]> context;
    private final EnforcerMetrics metrics;
    private long committedOffset;
    private long position;
    private int commitRequests;
    private KeyValueStore<Bytes, StoredFence> live;
    private CommitSignal signal;
    private FenceProcessor processor;
    private final TokenVerifier verifier;
    private FenceEnforcerTopology.Limits limits = FenceEnforcerTopology.Limits.unbounded(1);

    TaskSimulation(String guarantee, MeterRegistry meters) {
        this(guarantee, meters, null);
    }

    /** With {@code verifier} checking each raising token, or {@code null}. */
    TaskSimulation(String guarantee, MeterRegistry meters, TokenVerifier verifier) {
        this.verifier = verifier;
        Properties props = new Properties();
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        this.context = new MockProcessorContext<>(props);
        this.metrics = new EnforcerMetrics(meters);
        start();
    }

    /** Appends an input record at the next offset; its id is that offset. */
    int append(String key, byte[] value, Headers headers) {
        int id = input.size();
        headers.add(ID, Integer.toString(id).getBytes(StandardCharsets.UTF_8));
        input.add(new Record<>(key == null ? null : key.getBytes(StandardCharsets.UTF_8), value, 1_000L + id, headers));
        return id;
    }

    /** Processes the next input record; false when there is none. */
    boolean processNext() {
        if (position >= input.size()) {
            return false;
        }
        context.setRecordMetadata("in", 0, position);
        processor.process(input.get((int) position));
        for (MockProcessorContext.CapturedForward<? extends byte[], ? extends byte[]> forward : context.forwarded()) {
            Headers headers = forward.record().headers();
            boolean accepted = forward.childName().orElseThrow().equals(ACCEPTED);
            pending.add(new Output(Integer.parseInt(text(headers, ID)), accepted,
                    accepted ? null : RejectionReason.valueOf(text(headers, FenceHeaders.REJECTED_REASON)),
                    accepted ? null : text(headers, FenceHeaders.REJECTED_HIGHEST)));
        }
        context.resetForwards();
        if (context.committed()) {
            commitRequests++;
            context.resetCommit();
        }
        position++;
        return true;
    }

    /** Processes every input record appended so far. */
    void processAll() {
        while (processNext()) {
            // next
        }
    }

    /** Puts {@code value} in the durable and the live store, as if restored. */
    void seed(String key, StoredFence value) {
        durable.put(storeKey(key), value);
        live.put(storeKey(key), value);
    }

    /** Processes every input record appended so far, then commits. */
    void finish() {
        processAll();
        commit();
    }

    /** The store's value of {@code key} reaches the changelog now. */
    void evict(String key) {
        Bytes storeKey = storeKey(key);
        StoredFence value = live.get(storeKey);
        if (value != null) {
            durable.put(storeKey, value);
        }
    }

    /** Flush every cached value, flush the producer, commit the offsets, then tell the stores. */
    void commit() {
        try (KeyValueIterator<Bytes, StoredFence> all = live.all()) {
            while (all.hasNext()) {
                KeyValue<Bytes, StoredFence> entry = all.next();
                durable.put(entry.key, entry.value);
            }
        }
        delivered.addAll(pending);
        pending.clear();
        committedOffset = position;
        signal.commit(Map.of());
    }

    /** The limits the processor reads at its next start (a restart after {@link #crash}), as from the topics' settings. */
    void limits(FenceEnforcerTopology.Limits limits) {
        this.limits = limits;
    }

    /** A kill -9: the outputs {@code survives} picks are delivered, the others lost; then a restart from the committed offset. */
    void crash(Predicate<Output> survives) {
        for (Output output : pending) {
            if (survives.test(output)) {
                delivered.add(output);
            }
        }
        pending.clear();
        start();
    }

    /**
     * A kill -9 as Kafka's idempotent producer leaves it: of each output partition's records sent
     * since the last commit, a prefix is delivered. Outputs of one key share a partition of each
     * output topic, so per topic and key a prefix of random length survives.
     */
    void crashKeepingPrefixes(Random random) {
        Map<String, Integer> remaining = new HashMap<>();
        for (Output output : pending) {
            String partition = output.accepted() + "/" + key(output.id());
            int left = remaining.computeIfAbsent(partition, p -> random.nextInt((int) pending.stream()
                    .filter(o -> (o.accepted() + "/" + key(o.id())).equals(p)).count() + 1));
            if (left > 0) {
                delivered.add(output);
                remaining.put(partition, left - 1);
            } else {
                remaining.put(partition, 0);
            }
        }
        pending.clear();
        start();
    }

    private String key(int id) {
        byte[] key = input.get(id).key();
        return key == null ? "" : new String(key, StandardCharsets.UTF_8);
    }

    /** Every output delivered so far, in delivery order. */
    List<Output> delivered() {
        return delivered;
    }

    /** The live store's value of {@code key}. */
    StoredFence live(String key) {
        return live.get(storeKey(key));
    }

    /** The durable store's value of {@code key}. */
    StoredFence durable(String key) {
        return durable.get(storeKey(key));
    }

    /** How often the processor asked for a commit. */
    int commitRequests() {
        return commitRequests;
    }

    long committedOffset() {
        return committedOffset;
    }

    /** A new processor and new stores restored from the durable one; the mock context only carries them. */
    private void start() {
        context.resetForwards();
        context.resetCommit();
        live = Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore(STORE), Serdes.Bytes(), new FenceSerde())
                .withLoggingDisabled().withCachingDisabled().build();
        live.init(context.getStateStoreContext(), live);
        durable.forEach(live::put);
        signal = new CommitSignal(SIGNAL);
        signal.init(context.getStateStoreContext(), signal);
        processor = new FenceProcessor(new FenceProcessor.Nodes(STORE, SIGNAL, ACCEPTED, REJECTED, "markers"),
                settings(limits, verifier), metrics);
        processor.init(context);
        signal.commit(Map.of());
        position = committedOffset;
    }

    private static Bytes storeKey(String key) {
        return Bytes.wrap(key.getBytes(StandardCharsets.UTF_8));
    }

    private static String text(Headers headers, String name) {
        Header header = headers.lastHeader(name);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    /** A processor that reads the input alone: a record on another partition than murmur2's is rejected. */
    private static FenceEnforcerTopology.Settings settings(FenceEnforcerTopology.Limits limits, TokenVerifier verifier) {
        FenceEnforcerTopology.Settings settings = FenceEnforcerTopology.Settings.of("input", ACCEPTED, REJECTED, limits)
                .withPartitionMismatch(PartitionMismatch.REJECT);
        return verifier == null ? settings : settings.withVerifier(verifier);
    }
}
