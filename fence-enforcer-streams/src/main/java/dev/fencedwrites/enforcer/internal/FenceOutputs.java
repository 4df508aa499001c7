package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceOp;
import dev.fencedwrites.contract.FenceStamp;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.enforcer.FenceEnforcerTopology;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The three outputs of a {@link FenceProcessor}: accepted records forwarded unchanged, winning
 * markers published with their own short headers, and rejected records forwarded with the
 * {@code fence.rejected.*} and {@code fence.source.*} headers, reduced to fit the rejected topic
 * ({@link RejectedCopy}). Counts each outcome in the metrics.
 */
final class FenceOutputs {
    private static final Logger LOG = LoggerFactory.getLogger(FenceProcessor.class);

    private final ProcessorContext<byte[], byte[]> context;
    private final String acceptedSink;
    private final String rejectedSink;
    private final FenceProcessor.MarkerOutput markers;
    private final EnforcerMetrics metrics;
    private final FenceEnforcerTopology.Limits limits;
    private final ReplayTracker replay;
    /** Where the record being decided was written to the input topic; empty when unknown. */
    private Optional<Origin> origin = Optional.empty();
    /** The reason the record being processed was rejected for, or {@code null}. */
    private RejectionReason rejectedFor;

    FenceOutputs(ProcessorContext<byte[], byte[]> context, String acceptedSink, String rejectedSink,
            FenceProcessor.MarkerOutput markers,
            EnforcerMetrics metrics, FenceEnforcerTopology.Limits limits, ReplayTracker replay) {
        this.context = context;
        this.acceptedSink = acceptedSink;
        this.rejectedSink = rejectedSink;
        this.markers = markers;
        this.metrics = metrics;
        this.limits = limits;
        this.replay = replay;
    }

    /** The record about to be decided was written at {@code origin} (its {@code fence.source.*} on any output). */
    void origin(Optional<Origin> origin) {
        this.rejectedFor = null;
        this.origin = origin;
    }

    /** Forwards an accepted write to the accepted sink, byte for byte. */
    void accepted(Record<byte[], byte[]> record) {
        metrics.accepted();
        context.forward(record, acceptedSink);
    }

    /** The reason the record being processed (since {@link #origin}) was rejected for, or {@code null} when it was not. */
    RejectionReason rejectedFor() {
        return rejectedFor;
    }

    /** Counts a winning marker and publishes it when a markers output is set; {@code before} is the fence it superseded. */
    void markerAccepted(Record<byte[], byte[]> record, FenceStamp stamp, Fence before) {
        metrics.markerAccepted();
        LOG.debug("fence raised to {} by marker from {}", stamp.fence(), stamp.writer());
        if (markers != null) {
            context.forward(record.withHeaders(markerHeaders(stamp, before)), markers.sink());
        }
    }

    /**
     * Forwards {@code record} to the rejected sink with {@code reason}, the key's {@code highest} fence (or none) and {@code
     * detail} logged.
     */
    void reject(Record<byte[], byte[]> record, RejectionReason reason, Fence highest, String detail) {
        reject(record, reason, highest, detail, null);
    }

    /**
     * Rejects {@code STALE_TOKEN} a record below the partition's expiry floor: the fence it met is {@code (floor, no seq)},
     * and {@link FenceHeaders#REJECTED_FLOOR} names the floor, so that a reader tells it from the rule's own rejections.
     */
    void rejectBelowFloor(Record<byte[], byte[]> record, long floor, String detail) {
        reject(record, RejectionReason.STALE_TOKEN, Fence.of(floor), detail,
                new RecordHeader(FenceHeaders.REJECTED_FLOOR, FenceHeaders.encode(floor)));
    }

