package dev.fencedwrites.bench;

import dev.fencedwrites.enforcer.FenceEnforcerTopology;
import java.util.Map;
import org.apache.kafka.streams.state.RocksDBConfigSetter;
import org.rocksdb.Options;

/** The fence store's RocksDB options ({@link FenceEnforcerTopology#fenceStoreRocksDBOptions}) for every store of a topology. */
public final class MissHeavyRocksDBConfig implements RocksDBConfigSetter {
    @Override
    public void setConfig(String storeName, Options options, Map<String, Object> configs) {
        FenceEnforcerTopology.fenceStoreRocksDBOptions(options);
    }

    @Override
    public void close(String storeName, Options options) {
    }
}
