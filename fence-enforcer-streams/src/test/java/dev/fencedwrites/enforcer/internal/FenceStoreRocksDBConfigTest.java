package dev.fencedwrites.enforcer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.enforcer.FenceEnforcerTopology;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.RocksDBConfigSetter;
import org.apache.kafka.streams.state.Stores;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.Options;

/**
 * The options reach RocksDB itself: each case opens a real RocksDB store through Kafka Streams (its options adapter passes
 * some options on and silently keeps others) and reads the OPTIONS file RocksDB wrote for it, in the store's default column
 * family (Kafka Streams' own {@code offsets} column family has options of its own, a 1 MiB memtable among them).
 */
class FenceStoreRocksDBConfigTest {
    private static final AtomicInteger OWN_CLOSED = new AtomicInteger();

    @TempDir
    Path stateDir;

    @Test
    void underExpiryTheFenceStoreOpensWithSmallMemtablesAndEarlyFullCompactions() {
        assertThat(openedWith(FenceEnforcerTopology.STORE, true, null)).contains("write_buffer_size=524288")
                .contains("max_size_amplification_percent=25").contains("level0_file_num_compaction_trigger=2")
                .contains("compaction_style=kCompactionStyleUniversal");
    }

    @Test
    void withoutTheCacheTheFenceStoreHasBloomFiltersForMissesOnEveryLevelAndTheMemtable() {
        for (boolean expiry : new boolean[]{false, true}) {
            assertThat(openedWith(FenceEnforcerTopology.STORE, expiry, null, "0")).as("expiry %s", expiry)
                    .contains("optimize_filters_for_hits=false").contains("memtable_whole_key_filtering=true")
                    .contains("memtable_prefix_bloom_size_ratio=0.100000");
        }
    }

    @Test
    void withTheCacheTheFenceStoreKeepsKafkaStreamsFilterOptions() {
        for (String cache : new String[]{null, "10485760", "1"}) {
            assertThat(openedWith(FenceEnforcerTopology.STORE, false, null, cache)).as("cache %s", cache)
                    .contains("optimize_filters_for_hits=true").contains("memtable_whole_key_filtering=false");
        }
    }

    @Test
    void withoutExpiryOrForAnotherStoreKafkaStreamsDefaultsStay() {
        assertThat(openedWith(FenceEnforcerTopology.STORE, false, null)).contains("write_buffer_size=16777216")
                .contains("max_size_amplification_percent=200").contains("level0_file_num_compaction_trigger=4");
        assertThat(openedWith("another-store", true, null)).contains("write_buffer_size=16777216")
                .contains("max_size_amplification_percent=200").contains("level0_file_num_compaction_trigger=4")
                .contains("optimize_filters_for_hits=true").contains("memtable_whole_key_filtering=false");
    }

    @Test
    void aSetterOfTheUsersOwnRunsFirstForEveryStoreAndIsClosed() {
        int closed = OWN_CLOSED.get();
        assertThat(openedWith(FenceEnforcerTopology.STORE, true, OwnSetter.class)).contains("max_write_buffer_number=5")
                .contains("write_buffer_size=524288").contains("max_size_amplification_percent=25");
        assertThat(openedWith("another-store", true, OwnSetter.class)).contains("max_write_buffer_number=5")
                .contains("write_buffer_size=8388608").contains("max_size_amplification_percent=200");
        assertThat(OWN_CLOSED.get() - closed).as("the user's setter closed with each store").isEqualTo(2);
    }

    /**
     * Opens and closes {@code store} as the enforcer would, and returns the options RocksDB wrote for its default column
     * family.
     */
    private String openedWith(String store, boolean expiry, Class<?> own) {
        return openedWith(store, expiry, own, null);
    }

    /** {@link #openedWith(String, boolean, Class)} with {@code statestore.cache.max.bytes} at {@code cache} (null: unset). */
    private String openedWith(String store, boolean expiry, Class<?> own, String cache) {
        Properties props = new Properties();
        if (cache != null) {
            props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, cache);
        }
        if ("0".equals(cache)) {
            props.put(FenceStoreRocksDBConfig.WITHOUT_CACHE_CONFIG, Boolean.TRUE); // as FenceEnforcerConfig says it
        }
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "options-test");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:9");
        props.put(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, FenceStoreRocksDBConfig.class);
        if (expiry) {
            props.put(FenceStoreRocksDBConfig.EXPIRY_CONFIG, Boolean.TRUE);
        }
        if (own != null) {
            props.put(FenceStoreRocksDBConfig.USER_SETTER_CONFIG, own);
        }
        Path dir = stateDir.resolve(store + "-" + expiry + "-" + (own != null) + "-" + cache);
        MockProcessorContext<byte[], byte[]> context = new MockProcessorContext<>(props, new TaskId(0, 0), dir.toFile());
        KeyValueStore<Bytes, byte[]> opened = Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(store),
                Serdes.Bytes(), Serdes.ByteArray()).withLoggingDisabled().withCachingDisabled().build();
        opened.init(context.getStateStoreContext(), opened);
        opened.close();
        try (Stream<Path> files = Files.walk(dir)) {
            Path newest = files.filter(f -> f.getFileName().toString().startsWith("OPTIONS-"))
                    .max(Comparator.comparing(Path::toString)).orElseThrow();
            return defaultColumnFamily(Files.readString(newest));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The {@code [CFOptions "default"]} section of a RocksDB OPTIONS file. */
    static String defaultColumnFamily(String options) {
        int from = options.indexOf("[CFOptions \"default\"]");
        assertThat(from).as("the default column family's section in:%n%s", options).isNotNegative();
        int to = options.indexOf("\n[", from + 1);
        return options.substring(from, to < 0 ? options.length() : to);
    }

    /** A user's setter: more memtables, and 8 MiB each. */
    public static final class OwnSetter implements RocksDBConfigSetter {
        @Override
        public void setConfig(String storeName, Options options, Map<String, Object> configs) {
            options.setMaxWriteBufferNumber(5);
            options.setWriteBufferSize(8L * 1024 * 1024);
        }

        @Override
        public void close(String storeName, Options options) {
            OWN_CLOSED.incrementAndGet();
        }
    }
}