    private void reject(Record<byte[], byte[]> record, RejectionReason reason, Fence highest, String detail, Header extra) {
        rejectedFor = reason;
        if (replay.replaying()) {
            replay.replayed("rejected");
        }
        metrics.rejected(reason);
        List<Header> rejection = new ArrayList<>(7);
        rejection.add(new RecordHeader(FenceHeaders.REJECTED_REASON, FenceHeaders.encode(reason.name())));
        rejection.add(new RecordHeader(FenceHeaders.REJECTED_STAGE, FenceHeaders.encode(FenceHeaders.STAGE_ENFORCER)));
        rejection.add(
                new RecordHeader(FenceHeaders.REJECTED_HIGHEST, FenceHeaders.encode(highest == null ? "" : highest.toString())));
        rejection.add(new RecordHeader(FenceHeaders.REJECTED_TIME, FenceHeaders.encode(System.currentTimeMillis())));
        if (extra != null) {
            rejection.add(extra);
        }
        Optional<Origin> source = origin;
        source.ifPresent((Origin from) -> {
            rejection.add(new RecordHeader(FenceHeaders.SOURCE_TOPIC, FenceHeaders.encode(from.topic())));
            rejection.add(new RecordHeader(FenceHeaders.SOURCE_PARTITION, FenceHeaders.encode(from.partition())));
            rejection.add(new RecordHeader(FenceHeaders.SOURCE_OFFSET, FenceHeaders.encode(from.offset())));
        });
        // Bounded: a copy the rejected topic or the producer would refuse stops the
        // stream thread, so it is reduced step by step down to a reference record.
        RejectedCopy copy = RejectedCopy.of(record.key(), record.value(), record.headers().toArray(), rejection,
                limits.rejectedMaxBytes());
        if (copy.step() == RejectedCopy.Step.FULL) {
            LOG.info("rejected {} record: {}", reason, detail);
        } else {
            metrics.copyReduced(copy.step());
            LOG.warn("rejected {} record from {}: {}; its copy ({}) was reduced to fit the {} bytes the rejected topic takes: {}",
                    reason,
                    source.map(from -> from.topic() + "-" + from.partition() + "@" + from.offset()).orElse("an unknown offset"),
                    detail,
                    sizes(record), limits.rejectedMaxBytes(), copy.step());
        }
        context.forward(record.withKey(copy.key()).withValue(copy.value()).withHeaders(copy.headers()), rejectedSink);
    }

    /** The first {@code fence.rejected.*} header's name, or {@code null} when the record has none. */
    static String rejectedBefore(Headers headers) {
        for (Header header : headers) {
            if (header.key().startsWith(FenceHeaders.REJECTED_PREFIX)) {
                return header.key();
            }
        }
        return null;
    }

    private static String sizes(Record<byte[], byte[]> record) {
        return "key " + RecordSize.length(record.key()) + " B, value " + RecordSize.length(record.value()) + " B, headers "
                + RecordSize.headersBytes(record.headers()) + " B";
    }

    /**
     * The headers of a published marker: its fence as parsed (token, seq, op), the lease and writer
     * when they are short, the fence it superseded ({@code fence.marker.previous}, absent when the
     * key had none), the target topic and the source coordinates. Nothing else of the input record
     * is copied, so a marker carrying megabytes of other headers still fits the markers topic.
     */
    private Headers markerHeaders(FenceStamp stamp, Fence previous) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, FenceHeaders.encode(stamp.fence().token()));
        if (stamp.fence().hasSeq()) {
            headers.add(FenceHeaders.SEQ, FenceHeaders.encode(stamp.fence().seq()));
        }
        headers.add(FenceHeaders.OP, FenceHeaders.encode(FenceOp.FENCE.name()));
        addIfShort(headers, FenceHeaders.LEASE, stamp.lease());
        addIfShort(headers, FenceHeaders.WRITER, stamp.writer());
        if (previous != null) {
            headers.add(FenceHeaders.MARKER_PREVIOUS, FenceHeaders.encode(previous.toString()));
        }
        headers.add(FenceHeaders.MARKER_TARGET_TOPIC, FenceHeaders.encode(markers.targetTopic()));
        addSource(headers);
        return headers;
    }

    private static void addIfShort(Headers headers, String name, String value) {
        if (value != null && value.length() <= FenceProcessor.MARKER_TEXT_HEADER_MAX_CHARS) {
            headers.add(name, FenceHeaders.encode(value));
        }
    }

    /** Adds {@code fence.source.topic}, {@code .partition} and {@code .offset}: where the input record was read. */
    private void addSource(Headers headers) {
        origin.ifPresent((Origin source) -> {
            headers.add(FenceHeaders.SOURCE_TOPIC, FenceHeaders.encode(source.topic()));
            headers.add(FenceHeaders.SOURCE_PARTITION, FenceHeaders.encode(source.partition()));
            headers.add(FenceHeaders.SOURCE_OFFSET, FenceHeaders.encode(source.offset()));
        });
    }
}
