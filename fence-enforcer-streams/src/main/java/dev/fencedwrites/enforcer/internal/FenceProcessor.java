package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.schemas.Decision;
import dev.fencedwrites.schemas.Fence;
import dev.fencedwrites.enforcer.FenceEnforcerTopology;
import dev.fencedwrites.schemas.FenceHeaders;
import dev.fencedwrites.schemas.FenceOp;
import dev.fencedwrites.schemas.FenceRule;
import dev.fencedwrites.schemas.FenceStamp;
import dev.fencedwrites.schemas.HeaderLookup;
import dev.fencedwrites.schemas.RejectionReason;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Applies {@link FenceRule} to each input record against the key's stored fence, and routes it:
 * accepted records go to the accepted sink unchanged (key, value and headers byte for byte);
 * rejected ones go to the rejected sink with the {@code fence.rejected.*} and
 * {@code fence.source.*} headers added. A winning FENCE marker raises the fence and, when a markers
 * output is set, is published there (null value, its fence headers, {@code fence.marker.target.topic}
 * and {@code fence.source.*}) so that the sink raises the row's fence too (issue 13).
 */
public final class FenceProcessor implements Processor<byte[], byte[], byte[], byte[]> {
    private static final Logger LOG = LoggerFactory.getLogger(FenceProcessor.class);
    /** The longest {@code fence.lease} or {@code fence.writer} copied onto a published marker. */
    static final int MARKER_TEXT_HEADER_MAX_CHARS = 256;

    private final String storeName;
    private final String acceptedSink;
    private final String rejectedSink;
    private final EnforcerMetrics metrics;
    private final FenceEnforcerTopology.Limits limits;
    private final MarkerOutput markers;
    private ProcessorContext<byte[], byte[]> context;
    private KeyValueStore<Bytes, Fence> fences;

    /**
     * Where winning markers go.
     *
     * @param sink        the topology's sink node for the markers topic
     * @param targetTopic the accepted topic, named in each published marker's {@code fence.marker.target.topic}
     */
    public record MarkerOutput(String sink, String targetTopic) {
    }

    /**
     * @param limits  the input's partition count (each key must arrive on the partition Kafka's
     *                default partitioner, murmur2, assigns it) and the output topics' size limits
     * @param markers where winning markers are published, or {@code null} to only raise the fence
     */
    public FenceProcessor(String storeName, String acceptedSink, String rejectedSink, MarkerOutput markers, EnforcerMetrics metrics,
            FenceEnforcerTopology.Limits limits) {
        if (limits.inputPartitions() < 1) {
            throw new IllegalArgumentException("inputPartitions must be at least 1, got " + limits.inputPartitions());
        }
        this.limits = limits;
        this.storeName = storeName;
        this.acceptedSink = acceptedSink;
        this.rejectedSink = rejectedSink;
        this.metrics = metrics;
        this.markers = markers;
    }

    @Override
    public void init(ProcessorContext<byte[], byte[]> context) {
        this.context = context;
        this.fences = context.getStateStore(storeName);
    }

    @Override
    public void process(Record<byte[], byte[]> record) {
        byte[] key = record.key();
        if (key == null || key.length == 0) {
            reject(record, RejectionReason.MISSING_KEY, null, key == null ? "null key" : "empty key");
            return;
        }
        int inputPartitions = limits.inputPartitions();
        int expected = Utils.toPositive(Utils.murmur2(key)) % inputPartitions;
        int actual = context.recordMetadata().map(RecordMetadata::partition).orElse(expected);
        if (actual != expected) {
            // The fence of this key lives with partition `expected`; deciding here would compare
            // against the wrong (or no) stored fence and could accept a stale write.
            reject(record, RejectionReason.WRONG_PARTITION, null, "key hashes to partition " + expected + " of " + inputPartitions
                    + " (murmur2, Kafka's default partitioner) but the record is on partition " + actual);
            return;
        }
        Bytes storeKey = Bytes.wrap(key);
        Fence stored = fences.get(storeKey);
        FenceStamp.Parsed parsed = FenceStamp.parse(HeaderLookup.of(record.headers()));
        if (!parsed.valid()) {
            reject(record, parsed.rejection(), stored, parsed.detail());
            return;
        }
        FenceStamp stamp = parsed.stamp();
        Decision decision = FenceRule.decide(stored, stamp.fence());
        if (!decision.accepted()) {
            reject(record, decision.reason(), stored, "incoming " + stamp.fence() + " vs stored " + stored);
            return;
        }
        if (stamp.op() == FenceOp.FENCE && record.value() != null) {
            reject(record, RejectionReason.INVALID_MARKER, stored, "FENCE marker with a " + record.value().length + "-byte value");
            return;
        }
        if (stamp.op() == FenceOp.WRITE && sizeUpperBound(record.key(), record.value(), record.headers()) > limits.acceptedMaxBytes()) {
            // Not accepted, so the fence stays where it was.
            reject(record, RejectionReason.TOO_LARGE, stored, "record exceeds the accepted topic's max.message.bytes of " + limits.acceptedMaxBytes());
            return;
        }
        fences.put(storeKey, FenceRule.raise(stored, stamp.fence()));
        if (stamp.op() == FenceOp.FENCE) {
            metrics.markerAccepted();
            LOG.debug("fence raised to {} by marker from {}", stamp.fence(), stamp.writer());
            if (markers != null) {
                context.forward(record.withHeaders(markerHeaders(stamp)), markers.sink());
            }
            return;
        }
        metrics.accepted();
        context.forward(record, acceptedSink);
    }

