package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.enforcer.FenceEnforcerTopology;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.state.RocksDBConfigSetter;
import org.rocksdb.CompactionOptionsUniversal;
import org.rocksdb.CompactionStyle;
import org.rocksdb.Options;

/**
 * RocksDB options for the fence store, set through Kafka Streams' {@code rocksdb.config.setter}; every other store keeps
 * Kafka Streams' defaults. A setter of the user's own ({@value #USER_SETTER_CONFIG}, from {@code
 * streams.rocksdb.config.setter}) runs first, for every store; the fence store's options are then set over it.
 *
 * <p>Without Kafka Streams' record cache ({@code statestore.cache.max.bytes=0}): every read reaches RocksDB, and the fence
 * store's reads mostly miss (each new key is read before its first fence is written: at 1M keys written once each, every
 * read), so every level gets a bloom filter (Kafka Streams sets {@code
 * optimize_filters_for_hits}, which leaves the largest sorted run without one, so a miss reads its index and a data
 * block), and the memtable gets one on whole keys (a miss skips the memtable's skip list). Memory: the largest run's
 * filter, about 10 bits per key (RocksDB holds filters outside the block cache, as Kafka Streams does not set {@code
 * cache_index_and_filter_blocks}), and a tenth of each memtable (1.6 MiB of a 16 MiB one, up to 3 per store). Source:
 * RocksDB's wiki, "RocksDB Bloom Filter" and "Memtable"; {@code ./fence bench --only state} measures them. With the cache
 * (Kafka Streams' default) they are not set: at 1M keys they cost the cached store 2.1 us a record under {@code
 * at_least_once}, outside the runs' spreads (3.2 in another run, within them), and gained nothing measurable under {@code
 * exactly_once_v2}. The enforcer says which ({@link #WITHOUT_CACHE_CONFIG}), as Kafka Streams reads the cache size.
 *
 * <p>Under fence expiry, also: the store deletes about as many fences as it adds. RocksDB drops a tombstone only in a
 * compaction that includes the store's oldest sorted run, and with the defaults that waits until the newer runs reach
 * twice the oldest's size ({@code max_size_amplification_percent} 200), behind 16 MiB memtables: the store holds many times
 * the bytes of its live fences. Here a memtable takes {@value #WRITE_BUFFER_BYTES} bytes, a compaction is considered at
 * every second sorted run, and a full one runs once the newer runs reach {@value #MAX_SIZE_AMPLIFICATION_PERCENT} % of the
 * oldest, which rewrites the whole store that often; {@code ./fence bench --only churn} measures the bytes and the cost.
 * Source: RocksDB's wiki, "Universal Compaction".
 *
 * <p>RocksDB's deletion-triggered compaction ({@code CompactOnDeletionCollectorFactory}) would be the direct tool, but Kafka
 * Streams 4.3's options adapter does not pass table-properties collectors on to the column family, so it is not used.
 */
public final class FenceStoreRocksDBConfig implements RocksDBConfigSetter {
    /** The Kafka Streams property, set by the enforcer, that says fence expiry is on ({@code Boolean.TRUE}). */
    public static final String EXPIRY_CONFIG = "fenced-writes.fence.store.expiry";

    /**
     * The Kafka Streams property, set by the enforcer, that says the stores have no record cache ({@code Boolean.TRUE}):
     * {@code statestore.cache.max.bytes}, or the older {@code cache.max.bytes.buffering}, is 0 as Kafka Streams reads them.
     */
    public static final String WITHOUT_CACHE_CONFIG = "fenced-writes.fence.store.without-cache";

    /** The Kafka Streams property, set by the enforcer, naming the user's own setter class, which runs first. */
    public static final String USER_SETTER_CONFIG = "fenced-writes.rocksdb.config.setter";

    /** Bytes of one memtable under expiry. */
    static final long WRITE_BUFFER_BYTES = 512L * 1024;

