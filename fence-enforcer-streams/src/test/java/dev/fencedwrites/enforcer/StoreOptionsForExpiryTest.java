package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencedwrites.enforcer.internal.FenceStoreRocksDBConfig;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.state.RocksDBConfigSetter;
import org.junit.jupiter.api.Test;
import org.rocksdb.Options;

/**
 * Under fence expiry the enforcer sets the fence store's RocksDB options; a setter of the user's own runs before them, and
 * one that cannot be loaded is refused at start, naming the setting.
 */
class StoreOptionsForExpiryTest {
    @Test
    void theEnforcersSetterIsUsedWhenTheUserNamesNone() {
        Properties streams = new Properties();
        FenceEnforcerApp.storeOptionsForExpiry(streams);
        assertThat(streams.get(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG)).isEqualTo(FenceStoreRocksDBConfig.class);
        assertThat(streams.get(FenceStoreRocksDBConfig.EXPIRY_CONFIG)).isEqualTo(Boolean.TRUE);
        assertThat(streams).doesNotContainKey(FenceStoreRocksDBConfig.USER_SETTER_CONFIG);
    }

    @Test
    void aSetterOfTheUsersOwnRunsFirst() {
        Properties streams = new Properties();
        streams.put(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, OwnSetter.class.getName());
        FenceEnforcerApp.storeOptionsForExpiry(streams);
        assertThat(streams.get(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG)).isEqualTo(FenceStoreRocksDBConfig.class);
        assertThat(streams.get(FenceStoreRocksDBConfig.USER_SETTER_CONFIG)).isEqualTo(OwnSetter.class);

        Properties named = new Properties();
        named.put(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, FenceStoreRocksDBConfig.class);
        FenceEnforcerApp.storeOptionsForExpiry(named);
        assertThat(named).as("the enforcer's own setter named by the user: nothing to chain")
                .doesNotContainKey(FenceStoreRocksDBConfig.USER_SETTER_CONFIG);
    }

    @Test
    void aSetterThatCannotBeLoadedIsRefusedNamingTheSetting() {
        for (String value : new String[]{"com.example.Missing", String.class.getName()}) {
            Properties streams = new Properties();
            streams.put(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, value);
            assertThatThrownBy(() -> FenceEnforcerApp.storeOptionsForExpiry(streams)).isInstanceOf(ConfigException.class)
                    .hasMessageContaining("streams.rocksdb.config.setter").hasMessageContaining(value);
        }
    }

    /** A user's setter. */
    public static final class OwnSetter implements RocksDBConfigSetter {
        @Override
        public void setConfig(String storeName, Options options, Map<String, Object> configs) {
            options.setMaxWriteBufferNumber(5);
        }

        @Override
        public void close(String storeName, Options options) {
        }
    }
}
