package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.enforcer.FenceEnforcerTopology;
import java.util.Map;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.state.RocksDBConfigSetter;
import org.rocksdb.CompactionOptionsUniversal;
import org.rocksdb.CompactionStyle;
import org.rocksdb.Options;

/**
 * RocksDB options for the fence store under fence expiry, set through Kafka Streams' {@code rocksdb.config.setter}; every
 * other store, and the fence store without expiry, keeps Kafka Streams' defaults (universal compaction, 16 MiB memtables,
 * a compaction considered at 4 sorted runs). A setter of the user's own ({@value #USER_SETTER_CONFIG}, from {@code
 * streams.rocksdb.config.setter}) runs first, for every store; for the fence store under expiry, the write buffer size,
 * the compaction style, the compaction trigger and the whole universal-compaction block are then set over it.
 *
 * <p>Under expiry the store deletes about as many fences as it adds. RocksDB drops a tombstone only in a compaction that
 * includes the store's oldest sorted run, and with the defaults that waits until the newer runs reach twice the oldest's
 * size ({@code max_size_amplification_percent} 200), behind 16 MiB memtables: the store holds many times the bytes of its
 * live fences. Here a memtable takes {@value #WRITE_BUFFER_BYTES} bytes, a compaction is considered at every second sorted
 * run, and a full one runs once the newer runs reach {@value #MAX_SIZE_AMPLIFICATION_PERCENT} % of the oldest, which
 * rewrites the whole store that often; {@code ./fence bench --only churn} measures the bytes and the cost. Source: RocksDB's
 * wiki, "Universal Compaction".
 *
 * <p>RocksDB's deletion-triggered compaction ({@code CompactOnDeletionCollectorFactory}) would be the direct tool, but Kafka
 * Streams 4.3's options adapter does not pass table-properties collectors on to the column family, so it is not used.
 */
public final class FenceStoreRocksDBConfig implements RocksDBConfigSetter {
    /** The Kafka Streams property, set by the enforcer, that says fence expiry is on ({@code Boolean.TRUE}). */
    public static final String EXPIRY_CONFIG = "fenced-writes.fence.store.expiry";

    /** The Kafka Streams property, set by the enforcer, naming the user's own setter class, which runs first. */
    public static final String USER_SETTER_CONFIG = "fenced-writes.rocksdb.config.setter";

    /** Bytes of one memtable under expiry. */
    static final long WRITE_BUFFER_BYTES = 512L * 1024;

    /** Sorted runs that make RocksDB consider a compaction, under expiry. */
    static final int COMPACTION_TRIGGER_RUNS = 2;

    /** Universal compaction's {@code max_size_amplification_percent} under expiry. */
    static final int MAX_SIZE_AMPLIFICATION_PERCENT = 25;

    private RocksDBConfigSetter user;
    private CompactionOptionsUniversal universal;

    @Override
    public void setConfig(String storeName, Options options, Map<String, Object> configs) {
        if (configs.get(USER_SETTER_CONFIG) instanceof Class<?> type) {
            user = (RocksDBConfigSetter) Utils.newInstance(type);
            user.setConfig(storeName, options, configs);
        }
        if (!applies(storeName, configs)) {
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

    /** Whether the options apply to {@code storeName}: the fence store, with expiry on. */
    static boolean applies(String storeName, Map<String, Object> configs) {
        return FenceEnforcerTopology.STORE.equals(storeName) && Boolean.parseBoolean(String.valueOf(configs.get(EXPIRY_CONFIG)));
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