    /** Sorted runs that make RocksDB consider a compaction, under expiry. */
    static final int COMPACTION_TRIGGER_RUNS = 2;

    /** Universal compaction's {@code max_size_amplification_percent} under expiry. */
    static final int MAX_SIZE_AMPLIFICATION_PERCENT = 25;

    /** The memtable's bloom filter, as a fraction of the memtable's size (RocksDB's {@code memtable_prefix_bloom_size_ratio}). */
    static final double MEMTABLE_BLOOM_RATIO = 0.1;

    private RocksDBConfigSetter user;
    private CompactionOptionsUniversal universal;

    @Override
    public void setConfig(String storeName, Options options, Map<String, Object> configs) {
        if (configs.get(USER_SETTER_CONFIG) instanceof Class<?> type) {
            user = (RocksDBConfigSetter) Utils.newInstance(type);
            user.setConfig(storeName, options, configs);
        }
        if (!FenceEnforcerTopology.STORE.equals(storeName)) {
            return;
        }
        if (withoutCache(configs)) {
            forMisses(options);
        }
        if (!Boolean.parseBoolean(String.valueOf(configs.get(EXPIRY_CONFIG)))) {
            return;
        }
        options.setWriteBufferSize(WRITE_BUFFER_BYTES);
        options.setCompactionStyle(CompactionStyle.UNIVERSAL);
        options.setLevel0FileNumCompactionTrigger(COMPACTION_TRIGGER_RUNS);
        // RocksDB copies the struct, but the options keep it for their getter: released in close(), after the user's setter.
        universal = new CompactionOptionsUniversal();
        universal.setMaxSizeAmplificationPercent(MAX_SIZE_AMPLIFICATION_PERCENT);
        options.setCompactionOptionsUniversal(universal);
    }

    /** Whether the enforcer said the stores have no record cache ({@link #WITHOUT_CACHE_CONFIG}). */
    static boolean withoutCache(Map<String, Object> configs) {
        return Boolean.parseBoolean(String.valueOf(configs.get(WITHOUT_CACHE_CONFIG)));
    }

    /**
     * Sets the options of a store whose reads mostly miss over Kafka Streams': bloom filters on every level, and on the
     * memtable's whole keys.
     */
    public static void forMisses(Options options) {
        options.setOptimizeFiltersForHits(false);
        options.setMemtableWholeKeyFiltering(true);
        options.setMemtablePrefixBloomSizeRatio(MEMTABLE_BLOOM_RATIO);
    }

    /**
     * Makes this class Kafka Streams' {@code rocksdb.config.setter} in {@code streamsProperties}; a setter already named
     * there (the user's {@code streams.rocksdb.config.setter}) is kept to run first, and {@code expiry} says whether fence
     * expiry is on.
     *
     * @throws ConfigException naming {@code streams.rocksdb.config.setter} when the setter named is not a {@code
     *                         RocksDBConfigSetter} class on the class path
     */
    public static void install(Properties streamsProperties, boolean expiry) {
        if (expiry) {
            streamsProperties.put(EXPIRY_CONFIG, Boolean.TRUE);
        }
        Object own = streamsProperties.put(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, FenceStoreRocksDBConfig.class);
        if (own == null) {
            return;
        }
        String setting = "streams." + StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG;
        Class<?> type = (Class<?>) ConfigDef.parseType(setting, own, ConfigDef.Type.CLASS);
        if (!RocksDBConfigSetter.class.isAssignableFrom(type)) {
            throw new ConfigException(setting, own, "not a " + RocksDBConfigSetter.class.getName());
        }
        if (type != FenceStoreRocksDBConfig.class) {
            streamsProperties.put(USER_SETTER_CONFIG, type);
        }
    }

    @Override
    public void close(String storeName, Options options) {
        if (user != null) {
            user.close(storeName, options);
        }
        if (universal != null) {
            universal.close();
        }
    }
}
