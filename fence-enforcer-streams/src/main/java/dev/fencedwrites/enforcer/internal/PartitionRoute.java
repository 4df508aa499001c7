package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.enforcer.FenceEnforcerTopology;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.processor.StreamPartitioner;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;

/**
 * One side of the split in front of the fence processor when misrouted records are re-routed (issue
 * 17). Both sides see every input record; exactly one forwards it:
 * <ul>
 *   <li>the home side forwards a record that is on the partition murmur2 assigns its key (or has no
 *       key: the fence processor rejects it), and a misrouted one too large to take the detour (the
 *       fence processor rejects it {@code TOO_LARGE}): no round trip for them;</li>
 *   <li>the away side forwards every other misrouted record, with the {@value #ORIGIN_HEADER} header
 *       appended last (its input partition and offset, for the rejected copy's
 *       {@code fence.source.*} and the replay history, and this task's last committed input offset, see
 *       {@link ReplayTracker}), to the repartition topic, whose {@link #partitioner()} sends it to
 *       the partition that owns its key's fence.</li>
 * </ul>
 * A record is misrouted when its partition differs from
 * {@code Utils.toPositive(Utils.murmur2(key)) % partitions}, what Kafka's
 * {@code BuiltInPartitioner.partitionForKey} gives a serialized key. One writer uses one
 * partitioner, so its records for a key all take the same path and keep their order.
 */
public final class PartitionRoute implements Processor<byte[], byte[], byte[], byte[]> {
    /**
     * Internal header of a record on the repartition topic: {@code <input partition>:<input offset>:<committed>}, the
     * last the input offset the sending task had committed (under at_least_once; 0 when unknown or under exactly_once_v2).
     * Appended last on the way out, removed before any output; a writer's own header of that name
     * stays where it was and is never read.
     */
    public static final String ORIGIN_HEADER = "fence.reroute.origin";

    private final boolean away;
    private final EnforcerMetrics metrics;
    private final FenceEnforcerTopology.Limits limits;
    private final String commitSignalName;
    private ProcessorContext<byte[], byte[]> context;
    private CommitSignal commits;
    /** The input offset after the last record seen, and after the last one seen before the task's last commit. */
    private long nextOffset = -1;
    private long committed;

    private PartitionRoute(boolean away, EnforcerMetrics metrics, FenceEnforcerTopology.Limits limits,
            String commitSignalName) {
        this.away = away;
        this.metrics = metrics;
        this.limits = limits;
        this.commitSignalName = commitSignalName;
    }

    /** The side that forwards records to be decided where they arrived. */
    public static PartitionRoute home(EnforcerMetrics metrics, FenceEnforcerTopology.Limits limits) {
        return new PartitionRoute(false, metrics, limits, null);
    }

    /**
     * The side that forwards misrouted records, with their origin, to the repartition topic; {@code commitSignalName} is
     * the {@link CommitSignal} store connected to it.
     */
    public static PartitionRoute away(EnforcerMetrics metrics, FenceEnforcerTopology.Limits limits, String commitSignalName) {
        return new PartitionRoute(true, metrics, limits, commitSignalName);
    }

    /** The partition murmur2 assigns {@code key} among {@code partitions}, as Kafka's default partitioner does. */
    public static int owner(byte[] key, int partitions) {
        return Utils.toPositive(Utils.murmur2(key)) % partitions;
    }

    /** The repartition topic's partitioner: each record to the partition that owns its key's fence. */
    public static StreamPartitioner<byte[], byte[]> partitioner() {
        return (topic, key, value, partitions) -> Optional.of(Set.of(owner(key, partitions)));
    }

    @Override
    public void init(ProcessorContext<byte[], byte[]> context) {
        this.context = context;
        if (commitSignalName != null) {
            commits = context.getStateStore(commitSignalName);
            commits.listen(() -> committed = Math.max(committed, nextOffset));
        }
    }

    @Override
    public void close() {
        if (commits != null) {
            commits.stopListening();
        }
    }

    @Override
    public void process(Record<byte[], byte[]> record) {
        Optional<RecordMetadata> source = context.recordMetadata();
        source.ifPresent(from -> nextOffset = from.offset() + 1);
        byte[] key = record.key();
        boolean misrouted = key != null && key.length > 0 && source.isPresent()
                && source.get().partition() != owner(key, limits.inputPartitions());
        boolean reroute = misrouted && fitsTheDetour(record);
        if (reroute != away) {
            return;
        }
        if (!away) {
            context.forward(record);
            return;
        }
        metrics.rerouted();
        RecordHeaders headers = new RecordHeaders(record.headers().toArray());
        headers.add(new RecordHeader(ORIGIN_HEADER,
                (source.get().partition() + ":" + source.get().offset() + ":" + committed).getBytes(StandardCharsets.UTF_8)));
        context.forward(record.withHeaders(headers));
    }

    /**
     * Whether the record with its origin header fits the repartition topic (its {@code max.message.bytes}
     * as read at start, capped by the producer's; a record refused by the broker would stop the task).
     */
    private boolean fitsTheDetour(Record<byte[], byte[]> record) {
        long origin = ORIGIN_HEADER.length() + 3L * 20 + 2 + RecordSize.HEADER_OVERHEAD;
        return RecordSize.upperBound(record.key(), record.value(), record.headers()) + origin <= limits.rerouteMaxBytes();
    }

    /**
     * Where a record read from the repartition topic was first read: the input partition, offset and the
     * sender's committed offset of its last {@value #ORIGIN_HEADER} header, or empty when it has none that parses.
     */
    static Optional<long[]> origin(Headers headers) {
        Header last = headers.lastHeader(ORIGIN_HEADER);
        Header[] all = headers.toArray();
        if (last == null || all[all.length - 1] != last) {
            return Optional.empty();
        }
        String text = new String(last.value() == null ? new byte[0] : last.value(), StandardCharsets.UTF_8);
        String[] fields = text.split(":", -1);
        try {
            long[] origin = {Integer.parseInt(fields[0]), Long.parseLong(fields[1]),
                    fields.length > 2 ? Long.parseLong(fields[2]) : 0};
            return origin[0] >= 0 && origin[1] >= 0 && origin[2] >= 0 ? Optional.of(origin) : Optional.empty();
        } catch (RuntimeException e) {
            return Optional.empty();
        }
    }

    /** {@code headers} without the origin header appended on the way to the repartition topic (the last one). */
    static Headers withoutOrigin(Headers headers) {
        Header[] all = headers.toArray();
        if (all.length == 0 || !ORIGIN_HEADER.equals(all[all.length - 1].key())) {
            return headers;
        }
        return new RecordHeaders(Arrays.copyOf(all, all.length - 1));
    }
}
