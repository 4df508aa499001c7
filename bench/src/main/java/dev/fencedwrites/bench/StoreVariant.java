package dev.fencedwrites.bench;

import dev.fencedwrites.enforcer.FenceEnforcerConfig;
import java.util.Locale;
import java.util.Map;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/**
 * How the stateful baseline's store is built: which bytes store, whether the record cache is on, whether it has a
 * changelog. The parts of the state path's cost are the differences between these, measured in one run.
 *
 * @param store     the bytes store under the cache
 * @param cache     Kafka Streams' record cache ({@code withCachingEnabled}): puts are flushed to the store and the changelog
 *                  at each commit or eviction
 * @param changelog a changelog topic ({@code withLoggingEnabled}, Kafka Streams' defaults): one record per put reaching the
 *                  store
 */
record StoreVariant(Store store, boolean cache, boolean changelog) {
    /**
     * The store as the enforcer builds its fence store under {@code config}: RocksDB with the record cache and Kafka Streams'
     * options, or, when {@code statestore.cache.max.bytes} is 0, without the cache and with the fence store's bloom filters;
     * a changelog.
     */
    static StoreVariant asTheFenceStore(FenceEnforcerConfig config) {
        boolean cache = config.fenceStoreCache();
        return new StoreVariant(cache ? Store.ROCKSDB : Store.ROCKSDB_TUNED, cache, true);
    }

    /** The bytes stores compared. */
    enum Store {
        /** Kafka Streams' persistent RocksDB store with its default options. */
        ROCKSDB("RocksDB"),
        /** The same with the fence store's options ({@link MissHeavyRocksDBConfig}). */
        ROCKSDB_TUNED("RocksDB tuned for misses"),
        /** {@link HashMapStore}. */
        HASH_MAP("hash map");

        private final String label;

        Store(String label) {
            this.label = label;
        }
    }

    /** {@code RocksDB, cache on, changelog on}. */
    String describe() {
        return String.format(Locale.ROOT, "%s, cache %s, changelog %s", store.label, cache ? "on" : "off",
                changelog ? "on" : "off");
    }

    /** A store of {@code Long} values per bytes key named {@code name}, built as this variant says. */
    StoreBuilder<KeyValueStore<Bytes, Long>> builder(String name) {
        KeyValueBytesStoreSupplier supplier = store == Store.HASH_MAP
                ? HashMapStore.supplier(name)
                : Stores.persistentKeyValueStore(name);
        StoreBuilder<KeyValueStore<Bytes, Long>> builder = Stores.keyValueStoreBuilder(supplier, Serdes.Bytes(), Serdes.Long());
        builder = cache ? builder.withCachingEnabled() : builder.withCachingDisabled();
        return changelog ? builder.withLoggingEnabled(Map.of()) : builder.withLoggingDisabled();
    }

    /** Kafka Streams properties the variant needs beyond the run's: the RocksDB options of the tuned store. */
    Map<String, Object> streamsProperties() {
        return store == Store.ROCKSDB_TUNED
                ? Map.of(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, MissHeavyRocksDBConfig.class)
                : Map.of();
    }
}
