package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.Fence;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.Cancellable;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One task's fence expiry: its partition's floor, and the scan that drops the fences below it. The floor is kept in
 * the fence store itself under {@link FenceExpiry#FLOOR_KEY} (not valid UTF-8, so no record key can be it: the processor rejects
 * such keys before the store), so it reaches the changelog in the same transaction as the tombstones of the fences it
 * replaces, and a restore brings it back before or with them. A key without a higher stored fence is fenced at
 * {@code (floor, no seq)} ({@link FenceProcessor}). The floor is raised on the stream thread, in a punctuation, to
 * {@link FenceExpiry#ready()}; the scan then runs in steps of {@link FenceExpiry#batch()} keys every {@link #STEP}, so
 * decisions never wait long for it. A restart scans again, since a scan's progress is not stored. Source:
 * docs/concepts/fence-expiry.md.
 *
 * <p>Stored form of the floor: a {@link StoredFence} whose fence is {@code (floor, no seq)} and whose lease slot holds the
 * wall-clock milliseconds at which it was raised. Not thread-safe: one instance per fence processor.
 */
final class ExpiryPass {
    private static final Logger LOG = LoggerFactory.getLogger(ExpiryPass.class);
    /** Time between two steps of a scan. */
    static final Duration STEP = Duration.ofMillis(100);

    private final FenceExpiry expiry;
    private final ProcessorContext<?, ?> context;
    private final KeyValueStore<Bytes, StoredFence> fences;
    private final PendingFences pending;
    private final int partition;
    private long floor;
    /** The last key examined ({@code null}: none yet in this pass over the key space). */
    private Bytes cursor;
    /**
     * Where the current scan ends: the cursor when the floor was last raised during it, after one wrap around the key
     * space; {@code null} when it ends at the end of the key space.
     */
    private Bytes stopAt;
    private boolean wrapped;
    private Cancellable stepper;
    private final Cancellable looking;
    private long scanStartNanos;
    private long examined;
    private long expiredInScan;

    /**
     * Reads the partition's floor from the store (a restore brought it back) and schedules the look for a new one; a floor
     * found starts a scan, as one raised before a restart may not have finished its scan.
     *
     * @param pending the task's committed-fence bookkeeping ({@code GET /fences/{key}}), or {@code null}
     */
    ExpiryPass(FenceExpiry expiry, ProcessorContext<?, ?> context, KeyValueStore<Bytes, StoredFence> fences,
            PendingFences pending) {
        this.expiry = expiry;
        this.context = context;
        this.fences = fences;
        this.pending = pending;
        this.partition = context.taskId().partition();
        floor = storedFloor(fences);
        if (floor > 0) {
            startScan();
        }
        expiry.floor(partition, floor);
        looking = context.schedule(expiry.pickUpInterval(), PunctuationType.WALL_CLOCK_TIME, this::pickUp);
    }

    /** The partition's floor: tokens below it are rejected for keys without a higher stored fence; 0 when none. */
    long floor() {
        return floor;
    }

    /** The floor kept in {@code fences} (a restore brings it back), or 0 when there is none. */
    static long storedFloor(KeyValueStore<Bytes, StoredFence> fences) {
        StoredFence stored = fences.get(FenceExpiry.FLOOR_KEY);
        return stored == null || stored.fence() == null ? 0 : stored.fence().token();
    }

    /**
     * The task closes: its floor is no longer this instance's to report, and its punctuations stop (Kafka Streams keeps a
     * task's punctuation queue when it revives the task after a corruption, so a scan left scheduled would go on deleting
     * against a floor the restore may have taken back).
     */
    void close() {
        looking.cancel();
        if (stepper != null) {
            stepper.cancel();
            stepper = null;
        }
        expiry.floor(partition, -1);
    }

    private void pickUp(long nowMillis) {
        FenceExpiry.Floor ready = expiry.ready();
        if (ready == null || ready.floor() <= floor) {
            return;
        }
        Fence raised = Fence.of(ready.floor());
        if (pending != null && pending.written(FenceExpiry.FLOOR_KEY, floor > 0 ? Fence.of(floor) : null, raised)) {
            context.commit();
        }
        fences.put(FenceExpiry.FLOOR_KEY, StoredFence.of(raised, nowMillis));
        LOG.info("fence expiry, partition {}: floor raised from {} to {} (the create revision of the oldest live lock, {}); "
                + "dropping the fences below it", partition, floor, ready.floor(),
                ready.oldestLock() == null ? "none live: etcd's revision + 1" : ready.oldestLock());
        floor = ready.floor();
        expiry.floor(partition, floor);
        startScan();
    }

    /**
     * Starts a scan, or, when one is running, makes it go on from its cursor with the new floor and wrap around the key space
     * to the cursor: restarting from the first key at every raise would never reach the last keys of a store larger than
     * one interval's steps cover.
     */
    private void startScan() {
        wrapped = false;
        if (stepper != null) {
            stopAt = cursor;
            return;
        }
        cursor = null;
        stopAt = null;
        examined = 0;
        expiredInScan = 0;
        scanStartNanos = System.nanoTime();
        stepper = context.schedule(STEP, PunctuationType.WALL_CLOCK_TIME, at -> step());
    }

    /**
     * Examines up to a batch of keys after the cursor and drops those whose fence is below the floor. A value that
     * keeps replay history (written under at_least_once before a switch of guarantee) is left alone: a replay may need it.
     */
    private void step() {
        List<KeyValue<Bytes, StoredFence>> expired = new ArrayList<>();
        int batch = expiry.batch();
        int seen = 0;
        boolean done = false;
        try (KeyValueIterator<Bytes, StoredFence> keys = fences.range(cursor, null)) {
            while (seen < batch && keys.hasNext()) {
                KeyValue<Bytes, StoredFence> entry = keys.next();
                if (entry.key.equals(cursor) || entry.key.equals(FenceExpiry.FLOOR_KEY)) {
                    continue;
                }
                if (wrapped && entry.key.compareTo(stopAt) > 0) {
                    done = true;
                    break;
                }
                seen++;
                cursor = entry.key;
                if (expirable(entry.value)) {
                    expired.add(entry);
                }
            }
            if (!done && !keys.hasNext()) {
                // The end of the key space: the scan ends here, or goes on from the first key up to where it was raised.
                done = stopAt == null || wrapped;
                wrapped = !done;
                cursor = done ? cursor : null;
            }
        }
        for (KeyValue<Bytes, StoredFence> entry : expired) {
            if (pending != null && pending.written(entry.key, entry.value.fence(), null)) {
                // Asked once per generation: dropping the answer would leave the processor's writes unbounded until the next
                // commit (PendingFences).
                context.commit();
            }
            fences.delete(entry.key);
        }
        examined += seen;
        expiredInScan += expired.size();
        expiry.expired(expired.size());
        if (done) {
            long nanos = System.nanoTime() - scanStartNanos;
            expiry.passed(nanos);
            LOG.info("fence expiry, partition {}: dropped {} of {} fences below floor {} in {} ms", partition,
                    expiredInScan, examined, floor, nanos / 1_000_000);
            stepper.cancel();
            stepper = null;
        }
    }

    private boolean expirable(StoredFence value) {
        return value != null && value.fence() != null && value.fence().token() < floor && value.acceptCount() == 0
                && value.rejectionCount() == 0;
    }
}
