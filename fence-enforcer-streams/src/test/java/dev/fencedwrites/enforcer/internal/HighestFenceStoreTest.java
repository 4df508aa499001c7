package dev.fencedwrites.enforcer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.state.Stores;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The counting rule by which a task finds changelog records someone else wrote: offsets between two commits are its own
 * writes plus anyone else's. Against a real broker: {@code ZombieChangelogIT}.
 */
class HighestFenceStoreTest {
    private static final TopicPartition CHANGELOG = new TopicPartition("app-fences-changelog", 0);
    private static final Bytes KEY = Bytes.wrap(new byte[]{1});

    private final HighestFenceStore store = new HighestFenceStore(Stores.inMemoryKeyValueStore("fences").get());

    @BeforeEach
    void watch() {
        store.watch();
    }

    @Test
    void ownWritesOnlyFindNothing() {
        store.commit(Map.of(CHANGELOG, 10L));
        store.put(KEY, new byte[]{1});
        store.putAll(List.of(KeyValue.pair(KEY, new byte[]{2}), KeyValue.pair(KEY, new byte[]{3})));
        store.delete(KEY);
        store.commit(Map.of(CHANGELOG, 14L));

        assertThat(store.unrepaired().hasWaiting()).isFalse();
    }

    @Test
    void moreOffsetsThanWritesAreSomeoneElses() {
        store.commit(Map.of(CHANGELOG, 10L));
        store.put(KEY, new byte[]{1});
        store.commit(Map.of(CHANGELOG, 13L));

        assertThat(store.unrepaired().take()).containsExactly(new long[]{11, 13});
        assertThat(store.unrepaired().hasWaiting()).isFalse();
    }

    @Test
    void theFirstCommitOnlySetsTheBaseline() {
        store.commit(Map.of(CHANGELOG, 500L));

        assertThat(store.unrepaired().hasWaiting()).isFalse();
    }

    @Test
    void anEmptyChangelogAtStartCountsFromOffsetZero() {
        store.commit(Map.of(CHANGELOG, -4L));
        store.put(KEY, new byte[]{1});
        store.commit(Map.of(CHANGELOG, 1L));

        assertThat(store.unrepaired().take()).containsExactly(new long[]{0, 1});
    }

    @Test
    void anIdleTaskFindsRecordsAfterItsLastOne() {
        store.commit(Map.of(CHANGELOG, 10L));
        store.idle(11);
        assertThat(store.unrepaired().hasWaiting()).isFalse();

        store.idle(13);
        assertThat(store.unrepaired().take()).containsExactly(new long[]{11, 12});
        store.idle(13);
        assertThat(store.unrepaired().hasWaiting()).isFalse();
    }

    @Test
    void aTaskThatWroteSinceItsCommitIsNotIdle() {
        store.commit(Map.of(CHANGELOG, 10L));
        store.put(KEY, new byte[]{1});

        assertThat(store.idle()).isFalse();
        store.idle(13);
        assertThat(store.unrepaired().hasWaiting()).isFalse();
    }

    @Test
    void aCommitAfterAnIdleCheckDoesNotCountTheSameRecordsAgain() {
        store.commit(Map.of(CHANGELOG, 10L));
        store.idle(13);
        assertThat(store.unrepaired().take()).containsExactly(new long[]{11, 12});

        store.commit(Map.of(CHANGELOG, 10L));
        store.idle(13);
        assertThat(store.unrepaired().hasWaiting()).isFalse();
        store.put(KEY, new byte[]{1});
        store.commit(Map.of(CHANGELOG, 13L));
        assertThat(store.unrepaired().hasWaiting()).isFalse();
    }

    @Test
    void aClosedProcessorStopsTheCounting() {
        store.commit(Map.of(CHANGELOG, 10L));
        store.unwatch();
        store.commit(Map.of(CHANGELOG, 20L));

        assertThat(store.unrepaired().hasWaiting()).isFalse();
    }

    @Test
    void rangesAreKeptOnDiskUntilTheCommitAfterTheirRepair(@TempDir Path dir) {
        Path file = dir.resolve(UnrepairedRanges.FILE);
        UnrepairedRanges ranges = new UnrepairedRanges(file);
        ranges.add(11, 13);
        ranges.add(20, 20);
        assertThat(new UnrepairedRanges(file).all()).containsExactly(new long[]{11, 13}, new long[]{20, 20});

        List<long[]> taken = ranges.take();
        ranges.giveBack(taken.get(1));
        assertThat(new UnrepairedRanges(file).all()).as("read, not committed yet").hasSize(2);
        ranges.committed();
        assertThat(new UnrepairedRanges(file).all()).containsExactly(new long[]{20, 20});
        ranges.take();
        ranges.committed();
        assertThat(file).doesNotExist();
    }

    @Test
    void nothingIsCountedBeforeTheProcessorWatches() {
        HighestFenceStore standby = new HighestFenceStore(Stores.inMemoryKeyValueStore("fences").get());
        standby.commit(Map.of(CHANGELOG, 10L));
        standby.commit(Map.of(CHANGELOG, 20L));

        assertThat(standby.unrepaired().hasWaiting()).isFalse();
        assertThat(standby.idle()).isFalse();
    }
}
