package dev.fencedwrites.enforcer.internal;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides how far the fences of every task may be expired: the floor, M, the smallest create revision among the
 * live keys under the lock prefix (etcd's current revision + 1 when there are none), once every input record written before
 * M was read has been decided and committed. One instance per enforcer, on a thread of its own; the fence processors read
 * {@link #ready()} from their stream threads and expire their own stores ({@link ExpiryPass}). The proof and its
 * assumptions: docs/concepts/fence-expiry.md.
 *
 * <p>Why the wait: a holder's write acknowledged before its lock key was deleted can still sit unread in the input when M
 * passes its token; decided after the floor, it would be rejected although its writer held the lock when it wrote. So after
 * reading M this class reads the end offset of each input partition (read_uncommitted: every acknowledged write is below
 * it) and waits until the application's committed offsets reach them; under {@code partition.mismatch.policy=reroute} it
 * then does the same for the repartition topic, where re-routed records wait for their owner. Committed offsets under
 * exactly_once_v2 mean those records' decisions committed, and the floor is written in a later transaction.
 *
 * <p>etcd unreachable or slow: no new floor (a read that fails is counted and retried at the next interval). An M read
 * earlier is never too high: M never decreases (keys are only deleted, or created at a revision above every existing one).
 */
public final class FenceExpiry implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(FenceExpiry.class);
    /** How often a floor waiting for the committed offsets checks them again. */
    static final Duration CATCH_UP_CHECK = Duration.ofSeconds(1);
    /**
     * The fence store key under which each task keeps its partition's floor ({@link ExpiryPass}): 0xFF never occurs in
     * UTF-8, and the processor rejects keys that are not UTF-8 before the store.
     */
    public static final Bytes FLOOR_KEY = Bytes.wrap(new byte[]{(byte) 0xFF, 'f', 'l', 'o', 'o', 'r'});
    /** The longest lock key name a metric tag carries. */
    static final int TAG_MAX_CHARS = 200;

    /**
     * The oldest live key under the lock prefix, from one linearizable read.
     *
     * @param revision       etcd's revision when it answered
     * @param key            the oldest live key, or {@code null} when there is none
     * @param createRevision M: the key's create revision, or {@code revision + 1} when there is none
     */
    public record OldestLock(long revision, String key, long createRevision) {
    }

    /** Reads {@link OldestLock} linearizably; throws when etcd does not answer in time. */
    @FunctionalInterface
    public interface LockSource {
        OldestLock oldest() throws Exception;
    }

    /** The input's offsets as the brokers know them now; closed with the {@link FenceExpiry} that reads them. */
    public interface Offsets extends AutoCloseable {
        /** Each partition's end offset (read_uncommitted: past every acknowledged write). */
        Map<TopicPartition, Long> ends(String topic) throws Exception;

        /** The application's committed offset of each partition it has committed. */
        Map<TopicPartition, Long> committed() throws Exception;

        /**
         * Whether {@code partition} holds a record a read_committed consumer reads at an offset in [{@code from}, {@code end});
         * true when that cannot be told in time.
         */
        default boolean anyRecord(TopicPartition partition, long from, long end) throws Exception {
            return true;
        }

        @Override
        default void close() {
        }
    }

    /**
     * The offsets of consumer group {@code group} (the application id) and of its topics, read with {@code admin}, and
     * records read with {@code reader} (a read_committed consumer with no group; both closed with them); each call waits up
     * to {@code timeout}.
     */
    public static Offsets offsets(Admin admin, Consumer<byte[], byte[]> reader, String group, Duration timeout) {
        long millis = timeout.toMillis();
        return new Offsets() {
            @Override
            public Map<TopicPartition, Long> ends(String topic) throws Exception {
                TopicDescription description = admin.describeTopics(List.of(topic)).allTopicNames()
                        .get(millis, TimeUnit.MILLISECONDS).get(topic);
                Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
                description.partitions().forEach(p -> latest.put(new TopicPartition(topic, p.partition()), OffsetSpec.latest()));
                Map<TopicPartition, Long> ends = new HashMap<>();
                admin.listOffsets(latest, new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED)).all()
                        .get(millis, TimeUnit.MILLISECONDS).forEach((partition, info) -> ends.put(partition, info.offset()));
                return ends;
            }

            @Override
            public Map<TopicPartition, Long> committed() throws Exception {
                Map<TopicPartition, Long> committed = new HashMap<>();
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(millis, TimeUnit.MILLISECONDS)
                        .forEach((partition, offset) -> {
                            if (offset != null) {
                                committed.put(partition, offset.offset());
                            }
                        });
                return committed;
            }

            @Override
            public boolean anyRecord(TopicPartition partition, long from, long end) {
                reader.assign(List.of(partition));
                reader.seek(partition, from);
                long deadline = System.nanoTime() + timeout.toNanos();
                while (System.nanoTime() < deadline) {
                    for (ConsumerRecord<byte[], byte[]> record : reader.poll(Duration.ofMillis(200)).records(partition)) {
                        return record.offset() < end;
                    }
                    if (reader.position(partition) >= end) {
                        return false;
                    }
                }
                return true;
            }

            @Override
            public void close() {
                admin.close(Duration.ofSeconds(5));
                reader.close(Duration.ofSeconds(5));
            }
        };
    }

    /**
     * A floor every task may apply: a key without a higher fence is fenced at {@code (floor, no seq)}.
     *
     * @param floor      M: every token below it belongs to a lock tenure that has ended
     * @param oldestLock the live lock key that held M down, or {@code null} when there was none
     */
    public record Floor(long floor, String oldestLock) {
    }

    /** A floor read from etcd, waiting for the committed offsets of {@code topics.get(stage)} to reach {@code ends}. */
    private record Pending(Floor floor, int stage, Map<TopicPartition, Long> ends) {
    }

    private final LockSource locks;
    private final Offsets offsets;
    private final List<String> topics;
    private final Duration interval;
    private final int batch;
    private final LongSupplier clock;
    private final ScheduledExecutorService thread;
    private final Counter readsFailed;
    private final Counter expired;
    private final Timer passTime;
    private final MultiGauge floors;
    private final MultiGauge oldestAge;
    private final Map<Integer, Long> floorByPartition = new ConcurrentHashMap<>();
    private final Object floorRows = new Object();
    private volatile Floor ready;
    private volatile long oldestRevision = -1;
    /** When the pending floor began waiting for the committed offsets, in the clock's milliseconds; -1: none waits. */
    private volatile long waitingSince = -1;
    private Pending pending;
    private long nextRead;
    private String oldestKey;
    private volatile long oldestSinceMillis;
    private boolean failing;

    /**
     * @param locks    where M comes from (etcd)
     * @param offsets  the input's end and committed offsets (the brokers)
     * @param topics   the topics whose records must be decided before a floor applies: the input, then the repartition
     *                 topic under {@code reroute}
     * @param interval how often M is read
     * @param batch    keys a task examines per expiry step
     * @param clock    milliseconds from a clock that does not jump (intervals and ages), e.g. {@code System.nanoTime() / 1e6}
     */
    public FenceExpiry(LockSource locks, Offsets offsets, List<String> topics, Duration interval, int batch,
            MeterRegistry registry, LongSupplier clock) {
        this.locks = locks;
        this.offsets = offsets;
        this.topics = List.copyOf(topics);
        this.interval = interval;
        this.batch = batch;
        this.clock = clock;
        this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "fence-expiry");
            t.setDaemon(true);
            return t;
        });
        readsFailed = Counter.builder("fence.enforcer.expiry.reads.failed")
                .description("Reads of etcd's oldest live lock that failed or timed out (no floor is raised on them)")
                .register(registry);
        expired = Counter.builder("fence.enforcer.expiry.fences.expired")
                .description("Fences dropped from the fence store because their token is below the partition's floor")
                .register(registry);
        passTime = Timer.builder("fence.enforcer.expiry.pass.duration")
                .description("Time from raising a partition's floor to the end of its scan for fences below it")
                .register(registry);
        floors = MultiGauge.builder("fence.enforcer.expiry.floor")
                .description("Per partition: the expiry floor, M when it was raised (tokens below it are rejected for keys "
                        + "without a higher fence)")
                .register(registry);
        oldestAge = MultiGauge.builder("fence.enforcer.expiry.oldest.lock.age").baseUnit("seconds")
                .description("How long the oldest live lock key (tag lock) has been the oldest, as this enforcer has seen it: "
                        + "it holds every floor down")
                .register(registry);
        Gauge.builder("fence.enforcer.expiry.waiting", () -> waitingSince < 0 ? 0 : (clock.getAsLong() - waitingSince) / 1000.0)
                .baseUnit("seconds")
                .description("How long the next floor has waited for the application's committed offsets to pass the input's "
                        + "end offsets read after M (0: none waits); it grows while the enforcer lags")
                .register(registry);
        Gauge.builder("fence.enforcer.expiry.oldest.lock.revision", () -> oldestRevision)
                .description("M: the create revision of the oldest live lock key (etcd's revision + 1 when there is none)")
                .register(registry);
    }

    /** Starts reading M every interval. */
    public FenceExpiry start() {
        thread.scheduleWithFixedDelay(this::tickQuietly, 0, CATCH_UP_CHECK.toMillis(), TimeUnit.MILLISECONDS);
        return this;
    }

    /** The newest floor every task may apply, or {@code null} before the first; read from any thread. */
    public Floor ready() {
        return ready;
    }

    /** Keys a task examines per expiry step. */
    public int batch() {
        return batch;
    }

    /** How often a task looks for a new floor: a tenth of the interval, at least a second. */
    public Duration pickUpInterval() {
        return Duration.ofMillis(Math.max(1_000, interval.toMillis() / 10));
    }

    /** A task's floor, for the per-partition gauge ({@code floor < 0}: the task closed here); from any thread. */
    public void floor(int partition, long floor) {
        if (floor < 0) {
            floorByPartition.remove(partition);
        } else {
            floorByPartition.put(partition, floor);
        }
        synchronized (floorRows) {
            List<MultiGauge.Row<?>> rows = new ArrayList<>();
            floorByPartition.forEach((p, f) -> rows.add(MultiGauge.Row.of(Tags.of("partition", Integer.toString(p)), f)));
            floors.register(rows, true);
        }
    }

    /** A task dropped {@code count} fences below its floor. */
    void expired(long count) {
        expired.increment(count);
    }

    /** A task finished scanning its store for fences below a floor it raised {@code nanos} ago. */
    void passed(long nanos) {
        passTime.record(nanos, TimeUnit.NANOSECONDS);
    }

    private void tickQuietly() {
        try {
            tick();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            // The brokers did not answer: the pending floor waits for the next check.
            LOG.debug("fence expiry: the brokers did not answer ({}); checking again in {}", e.toString(), CATCH_UP_CHECK);
        }
    }

    /**
     * One step, run every second by {@link #start()}: read M when due, else check whether the pending floor's offsets were
     * committed. Public for tests that step it themselves instead of starting it.
     *
     * @throws Exception when the brokers do not answer (the pending floor waits for the next step)
     */
    public void tick() throws Exception {
        long now = clock.getAsLong();
        if (now >= nextRead) {
            nextRead = now + interval.toMillis();
            // Also while a floor waits: the oldest lock's metrics stay current (the waiting floor keeps its older M, which
            // is never too high).
            OldestLock oldest = readOldest(now);
            Floor floor = oldest == null ? null : new Floor(oldest.createRevision(), oldest.key());
            Floor current = ready;
            if (pending == null && floor != null && floor.floor() > 1 && (current == null || floor.floor() > current.floor())) {
                // After M was read: every write acknowledged (acks=all) before M was read is below these end offsets.
                pending = new Pending(floor, 0, offsets.ends(topics.get(0)));
                waitingSince = now;
            }
        }
        if (pending == null) {
            return;
        }
        Map<TopicPartition, Long> committed = offsets.committed();
        for (Map.Entry<TopicPartition, Long> end : pending.ends().entrySet()) {
            long from = committed.getOrDefault(end.getKey(), 0L);
            // Below the end but nothing left to decide: records removed by retention, or only transaction markers and
            // aborted records (Kafka Streams commits past those only when it processes a record after them).
            if (from < end.getValue() && offsets.anyRecord(end.getKey(), from, end.getValue())) {
                return;
            }
        }
        if (pending.stage() + 1 < topics.size()) {
            // Every input record before M's read is decided, so every re-routed one was written: now they must be decided.
            int next = pending.stage() + 1;
            pending = new Pending(pending.floor(), next, offsets.ends(topics.get(next)));
            return;
        }
        Floor floor = pending.floor();
        pending = null;
        waitingSince = -1;
        ready = floor;
        LOG.info("fence expiry: floor {} is ready for every partition (the oldest live lock, {}, was created at that revision); "
                + "tasks drop the fences below it", floor.floor(),
                floor.oldestLock() == null ? "none live: etcd's revision + 1" : floor.oldestLock());
    }

    private OldestLock readOldest(long now) {
        OldestLock oldest;
        try {
            oldest = locks.oldest();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        } catch (Exception e) {
            readsFailed.increment();
            if (!failing) {
                LOG.warn("fence expiry: etcd did not answer the read of the oldest live lock ({}): no fence expires until it "
                        + "does; trying again every {}", e.toString(), interval);
            }
            failing = true;
            return null;
        }
        if (failing) {
            LOG.info("fence expiry: etcd answers again (revision {})", oldest.revision());
            failing = false;
        }
        oldestRevision = oldest.createRevision();
        if (oldest.key() == null) {
            oldestKey = null;
            oldestAge.register(List.of(), true);
        } else {
            if (!oldest.key().equals(oldestKey)) {
                oldestKey = oldest.key();
                oldestSinceMillis = now;
            }
            String tag = oldestKey.length() > TAG_MAX_CHARS ? oldestKey.substring(0, TAG_MAX_CHARS) + "..." : oldestKey;
            oldestAge.register(List.of(MultiGauge.Row.of(Tags.of("lock", tag),
                    () -> (clock.getAsLong() - oldestSinceMillis) / 1000.0)), true);
        }
        return oldest;
    }

    @Override
    public void close() {
        thread.shutdownNow();
        offsets.close();
    }
}
