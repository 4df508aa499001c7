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
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
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
 * {@code fence.source.*} headers added. A winning FENCE marker only raises the fence. Every
 * output is bounded by {@link FenceEnforcerTopology.Limits} (issue 13): an accepted copy that
 * would not fit is rejected {@code TOO_LARGE}, a key whose fence would not fit the changelog is
 * rejected {@code KEY_TOO_LARGE} and never stored, and a rejected copy is reduced until it fits
 * ({@link RejectedCopy}).
 */
public final class FenceProcessor implements Processor<byte[], byte[], byte[], byte[]> {
    private static final Logger LOG = LoggerFactory.getLogger(FenceProcessor.class);

    private final String storeName;
    private final String acceptedSink;
    private final String rejectedSink;
    private final EnforcerMetrics metrics;
    private final FenceEnforcerTopology.Limits limits;
    private ProcessorContext<byte[], byte[]> context;
    private KeyValueStore<Bytes, Fence> fences;

    /**
     * @param limits the input's partition count (each key must arrive on the partition Kafka's
     *               default partitioner, murmur2, assigns it) and the largest record each output takes
     */
    public FenceProcessor(String storeName, String acceptedSink, String rejectedSink, EnforcerMetrics metrics, FenceEnforcerTopology.Limits limits) {
        if (limits.inputPartitions() < 1) {
            throw new IllegalArgumentException("inputPartitions must be at least 1, got " + limits.inputPartitions());
        }
        this.limits = limits;
        this.storeName = storeName;
        this.acceptedSink = acceptedSink;
        this.rejectedSink = rejectedSink;
        this.metrics = metrics;
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
        if (stamp.op() == FenceOp.WRITE && RecordSize.upperBound(record.key(), record.value(), record.headers()) > limits.acceptedMaxBytes()) {
            // Not accepted, so the fence stays where it was.
            reject(record, RejectionReason.TOO_LARGE, stored, "record of up to " + RecordSize.upperBound(record.key(), record.value(), record.headers())
                    + " bytes exceeds the " + limits.acceptedMaxBytes() + " bytes the accepted topic takes (its max.message.bytes and the producer's max.request.size)");
            return;
        }
        if (!limits.storable(key)) {
            // Its fence could not reach the changelog, and a fence that is not in the changelog
            // is lost on restore: so the key is never stored, and nothing is decided for it.
            reject(record, RejectionReason.KEY_TOO_LARGE, stored, key.length + "-byte key with its fence exceeds the " + limits.storeMaxBytes()
                    + " bytes the fence store's changelog takes (its max.message.bytes and the producer's max.request.size)");
            return;
        }
        fences.put(storeKey, FenceRule.raise(stored, stamp.fence()));
        if (stamp.op() == FenceOp.FENCE) {
            metrics.markerAccepted();
            LOG.debug("fence raised to {} by marker from {}", stamp.fence(), stamp.writer());
            return;
        }
        metrics.accepted();
        context.forward(record, acceptedSink);
    }

    private void reject(Record<byte[], byte[]> record, RejectionReason reason, Fence highest, String detail) {
        metrics.rejected(reason);
        List<Header> rejection = new ArrayList<>(6);
        rejection.add(new RecordHeader(FenceHeaders.REJECTED_REASON, FenceHeaders.encode(reason.name())));
        rejection.add(new RecordHeader(FenceHeaders.REJECTED_STAGE, FenceHeaders.encode(FenceHeaders.STAGE_ENFORCER)));
        rejection.add(new RecordHeader(FenceHeaders.REJECTED_HIGHEST, FenceHeaders.encode(highest == null ? "" : highest.toString())));
        Optional<RecordMetadata> source = context.recordMetadata();
        source.ifPresent((RecordMetadata from) -> {
            rejection.add(new RecordHeader(FenceHeaders.SOURCE_TOPIC, FenceHeaders.encode(from.topic())));
            rejection.add(new RecordHeader(FenceHeaders.SOURCE_PARTITION, FenceHeaders.encode(from.partition())));
            rejection.add(new RecordHeader(FenceHeaders.SOURCE_OFFSET, FenceHeaders.encode(from.offset())));
        });
        // Bounded (issue 13): a copy the rejected topic or the producer would refuse stops the
        // stream thread, so it is reduced step by step down to a reference record.
        RejectedCopy copy = RejectedCopy.of(record.key(), record.value(), record.headers().toArray(), rejection, limits.rejectedMaxBytes());
        if (copy.step() == RejectedCopy.Step.FULL) {
            LOG.info("rejected {} record: {}", reason, detail);
        } else {
            metrics.copyReduced(copy.step());
            LOG.warn("rejected {} record from {}: {}; its copy ({}) was reduced to fit the {} bytes the rejected topic takes: {}", reason,
                    source.map(from -> from.topic() + "-" + from.partition() + "@" + from.offset()).orElse("an unknown offset"), detail,
                    sizes(record), limits.rejectedMaxBytes(), copy.step());
        }
        context.forward(record.withKey(copy.key()).withValue(copy.value()).withHeaders(copy.headers()), rejectedSink);
    }

    private static String sizes(Record<byte[], byte[]> record) {
        return "key " + RecordSize.length(record.key()) + " B, value " + RecordSize.length(record.value()) + " B, headers "
                + RecordSize.headersBytes(record.headers()) + " B";
    }
}
