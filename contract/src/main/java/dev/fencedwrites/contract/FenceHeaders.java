package dev.fencedwrites.contract;

import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Header names of the fenced-writes wire contract (v1) and their codec.
 *
 * <p>Every value is a UTF-8 string, so console consumers and kcat show it as text. Numbers are
 * decimal strings. Source of the contract: docs/user/wire-protocol.md.
 */
public final class FenceHeaders {
    /** Required. The etcd revision at which the writer acquired its lock: a positive long. */
    public static final String TOKEN = "fence.token";
    /** Optional. Per-lease write counter: 0 for the acquisition marker, then 1, 2, ... */
    public static final String SEQ = "fence.seq";
    /** Optional. etcd lease id, for diagnostics only; never compared for ordering. */
    public static final String LEASE = "fence.lease";
    /** Optional. Writer identity for audits. */
    public static final String WRITER = "fence.writer";
    /** Optional. {@link FenceOp#WRITE} (default) or {@link FenceOp#FENCE}. */
    public static final String OP = "fence.op";
    /** The headers {@link FenceStamp#parse} reads. */
    static final List<String> PARSED = List.of(TOKEN, SEQ, OP, LEASE, WRITER);

    /** Added to rejected records: the {@link RejectionReason} name. */
    public static final String REJECTED_REASON = "fence.rejected.reason";
    /** Added to rejected records: {@code enforcer} or {@code sink}. */
    public static final String REJECTED_STAGE = "fence.rejected.stage";
    /** Added to rejected records: the stored fence that won, as {@code token} or {@code token.seq}; empty when none. */
    public static final String REJECTED_HIGHEST = "fence.rejected.highest";
    /**
     * Added to a record the enforcer rejects {@code STALE_TOKEN} below its partition's expiry floor: the floor (decimal),
     * which is also the fence in {@link #REJECTED_HIGHEST} (docs/concepts/fence-expiry.md). Absent on every other rejection.
     */
    public static final String REJECTED_FLOOR = "fence.rejected.floor";
    /**
     * Added to records the enforcer rejects: when it rejected them, epoch milliseconds (decimal). The record's own
     * timestamp stays the input record's, when it was written.
     */
    public static final String REJECTED_TIME = "fence.rejected.time";
    /**
     * Added to a rejected record with value {@code true} when its value was left out because the
     * record would not fit the rejected topic; read the original at the source offset.
     */
    public static final String REJECTED_VALUE_OMITTED = "fence.rejected.value.omitted";
    /**
     * The prefix of every header a rejection adds ({@code fence.rejected.reason}, {@code .stage}, ...); a record with one was
     * rejected already.
     */
    public static final String REJECTED_PREFIX = "fence.rejected.";
    /**
     * Added with value {@code N} when {@code N} of the record's own headers were left out of its
     * rejected copy (largest first) because the copy would not fit the rejected topic.
     */
    public static final String REJECTED_HEADERS_OMITTED = "fence.rejected.headers.omitted";
    /**
     * Added with value {@code true} when the rejected copy is a reference record: no key, no
     * value and none of the record's own headers but its short fencing headers ({@code fence.token},
     * {@code .seq}, {@code .op}, {@code .lease}, {@code .writer}, up to 128 bytes each), the {@code fence.rejected.*} and
     * {@code fence.source.*} headers, because not even the key would fit.
     */
    public static final String REJECTED_KEY_OMITTED = "fence.rejected.key.omitted";
    /**
     * Added to a reference record written after Kafka refused the enforcer's output
     * ({@link RejectionReason#PRODUCE_FAILED}): the exception's class and message.
     */
    public static final String REJECTED_ERROR = "fence.rejected.error";
    /** Added whenever part of the record was omitted: the original key's size in bytes (0 for a null key). */
    public static final String SOURCE_KEY_BYTES = "fence.source.key.bytes";
    /** Added whenever part of the record was omitted: the original value's size in bytes (0 for a null value). */
    public static final String SOURCE_VALUE_BYTES = "fence.source.value.bytes";
    /** Added whenever part of the record was omitted: the original headers' size, names and values, in bytes. */
    public static final String SOURCE_HEADERS_BYTES = "fence.source.headers.bytes";
    /** Added to rejected records: topic the record was read from. */
    public static final String SOURCE_TOPIC = "fence.source.topic";
    /** Added to rejected records: partition the record was read from. */
    public static final String SOURCE_PARTITION = "fence.source.partition";
    /** Added to rejected records: offset the record was read from. */
    public static final String SOURCE_OFFSET = "fence.source.offset";

    /**
     * Added to the winning {@code FENCE} markers the enforcer publishes to the markers topic: the
     * topic whose records the marker fences (the enforcer's accepted topic). The sink raises the
     * fence of that topic's table, so {@code table.name=${topic}} resolves as for the data.
     */
    public static final String MARKER_TARGET_TOPIC = "fence.marker.target.topic";
    /**
     * Added to the winning {@code FENCE} markers the enforcer publishes: the key's fence just before
     * the marker raised it, as {@code token} or {@code token.seq}; absent when the key had none.
     * Every write the enforcer accepted before the marker is at or below it, so the sink raises a
     * row's fence only once the row holds it: a marker on the markers topic then never overtakes
     * the previous holder's last accepted writes on the accepted topic.
     */
    public static final String MARKER_PREVIOUS = "fence.marker.previous";

    /** Value of {@link #REJECTED_STAGE} for rejections by the Kafka Streams enforcer. */
    public static final String STAGE_ENFORCER = "enforcer";
    /** Value of {@link #REJECTED_STAGE} for rejections by the database guard in the sink. */
    public static final String STAGE_SINK = "sink";

    private FenceHeaders() {
    }

    /** Encodes a header value: the UTF-8 bytes of {@code text}. */
    public static byte[] encode(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    /** Encodes a number as its decimal string in UTF-8. */
    public static byte[] encode(long number) {
        return encode(Long.toString(number));
    }

    /** Decodes a header value as UTF-8 text; {@code null} stays {@code null}. */
    public static String decode(byte[] value) {
        return value == null ? null : new String(value, StandardCharsets.UTF_8);
    }
}
