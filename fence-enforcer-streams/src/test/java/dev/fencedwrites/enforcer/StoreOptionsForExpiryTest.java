package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.enforcer.internal.FenceStoreRocksDBConfig;
import java.util.Properties;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;

/** Under fence expiry the enforcer sets the fence store's RocksDB options, unless the user names a setter of their own. */
class StoreOptionsForExpiryTest {
    @Test
    void theEnforcersSetterIsUsedWhenTheUserNamesNone() {
        Properties streams = new Properties();
        FenceEnforcerApp.storeOptionsForExpiry(streams);
        assertThat(streams.get(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG)).isEqualTo(FenceStoreRocksDBConfig.class);
        assertThat(streams.get(FenceStoreRocksDBConfig.EXPIRY_CONFIG)).isEqualTo(Boolean.TRUE);
    }

    @Test
    void aSetterOfTheUsersOwnIsKept() {
        Properties streams = new Properties();
        streams.put(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, "com.example.OwnRocksDBConfig");
        FenceEnforcerApp.storeOptionsForExpiry(streams);
        assertThat(streams.get(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG)).isEqualTo("com.example.OwnRocksDBConfig");
    }
}
