package dev.fencedwrites.cli.verify;

import java.util.Map;

/**
 * What one {@code fence verify} run reads.
 *
 * @param input           the input topic
 * @param accepted        the accepted topic
 * @param rejected        the rejected topic
 * @param markers         the markers topic, or {@code null} when it does not exist (winning markers are then not observable)
 * @param inputPartitions the input topic's partition count (murmur2 assigns each key one of them)
 * @param reroute         whether the enforcer re-routes a record on the wrong partition
 *                        ({@code partition.mismatch.policy=reroute}, its default) instead of rejecting it {@code WRONG_PARTITION}
 * @param decided         per input partition, the enforcer's committed offset: records below it must have been decided
 */
record Scope(String input, String accepted, String rejected, String markers, int inputPartitions, boolean reroute,
        Map<Integer, Long> decided) {
    Scope {
        decided = Map.copyOf(decided);
    }

    /** Whether the enforcer must have decided the input record at {@code partition}@{@code offset}. */
    boolean decided(int partition, long offset) {
        return offset < decided.getOrDefault(partition, 0L);
    }
}
