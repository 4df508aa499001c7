package dev.fencedwrites.enforcer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.enforcer.FenceEnforcerTopology;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Properties;
import java.util.stream.Stream;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The options reach RocksDB itself: each case opens a real RocksDB store through Kafka Streams (its options adapter passes
 * some options on and silently keeps others) and reads the OPTIONS file RocksDB wrote for it.
 */
class FenceStoreRocksDBConfigTest {
    @TempDir
    Path stateDir;

    @Test
    void underExpiryTheFenceStoreOpensWithSmallMemtablesAndEarlyFullCompactions() {
        assertThat(openedWith(FenceEnforcerTopology.STORE, true)).contains("write_buffer_size=1048576")
                .contains("max_size_amplification_percent=25").contains("level0_file_num_compaction_trigger=2")
                .contains("compaction_style=kCompactionStyleUniversal");
    }

    @Test
    void withoutExpiryOrForAnotherStoreKafkaStreamsDefaultsStay() {
        assertThat(openedWith(FenceEnforcerTopology.STORE, false)).contains("write_buffer_size=16777216")
                .contains("max_size_amplification_percent=200").contains("level0_file_num_compaction_trigger=4");
        assertThat(openedWith("another-store", true)).contains("write_buffer_size=16777216")
                .contains("max_size_amplification_percent=200");
    }

    /** Opens and closes {@code store} as the enforcer would, and returns the RocksDB OPTIONS file it left. */
    private String openedWith(String store, boolean expiry) {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "options-test");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:9");
        props.put(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, FenceStoreRocksDBConfig.class);
        if (expiry) {
            props.put(FenceStoreRocksDBConfig.EXPIRY_CONFIG, Boolean.TRUE);
        }
        Path dir = stateDir.resolve(store + "-" + expiry);
        MockProcessorContext<byte[], byte[]> context = new MockProcessorContext<>(props, new TaskId(0, 0), dir.toFile());
        KeyValueStore<Bytes, byte[]> opened = Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(store),
                Serdes.Bytes(), Serdes.ByteArray()).withLoggingDisabled().withCachingDisabled().build();
        opened.init(context.getStateStoreContext(), opened);
        opened.close();
        try (Stream<Path> files = Files.walk(dir)) {
            Path newest = files.filter(f -> f.getFileName().toString().startsWith("OPTIONS-"))
                    .max(Comparator.comparing(Path::toString)).orElseThrow();
            return Files.readString(newest);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