    /**
     * An upper bound of a record's size in a batch of its own, uncompressed: batch header (61
     * bytes), record framing (at most 40 bytes of varints), key, value, and per header its name,
     * value and two length varints. Compared with a topic's max.message.bytes.
     */
    static long sizeUpperBound(byte[] key, byte[] value, Headers headers) {
        long size = 61 + 40 + (key == null ? 0 : key.length) + (value == null ? 0 : value.length);
        for (Header header : headers) {
            size += header.key().getBytes(java.nio.charset.StandardCharsets.UTF_8).length + (header.value() == null ? 0 : header.value().length) + 10;
        }
        return size;
    }

    private void reject(Record<byte[], byte[]> record, RejectionReason reason, Fence highest, String detail) {
        metrics.rejected(reason);
        RecordHeaders headers = new RecordHeaders(record.headers().toArray());
        headers.add(FenceHeaders.REJECTED_REASON, FenceHeaders.encode(reason.name()));
        headers.add(FenceHeaders.REJECTED_STAGE, FenceHeaders.encode(FenceHeaders.STAGE_ENFORCER));
        headers.add(FenceHeaders.REJECTED_HIGHEST, FenceHeaders.encode(highest == null ? "" : highest.toString()));
        addSource(headers);
        byte[] value = record.value();
        if (value != null && sizeUpperBound(record.key(), value, headers) > limits.rejectedMaxBytes()) {
            headers.add(FenceHeaders.REJECTED_VALUE_OMITTED, FenceHeaders.encode("true"));
            value = null;
        }
        LOG.info("rejected {} record: {}", reason, detail);
        context.forward(record.withHeaders(headers).withValue(value), rejectedSink);
    }

    /**
     * The headers of a published marker: its fence as parsed (token, seq, op), the lease and writer
     * when they are short, the target topic and the source coordinates. Nothing else of the input
     * record is copied, so a marker carrying megabytes of other headers still fits the markers topic.
     */
    private Headers markerHeaders(FenceStamp stamp) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, FenceHeaders.encode(stamp.fence().token()));
        if (stamp.fence().hasSeq()) {
            headers.add(FenceHeaders.SEQ, FenceHeaders.encode(stamp.fence().seq()));
        }
        headers.add(FenceHeaders.OP, FenceHeaders.encode(FenceOp.FENCE.name()));
        addIfShort(headers, FenceHeaders.LEASE, stamp.lease());
        addIfShort(headers, FenceHeaders.WRITER, stamp.writer());
        headers.add(FenceHeaders.MARKER_TARGET_TOPIC, FenceHeaders.encode(markers.targetTopic()));
        addSource(headers);
        return headers;
    }

    private static void addIfShort(Headers headers, String name, String value) {
        if (value != null && value.length() <= MARKER_TEXT_HEADER_MAX_CHARS) {
            headers.add(name, FenceHeaders.encode(value));
        }
    }

    /** Adds {@code fence.source.topic}, {@code .partition} and {@code .offset}: where the input record was read. */
    private void addSource(Headers headers) {
        context.recordMetadata().ifPresent((RecordMetadata source) -> {
            headers.add(FenceHeaders.SOURCE_TOPIC, FenceHeaders.encode(source.topic()));
            headers.add(FenceHeaders.SOURCE_PARTITION, FenceHeaders.encode(source.partition()));
            headers.add(FenceHeaders.SOURCE_OFFSET, FenceHeaders.encode(source.offset()));
        });
    }
}
