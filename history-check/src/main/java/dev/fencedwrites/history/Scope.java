package dev.fencedwrites.history;

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
 * @param window          {@code --since}: where the checked part of the history starts, or {@link Window#ALL}
 */
record Scope(String input, String accepted, String rejected, String markers, int inputPartitions, boolean reroute,
        Map<Integer, Long> decided, Window window) {
    Scope {
        decided = Map.copyOf(decided);
    }

    /** The whole history. */
    Scope(String input, String accepted, String rejected, String markers, int inputPartitions, boolean reroute,
            Map<Integer, Long> decided) {
        this(input, accepted, rejected, markers, inputPartitions, reroute, decided, Window.ALL);
    }

    /** Whether the enforcer must have decided the input record at {@code partition}@{@code offset}. */
    boolean decided(int partition, long offset) {
        return offset < decided.getOrDefault(partition, 0L);
    }

    /**
     * Where {@code fence verify --since} starts, per partition. The input records from {@code input} on are
     * checked; the accepted topic's records before {@code accepted} are the decisions of the input records before it (the
     * enforcer writes a key's accepted copies on the partition of its input records, in their order), and only set each key's
     * fence, as the enforcer had it when the window starts, together with the winning markers of those input records.
     *
     * @param input    per input partition, the first input record checked; absent: 0
     * @param accepted per accepted partition, the first accepted copy of an input record checked; absent: 0
     */
    record Window(Map<Integer, Long> input, Map<Integer, Long> accepted) {
        /** From the beginning of every topic. */
        static final Window ALL = new Window(Map.of(), Map.of());

        Window {
            input = Map.copyOf(input);
            accepted = Map.copyOf(accepted);
        }

        /** Whether {@code --since} was given. */
        boolean partial() {
            return !input.isEmpty() || !accepted.isEmpty();
        }

        /** Whether the input record at {@code partition}@{@code offset} is checked. */
        boolean checks(int partition, long offset) {
            return offset >= input.getOrDefault(partition, 0L);
        }

        /** Whether the accepted copy at {@code partition}@{@code offset} is before the window: it only sets its key's fence. */
        boolean seeds(int partition, long offset) {
            return offset < accepted.getOrDefault(partition, 0L);
        }
    }
}
