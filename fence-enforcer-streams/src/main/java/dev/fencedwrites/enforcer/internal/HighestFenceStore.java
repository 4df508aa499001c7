package dev.fencedwrites.enforcer.internal;

import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnels;
import dev.fencedwrites.contract.Fence;
import java.io.File;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsMetrics;
import org.apache.kafka.streams.processor.CommitCallback;
import org.apache.kafka.streams.processor.StateRestoreCallback;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.processor.internals.RecordBatchingStateRestoreCallback;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fence store's bytes store: the supplied one (RocksDB), except that a restore from the changelog never lowers a key's
 * fence. A changelog record whose fence is below the one already restored for its key is one a zombie wrote: under
 * {@code at_least_once} nothing fences an instance that lost its tasks (no producer epochs, KIP-447 needs transactions), so
 * one that was paused, or parked waiting for etcd, past {@code max.poll.interval.ms} still flushes its older fences to the
 * changelog after the new owner wrote newer ones. Such a record is skipped (and logged): a fence only ever rises, so
 * nothing else ever is. Limit: the changelog's cleaner keeps the last record of each key, so once it has removed the
 * higher record behind a zombie's lower one, the higher fence is gone from the changelog; so under {@code at_least_once}
 * the skipped keys are written again after the restore, and {@link ChangelogWatch} finds a zombie's records written while
 * the task runs, by counting: the changelog offsets between two commits of the task are its own writes plus anyone else's.
 *
 * <p>Restoring reads the stored value of each key a batch of changelog records writes (one RocksDB get per key, the first
 * time the batch meets it; after that the batch's own value), then writes the batch as RocksDB's own restore does (one
 * write batch). Into a store that was empty when the restore began (a lost state directory, a task taken over without a
 * standby) the get is skipped for a key a Bloom filter of the keys restored so far has not seen: such a key has no value
 * ({@link RestoredKeys}). A record whose key has no value is written without reading it. Tombstones pass through.
 * Thread-safe as the supplied store is (one stream thread per task).
 */
public final class HighestFenceStore implements KeyValueStore<Bytes, byte[]> {
    private static final Logger LOG = LoggerFactory.getLogger(HighestFenceStore.class);

    private final KeyValueStore<Bytes, byte[]> inner;
    private final FenceSerde serde = new FenceSerde();
    private TaskId task;
    /** Whether the task's processor counts changelog offsets ({@link #watch()}); false while restoring and as a standby. */
    private boolean watching;
    /** The changelog offset of the last record known at the last commit (-1: none known yet), and whether it is known. */
    private long lastOffset = -1;
    private boolean baselined;
    /** Records this store's puts and deletes sent to the changelog since the last commit (one each, by the logging layer). */
    private long writes;
    /** Changelog ranges that may hold records below the store's values, kept in the task directory once initialised. */
    private UnrepairedRanges unrepaired = new UnrepairedRanges(null);
    /** The keys restored since the store opened empty; {@code null} before the first restore or when it was not empty. */
    private volatile RestoredKeys restoredKeys;
    /** Whether a restore has looked at the store since it was opened. */
    private boolean restoreStarted;

    /** A supplier of stores like {@code supplier}'s whose restores never lower a fence. */
    public static KeyValueBytesStoreSupplier supplier(KeyValueBytesStoreSupplier supplier) {
        return new KeyValueBytesStoreSupplier() {
            @Override
            public String name() {
                return supplier.name();
            }

            @Override
            public KeyValueStore<Bytes, byte[]> get() {
                return new HighestFenceStore(supplier.get());
            }

            @Override
            public String metricsScope() {
                return supplier.metricsScope();
            }
        };
    }

    HighestFenceStore(KeyValueStore<Bytes, byte[]> inner) {
        this.inner = inner;
    }

    @Override
    public void init(StateStoreContext context, StateStore root) {
        task = context.taskId();
        unrepaired = new UnrepairedRanges(context.stateDir().toPath().resolve(UnrepairedRanges.FILE));
        restoreStarted = false;
        restoredKeys = null;
        inner.init(new RestoreContext(context), root);
    }

    /**
     * Writes what the changelog restores, keeping the higher fence of a key; each record in order, against the key's value
     * as restored so far (this batch's, else the store's). The batch is written with one write batch ({@code putAll}: for
     * RocksDB one JNI call instead of one per record; a key's last value wins). The offsets of records skipped are kept
     * ({@link UnrepairedRanges}): once the task runs, their keys' fences are written again.
     */
    void restore(Collection<ConsumerRecord<byte[], byte[]>> records) {
        long firstSkipped = -1;
        long lastSkipped = -1;
        if (!restoreStarted) {
            restoreStarted = true;
            try (KeyValueIterator<Bytes, byte[]> all = inner.all()) {
                restoredKeys = all.hasNext() ? null : new RestoredKeys();
            }
        }
        Map<Bytes, byte[]> batch = new LinkedHashMap<>();
        for (ConsumerRecord<byte[], byte[]> record : records) {
            Bytes key = Bytes.wrap(record.key());
            byte[] current = record.value() == null ? null : batch.containsKey(key) ? batch.get(key) : stored(key);
            if (current != null) {
                Fence restored;
                Fence incoming;
                try {
                    restored = serde.deserializer().deserialize(null, current).fence();
                    incoming = serde.deserializer().deserialize(null, record.value()).fence();
                } catch (SerializationException e) {
                    // Restored as it is, as without this store: only a read of the key fails, and only while it is the last.
                    LOG.warn("restoring the fence store of task {}: a value of a {}-byte key cannot be read ({}); restored "
                            + "as it is", task, record.key().length, e.getMessage());
                    batch.put(key, record.value());
                    continue;
                }
                // A value without a fence remembers only rejections of a key that has none: below any fence.
                if (restored != null && (incoming == null || higher(restored, incoming))) {
                    LOG.warn("restoring the fence store of task {}: skipped a changelog record that would lower the fence of a"
                            + " {}-byte key from {} to {} (written by an instance that had lost the task); the higher fence is "
                            + "written again once the task runs", task, record.key().length, restored, incoming);
                    firstSkipped = firstSkipped < 0 ? record.offset() : firstSkipped;
                    lastSkipped = record.offset();
                    continue;
                }
            }
            batch.put(key, record.value());
        }
        List<KeyValue<Bytes, byte[]>> writes = new ArrayList<>(batch.size());
        batch.forEach((key, value) -> writes.add(KeyValue.pair(key, value)));
        inner.putAll(writes);
        if (restoredKeys != null && !restoredKeys.addAll(batch.keySet())) {
            restoredKeys = null; // too many keys to remember: every key is read from the store from now on
        }
        if (firstSkipped >= 0) {
            unrepaired.add(firstSkipped, lastSkipped);
        }
    }

    /** The stored value of {@code key}, without reading the store when a restore into an empty store never wrote it. */
    private byte[] stored(Bytes key) {
        return restoredKeys == null || restoredKeys.mightContain(key.get()) ? inner.get(key) : null;
    }

    /**
     * The keys a restore into an empty store has written: Bloom filters (Guava's, {@value #FALSE_POSITIVES} false positives
     * each, so a few per cent over all of them; 7 bits set per key, each a compare-and-set, which is most of the restore's
     * own time) each four times the capacity of the one before, from {@value #FIRST_CAPACITY} keys, so that memory follows
     * the keys restored (about 1.2 bytes per key)
     * and no count is needed up front. No false negatives: a key it has not seen has no value in the store.
     * Bounded: past {@value #MAX_KEYS} keys (about 6 MB) it gives up and the restore reads every key from the store again.
     * Dropped when the task's processor starts or anything but a restore writes to the store (a standby, whose restore
     * never ends, keeps it to the bound). A value that cannot be read, for a key without a value, is restored without a
     * warning (nothing is read to compare it with); a read of the key then fails, as without this store.
     */
    static final class RestoredKeys {
        static final int FIRST_CAPACITY = 1 << 14;
        static final double FALSE_POSITIVES = 0.01;
        static final int MAX_KEYS = 1 << 22;
        private final List<BloomFilter<byte[]>> filters = new ArrayList<>();
        private int capacity = FIRST_CAPACITY;
        private int inLast;
        private long total;

        RestoredKeys() {
            filters.add(BloomFilter.create(Funnels.byteArrayFunnel(), capacity, FALSE_POSITIVES));
        }

        boolean mightContain(byte[] key) {
            for (BloomFilter<byte[]> filter : filters) {
                if (filter.mightContain(key)) {
                    return true;
                }
            }
            return false;
        }

        /** Adds {@code keys}; false when that passed {@link #MAX_KEYS} and this set can no longer answer. */
        boolean addAll(Collection<Bytes> keys) {
            for (Bytes key : keys) {
                if (inLast == capacity) {
                    capacity *= 4;
                    filters.add(BloomFilter.create(Funnels.byteArrayFunnel(), capacity, FALSE_POSITIVES));
                    inLast = 0;
                }
                if (!filters.get(filters.size() - 1).put(key.get())) {
                    continue; // seen before (or a false positive): counts nothing
                }
                inLast++;
                if (++total > MAX_KEYS) {
                    return false;
                }
            }
            return true;
        }
    }

    /**
     * The task's processor starts: from the next commit on, count this task's changelog writes. The commit that follows a
     * restore (Kafka Streams checkpoints as the task starts running) gives the baseline: the last changelog offset restored
     * or checkpointed.
     */
    synchronized void watch() {
        restoredKeys = null;
        watching = true;
        baselined = false;
        writes = 0;
    }

    /** The task's processor closed: nothing counts until it starts again (an active task recycled as a standby). */
    synchronized void unwatch() {
        watching = false;
    }

    /** The ranges that may hold records below the store's values (someone else's, or skipped by a restore). */
    UnrepairedRanges unrepaired() {
        return unrepaired;
    }

    /**
     * For an idle task (no changelog write since the last commit): {@code endOffset} is the changelog's end offset now;
     * every record from the last known one on is someone else's.
     */
    synchronized void idle(long endOffset) {
        if (watching && baselined && writes == 0 && endOffset - 1 > lastOffset) {
            unrepaired.add(lastOffset + 1, endOffset - 1);
            lastOffset = endOffset - 1;
        }
    }

    /** Whether nothing was written since the last commit and the last changelog offset is known. */
    synchronized boolean idle() {
        return watching && baselined && writes == 0;
    }

    private synchronized void wrote(long records) {
        writes += records;
        // A key written here is one the restored-keys filter has not seen: from now on every restore reads the store.
        restoredKeys = null;
    }

    /**
     * A commit: {@code offset} is the changelog offset of the last record this task wrote or restored, or negative when
     * unknown (Kafka Streams' {@code ProcessorStateManager}, KIP-1035's {@code StateStore#commit}). Offsets are assigned one
     * per appended record (no transaction markers under at_least_once), so more offsets than writes since the last commit
     * mean someone else wrote in between.
     */
    private synchronized void committed(long offset) {
        if (!watching) {
            return;
        }
        unrepaired.committed();
        if (offset < 0) {
            if (!baselined) {
                // Nothing restored or checkpointed: the changelog held no record when the task started.
                lastOffset = -1;
                baselined = true;
            }
        } else if (!baselined) {
            lastOffset = offset;
            baselined = true;
        } else if (offset > lastOffset) {
            if (offset - lastOffset > writes) {
                unrepaired.add(lastOffset + 1, offset);
            }
            lastOffset = offset;
        }
        // else: an idle check already counted past this task's last write.
        writes = 0;
    }

    /** Whether {@code a} is above {@code b}: a higher token, or the same token and a higher seq ({@link Fence#NO_SEQ} lowest). */
    static boolean higher(Fence a, Fence b) {
        return a.token() > b.token() || a.token() == b.token() && a.seq() > b.seq();
    }

    /** The store's context with the restore callback replaced by {@link #restore}. */
    private final class RestoreContext implements StateStoreContext {
        private final StateStoreContext context;

        RestoreContext(StateStoreContext context) {
            this.context = context;
        }

        @Override
        public void register(StateStore store, StateRestoreCallback callback) {
            context.register(store, (RecordBatchingStateRestoreCallback) HighestFenceStore.this::restore);
        }

        @Override
        public void register(StateStore store, StateRestoreCallback callback, CommitCallback onCommit) {
            context.register(store, (RecordBatchingStateRestoreCallback) HighestFenceStore.this::restore, onCommit);
        }

        @Override
        public String applicationId() {
            return context.applicationId();
        }

        @Override
        public TaskId taskId() {
            return context.taskId();
        }

        @Override
        public Optional<RecordMetadata> recordMetadata() {
            return context.recordMetadata();
        }

        @Override
        public Serde<?> keySerde() {
            return context.keySerde();
        }

        @Override
        public Serde<?> valueSerde() {
            return context.valueSerde();
        }

        @Override
        public File stateDir() {
            return context.stateDir();
        }

        @Override
        public StreamsMetrics metrics() {
            return context.metrics();
        }

        @Override
        public Map<String, Object> appConfigs() {
            return context.appConfigs();
        }

        @Override
        public Map<String, Object> appConfigsWithPrefix(String prefix) {
            return context.appConfigsWithPrefix(prefix);
        }
    }

    @Override
    public String name() {
        return inner.name();
    }

    @Override
    public void put(Bytes key, byte[] value) {
        inner.put(key, value);
        wrote(1);
    }

    @Override
    public byte[] putIfAbsent(Bytes key, byte[] value) {
        byte[] previous = inner.putIfAbsent(key, value);
        if (previous == null) {
            wrote(1);
        }
        return previous;
    }

    @Override
    public void putAll(List<KeyValue<Bytes, byte[]>> entries) {
        inner.putAll(new ArrayList<>(entries));
        wrote(entries.size());
    }

    @Override
    public byte[] delete(Bytes key) {
        byte[] previous = inner.delete(key);
        wrote(1);
        return previous;
    }

    @Override
    public byte[] get(Bytes key) {
        return inner.get(key);
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> range(Bytes from, Bytes to) {
        return inner.range(from, to);
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> reverseRange(Bytes from, Bytes to) {
        return inner.reverseRange(from, to);
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> all() {
        return inner.all();
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> reverseAll() {
        return inner.reverseAll();
    }

    @Override
    public <S extends Serializer<P>, P> KeyValueIterator<Bytes, byte[]> prefixScan(
            P prefix, S prefixKeySerializer) {
        return inner.prefixScan(prefix, prefixKeySerializer);
    }

    @Override
    public long approximateNumEntries() {
        return inner.approximateNumEntries();
    }

    @Override
    public void flush() {
        inner.flush();
    }

    @Override
    public void commit(Map<TopicPartition, Long> changelogOffsets) {
        inner.commit(changelogOffsets);
        if (changelogOffsets.size() == 1) {
            committed(changelogOffsets.values().iterator().next());
        }
    }

    @Override
    public Long committedOffset(TopicPartition partition) {
        return inner.committedOffset(partition);
    }

    @Override
    public boolean managesOffsets() {
        return inner.managesOffsets();
    }

    @Override
    public void close() {
        inner.close();
    }

    @Override
    public boolean persistent() {
        return inner.persistent();
    }

    @Override
    public boolean isOpen() {
        return inner.isOpen();
    }

    @Override
    public <R> QueryResult<R> query(Query<R> query, PositionBound positionBound, QueryConfig config) {
        return inner.query(query, positionBound, config);
    }

    @Override
    public Position getPosition() {
        return inner.getPosition();
    }
}
