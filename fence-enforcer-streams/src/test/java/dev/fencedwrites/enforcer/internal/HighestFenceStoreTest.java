package dev.fencedwrites.enforcer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.Fence;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.state.Stores;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The counting rule by which a task finds changelog records someone else wrote: offsets between two commits are its own
 * writes plus anyone else's; and a restore that never lowers a fence, within one batch of changelog records as across
 * batches. Against a real broker: {@code ZombieChangelogIT}.
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

    @Test
    void aLowerFenceLaterInTheSameRestoreBatchIsSkipped() {
        HighestFenceStore restoring = new HighestFenceStore(Stores.inMemoryKeyValueStore("fences").get());

        restoring.restore(List.of(changelog(0, fence(9, 1)), changelog(1, fence(5, 1)), changelog(2, fence(7, 1))));

        assertThat(fenceOf(restoring)).isEqualTo(new Fence(9, 1));
        assertThat(restoring.unrepaired().take()).containsExactly(new long[]{1, 2});
    }

    @Test
    void aHigherFenceLaterInTheSameBatchWinsAndABatchIsComparedWithTheStore() {
        HighestFenceStore restoring = new HighestFenceStore(Stores.inMemoryKeyValueStore("fences").get());

        restoring.restore(List.of(changelog(0, fence(5, 1)), changelog(1, fence(9, 1))));
        restoring.restore(List.of(changelog(2, fence(7, 1))));

        assertThat(fenceOf(restoring)).isEqualTo(new Fence(9, 1));
        assertThat(restoring.unrepaired().take()).containsExactly(new long[]{2, 2});
    }

    @Test
    void aTombstoneInTheBatchClearsTheKeyForWhatFollows() {
        HighestFenceStore restoring = new HighestFenceStore(Stores.inMemoryKeyValueStore("fences").get());

        restoring.restore(List.of(changelog(0, fence(9, 1)), changelog(1, null), changelog(2, fence(5, 1))));
        assertThat(fenceOf(restoring)).isEqualTo(new Fence(5, 1));

        restoring.restore(List.of(changelog(3, null)));
        assertThat(restoring.get(KEY)).isNull();
        assertThat(restoring.unrepaired().hasWaiting()).isFalse();
    }

    @Test
    void anUnreadableValueIsRestoredAsItIsAndAnEmptyBatchWritesNothing() {
        HighestFenceStore restoring = new HighestFenceStore(Stores.inMemoryKeyValueStore("fences").get());
        byte[] unreadable = {(byte) 0xff, 0, 1};

        restoring.restore(List.of(changelog(0, fence(9, 1)), changelog(1, unreadable)));
        restoring.restore(List.of());

        assertThat(restoring.get(KEY)).isEqualTo(unreadable);
    }

    @Test
    void anyBatchingOfTheSameRecordsRestoresWhatOneRecordAtATimeDoes() {
        List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        long[][] fences = {{3, 1}, {9, 2}, {9, 1}, {12, 1}, {4, 4}, {12, 2}, {11, 9}};
        for (int i = 0; i < fences.length; i++) {
            records.add(changelog(i, fence(fences[i][0], fences[i][1])));
        }
        HighestFenceStore single = new HighestFenceStore(Stores.inMemoryKeyValueStore("fences").get());
        records.forEach(record -> single.restore(List.of(record)));
        for (int split = 0; split <= records.size(); split++) {
            HighestFenceStore batched = new HighestFenceStore(Stores.inMemoryKeyValueStore("fences").get());
            batched.restore(records.subList(0, split));
            batched.restore(records.subList(split, records.size()));

            assertThat(fenceOf(batched)).as("split at %d", split).isEqualTo(fenceOf(single)).isEqualTo(new Fence(12, 2));
        }
    }

    private static byte[] fence(long token, long seq) {
        return new FenceSerde().serializer().serialize(null, StoredFence.of(new Fence(token, seq)));
    }

    private static ConsumerRecord<byte[], byte[]> changelog(long offset, byte[] value) {
        return new ConsumerRecord<>(CHANGELOG.topic(), CHANGELOG.partition(), offset, KEY.get(), value);
    }

    private static Fence fenceOf(HighestFenceStore store) {
        return new FenceSerde().deserializer().deserialize(null, store.get(KEY)).fence();
    }

    @Test
    void aStoreThatHeldValuesBeforeTheRestoreIsReadForEveryKey() {
        HighestFenceStore restoring = new HighestFenceStore(Stores.inMemoryKeyValueStore("fences").get());
        restoring.put(KEY, fence(9, 1));

        restoring.restore(List.of(changelog(4, fence(5, 1))));

        assertThat(fenceOf(restoring)).isEqualTo(new Fence(9, 1));
        assertThat(restoring.unrepaired().take()).containsExactly(new long[]{4, 4});
    }

    @Test
    void theRestoredKeysHaveNoFalseNegativesAsTheyGrow() {
        HighestFenceStore.RestoredKeys keys = new HighestFenceStore.RestoredKeys();
        List<Bytes> added = new ArrayList<>();
        for (int i = 0; i < 20 * HighestFenceStore.RestoredKeys.FIRST_CAPACITY; i++) {
            added.add(Bytes.wrap(("key-" + i).getBytes(StandardCharsets.UTF_8)));
        }
        assertThat(keys.addAll(added)).isTrue();

        assertThat(added).allMatch(key -> keys.mightContain(key.get()));
        long falsePositives = IntStream.range(0, 10_000)
                .filter(i -> keys.mightContain(("other-" + i).getBytes(StandardCharsets.UTF_8))).count();
        assertThat(falsePositives).as("of 10 000 keys never added").isLessThan(1_000);
    }

    @Test
    void aWriteThatIsNotARestoreMakesEveryLaterRestoreReadTheStore() {
        HighestFenceStore restoring = new HighestFenceStore(Stores.inMemoryKeyValueStore("fences").get());
        Bytes other = Bytes.wrap(new byte[]{2});
        restoring.restore(List.of(new ConsumerRecord<>(CHANGELOG.topic(), CHANGELOG.partition(), 0, other.get(),
                fence(3, 1))));

        restoring.put(KEY, fence(9, 1));
        restoring.restore(List.of(changelog(1, fence(5, 1))));

        assertThat(fenceOf(restoring)).isEqualTo(new Fence(9, 1));
    }
}
