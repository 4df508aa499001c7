package dev.fencedwrites.enforcer.internal;

import java.util.HashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one {@link FenceProcessor} knows about replays of its input partition: the offset
 * after the last record processed, the offset the last commit covers, whether the record being
 * processed is a replay, and how many replays to report. One instance per processor (per task); not
 * thread-safe, as a processor is not.
 *
 * <p>Re-routed records come from other input partitions through the repartition topic.
 * A record of input partition q at offset o can be processed here again if this task has not
 * committed past its copy on the repartition topic, or if q's task has not committed past o (it then
 * sends the record again). Each re-routed record carries the input offset q's task had committed
 * when it sent it; once this task commits after processing a record of q that carried c, every copy
 * of a record of q below c was sent before c's commit, so before that record, and is behind this
 * task's commit too: {@link #committedOffset(int)} of q is that c.
 */
final class ReplayTracker {
    private static final Logger LOG = LoggerFactory.getLogger(FenceProcessor.class);

    private final EnforcerMetrics metrics;
    /** The input partition and the offset after the last record processed since init; -1 before the first. */
    private int partition = -1;
    private long nextOffset = -1;
    /** The input offset after the last record processed before the last commit: no replay starts before it. */
    private long committed;
    private long replayed;
    private long replayedSinceCommit;
    /** Per input partition of re-routed records, the highest committed offset they carried, and its value at the last commit. */
    private final Map<Integer, Long> carried = new HashMap<>();
    private final Map<Integer, Long> carriedAtCommit = new HashMap<>();
    /** Whether the record being processed is decided against its key's history, as a replay. */
    private boolean replaying;

    ReplayTracker(EnforcerMetrics metrics) {
        this.metrics = metrics;
    }

    /** The record being processed was read at {@code offset} of input {@code partition}. */
    void position(int partition, long offset) {
        this.partition = partition;
        this.nextOffset = offset + 1;
    }

    /**
     * A re-routed record of input partition {@code origin} is being processed; its sender had committed input offset
     * {@code senderCommitted}.
     */
    void rerouted(int origin, long senderCommitted) {
        carried.merge(origin, senderCommitted, Math::max);
    }

    /** The input offset after the last record processed before the last commit. */
    long committedOffset() {
        return committed;
    }

    /**
     * The offset of input partition {@code origin} ({@link StoredFence#OWN}: this task's) below which no record can be
     * processed here again.
     */
    long committedOffset(int origin) {
        return origin == StoredFence.OWN ? committed : carriedAtCommit.getOrDefault(origin, 0L);
    }

    boolean replaying() {
        return replaying;
    }

    void replaying(boolean replaying) {
        this.replaying = replaying;
    }

    /** Kafka Streams committed this task's offsets: every record processed so far is behind the committed offset. */
    void committed() {
        if (nextOffset >= 0) {
            committed = nextOffset;
        }
        carriedAtCommit.putAll(carried);
        if (replayed > 0 && replayedSinceCommit == 0) {
            reportReplay();
        }
        replayedSinceCommit = 0;
    }

    /** Counts a replayed record decided with {@code outcome} ({@code accepted}, {@code marker}, {@code rejected}). */
    void replayed(String outcome) {
        if (replayed == 0) {
            LOG.info(
                    "input partition {} offset {}: the fence store is ahead of the committed offsets (at_least_once after a "
                            + "crash); records it has seen are "
                            + "decided against the fence each met the first time, and accepted ones are forwarded again",
                    partition, nextOffset - 1);
        }
        replayed++;
        replayedSinceCommit++;
        metrics.replayed(outcome);
    }

    /** The processor closes: reports replays not reported yet. */
    void close() {
        if (replayed > 0) {
            reportReplay();
        }
    }

    private void reportReplay() {
        LOG.info(
                "re-decided {} replayed records of input partition {} against the fence each met the first time (the fence "
                        + "store was ahead of the "
                        + "committed offsets, at_least_once); accepted ones were forwarded again; processed up to offset {}",
                replayed, partition, nextOffset - 1);
        replayed = 0;
    }
}
