package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.enforcer.internal.FenceStoreRocksDBConfig;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.state.RocksDBConfigSetter;
import org.junit.jupiter.api.Test;
import org.rocksdb.Options;

/**
 * The enforcer's Kafka Streams properties always name its own RocksDB config setter for the fence store, with or without
 * fence expiry; a setter of the user's own is kept to run first. (That a setter Kafka Streams could not make is refused at
 * start is {@code RefusedAtStartTest}'s; that the options reach RocksDB is {@code FenceStoreRocksDBConfigTest}'s.)
 */
class FenceStoreOptionsTest {
    private static Properties streamsProperties(Map<String, String> extra) {
        Map<String, String> settings = new HashMap<>(Map.of(FenceEnforcerConfig.BOOTSTRAP_SERVERS, "127.0.0.1:9092",
                FenceEnforcerConfig.APPLICATION_ID, "store-options-test",
                FenceEnforcerConfig.TOKEN_VERIFICATION_ENABLE, "false"));
        settings.putAll(extra);
        return FenceEnforcerConfig.of(settings).streamsProperties();
    }

    @Test
    void theEnforcersSetterIsUsedWhenTheUserNamesNone() {
        Properties streams = streamsProperties(Map.of());
        assertThat(streams.get(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG)).isEqualTo(FenceStoreRocksDBConfig.class);
        assertThat(streams).doesNotContainKey(FenceStoreRocksDBConfig.EXPIRY_CONFIG)
                .doesNotContainKey(FenceStoreRocksDBConfig.USER_SETTER_CONFIG);
    }

    @Test
    void theSetterIsToldWhenTheStoresHaveNoCacheUnderEitherName() {
        assertThat(streamsProperties(Map.of())).doesNotContainKey(FenceStoreRocksDBConfig.WITHOUT_CACHE_CONFIG);
        assertThat(streamsProperties(Map.of("streams.statestore.cache.max.bytes", "1")))
                .doesNotContainKey(FenceStoreRocksDBConfig.WITHOUT_CACHE_CONFIG);
        for (String name : new String[]{"streams.statestore.cache.max.bytes", "streams.cache.max.bytes.buffering"}) {
            assertThat(streamsProperties(Map.of(name, "0")).get(FenceStoreRocksDBConfig.WITHOUT_CACHE_CONFIG)).as(name)
                    .isEqualTo(Boolean.TRUE);
        }
    }

    @Test
    void underExpiryTheSetterIsToldSo() {
        Properties streams = streamsProperties(Map.of(FenceEnforcerConfig.FENCE_EXPIRY_ENABLE, "true",
                FenceEnforcerConfig.TOKEN_VERIFICATION_ENABLE, "true", "etcd.endpoints", "http://127.0.0.1:1"));
        assertThat(streams.get(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG)).isEqualTo(FenceStoreRocksDBConfig.class);
        assertThat(streams.get(FenceStoreRocksDBConfig.EXPIRY_CONFIG)).isEqualTo(Boolean.TRUE);
    }

    @Test
    void aSetterOfTheUsersOwnRunsFirst() {
        Properties streams = streamsProperties(Map.of("streams.rocksdb.config.setter", OwnSetter.class.getName()));
        assertThat(streams.get(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG)).isEqualTo(FenceStoreRocksDBConfig.class);
        assertThat(streams.get(FenceStoreRocksDBConfig.USER_SETTER_CONFIG)).isEqualTo(OwnSetter.class);

        Properties named = streamsProperties(Map.of("streams.rocksdb.config.setter",
                FenceStoreRocksDBConfig.class.getName()));
        assertThat(named).as("the enforcer's own setter named by the user: nothing to chain")
                .doesNotContainKey(FenceStoreRocksDBConfig.USER_SETTER_CONFIG);
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
