package dev.fencedwrites.enforcer;

import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.Stores;

/**
 * Where the enforcer keeps its fence store (issue 19), the setting {@value FenceEnforcerConfig#STATE_STORE_TYPE}; the
 * values are Kafka Streams' own names for the two built-in key-value stores ({@code default.dsl.store}). Either way the
 * store has a record cache in front and a changelog topic behind it, so the fences survive a crash and move with their
 * partitions alike; the rule and every decision are the same.
 */
public enum FenceStoreType {
    /**
     * The default: RocksDB files under {@code state.dir}. The heap holds only the record cache; a restart on the same
     * state directory restores only the changelog records written since the last checkpoint.
     */
    ROCKS_DB("rocksDB"),
    /**
     * Every key's fence on the heap (Kafka Streams' {@code InMemoryKeyValueStore}, a sorted map). Faster per record, but
     * every start restores the whole changelog, and the heap must hold every key the store holds.
     */
    IN_MEMORY("in_memory");

    private final String configValue;

    FenceStoreType(String configValue) {
        this.configValue = configValue;
    }

    /** The setting's value: {@code rocksDB} or {@code in_memory}. */
    public String configValue() {
        return configValue;
    }

    /**
     * The store type a setting value names, in any case.
     *
     * @throws IllegalArgumentException for any other value
     */
    public static FenceStoreType of(String value) {
        for (FenceStoreType type : values()) {
            if (type.configValue.equalsIgnoreCase(value.strip())) {
                return type;
            }
        }
        throw new IllegalArgumentException("unknown store type '" + value + "': expected rocksDB or in_memory");
    }

    /** The store of this type named {@code name}, for {@code Stores.keyValueStoreBuilder}. */
    KeyValueBytesStoreSupplier supplier(String name) {
        return this == IN_MEMORY ? Stores.inMemoryKeyValueStore(name) : Stores.persistentKeyValueStore(name);
    }
}
