package dev.fencedwrites.enforcer;

import java.util.Locale;

/**
 * What the enforcer does with a record that arrived on another input partition than the one Kafka's
 * default partitioner (murmur2 of the serialized key, {@code BuiltInPartitioner.partitionForKey})
 * assigns its key, where the key's fence lives. The setting is
 * {@value FenceEnforcerConfig#PARTITION_MISMATCH_POLICY}.
 */
public enum PartitionMismatch {
    /**
     * The default: the record goes through the enforcer's repartition topic (an internal topic
     * Kafka Streams creates with the input's partition count and purges, written inside the task's
     * transaction under exactly_once_v2) to the partition that owns its key's fence, and is decided
     * there. Cost: one extra write and read per misrouted record; records already on their
     * partition take no detour. Any client's default partitioner works (librdkafka's
     * {@code consistent_random} is CRC32, not murmur2).
     */
    REROUTE,
    /**
     * Strict: the record is rejected {@code WRONG_PARTITION}. No repartition topic, no extra hop;
     * every writer must use murmur2 (kcat: {@code -X partitioner=murmur2_random}).
     */
    REJECT;

    /** The setting's value, {@code reroute} or {@code reject}. */
    public String configValue() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * The policy a setting value names, in any case.
     *
     * @throws IllegalArgumentException for any other value
     */
    public static PartitionMismatch of(String value) {
        return valueOf(value.strip().toUpperCase(Locale.ROOT));
    }
}
