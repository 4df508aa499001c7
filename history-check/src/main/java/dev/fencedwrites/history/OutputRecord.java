package dev.fencedwrites.history;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceStamp;
import dev.fencedwrites.contract.RejectionReason;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/**
 * A rejected copy or a published marker as {@code fence verify} reads it: the input record it names ({@code fence.source.*}),
 * and for a rejection its stage, reason and the highest fence it reports ({@code fence.rejected.*}).
 *
 * @param key         the record key as verify keeps it ({@link #key(byte[])}), or {@code null} when the copy has none
 * @param sourceTopic the topic in {@code fence.source.topic}, or {@code null}
 * @param source      the partition and offset in {@code fence.source.*}, or {@code null} when absent or malformed
 * @param reason      the rejection reason, or {@code null} (a marker, or an unknown reason)
 * @param fence       the record's own fence, or {@code null} when its headers have none that parses
 * @param highest     the fence in {@code fence.rejected.highest}, or {@code null} (none, or the key had none)
 * @param reduced     a rejected copy reduced to fit its topic that lost headers or its key: its own fence may be incomplete
 * @param floor       the expiry floor in {@code fence.rejected.floor} of a rejection below it, or -1
 */
record OutputRecord(String key, String sourceTopic, Position source, RejectionReason reason, Fence fence, Fence highest,
        boolean sinkStage, boolean reduced, long floor) {

    static OutputRecord of(ConsumerRecord<byte[], byte[]> record) {
        long partition = FenceStamp.parseDecimal(text(record, FenceHeaders.SOURCE_PARTITION));
        long offset = FenceStamp.parseDecimal(text(record, FenceHeaders.SOURCE_OFFSET));
        Position source = partition >= 0 && partition <= Integer.MAX_VALUE && offset >= 0
                ? new Position((int) partition, offset)
                : null;
        RejectionReason reason = null;
        String reasonText = text(record, FenceHeaders.REJECTED_REASON);
        if (reasonText != null) {
            try {
                reason = RejectionReason.valueOf(reasonText);
            } catch (IllegalArgumentException e) {
                reason = null;
            }
        }
        Fence highest = null;
        String highestText = text(record, FenceHeaders.REJECTED_HIGHEST);
        if (highestText != null && !highestText.isEmpty()) {
            try {
                highest = Fence.parse(highestText);
            } catch (IllegalArgumentException e) {
                highest = null;
            }
        }
        return new OutputRecord(key(record.key()), text(record, FenceHeaders.SOURCE_TOPIC), source, reason,
                ReplayRule.fenceOf(record), highest, FenceHeaders.STAGE_SINK.equals(text(record, FenceHeaders.REJECTED_STAGE)),
                record.headers().lastHeader(FenceHeaders.REJECTED_HEADERS_OMITTED) != null
                        || record.headers().lastHeader(FenceHeaders.REJECTED_KEY_OMITTED) != null,
                FenceStamp.parseDecimal(text(record, FenceHeaders.REJECTED_FLOOR)));
    }

    /**
     * A record key as verify keeps it: one char per byte (ISO-8859-1), so that keys whose bytes are not UTF-8 stay apart, as
     * they do in the enforcer's store; {@code null} for a null or empty key.
     */
    static String key(byte[] bytes) {
        return bytes == null || bytes.length == 0 ? null : new String(bytes, StandardCharsets.ISO_8859_1);
    }

    /** A key kept by {@link #key(byte[])} as a person reads it (UTF-8). */
    static String display(String key) {
        return key == null ? "" : new String(key.getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8);
    }

    String displayKey() {
        return display(key);
    }

    private static String text(ConsumerRecord<byte[], byte[]> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null || header.value() == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }
}
