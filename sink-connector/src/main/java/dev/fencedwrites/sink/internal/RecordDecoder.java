package dev.fencedwrites.sink.internal;

import dev.fencedwrites.avro.connect.AvroConverter;
import dev.fencedwrites.avro.connect.RegistryErrors;
import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceOp;
import dev.fencedwrites.contract.FenceStamp;
import dev.fencedwrites.contract.RejectionReason;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.function.Predicate;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.sink.SinkRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads one sink record into what the table takes: its key as the resource id
 * ({@link ResourceKeys}), its fence headers ({@link FenceStamp}, the wire contract v1), and its
 * value, decoded from the Confluent wire format by the project's {@link AvroConverter} (or taken as
 * it is when the worker's converter already made a {@code Struct}). Needs no database: a record that
 * cannot be written comes back as {@link Decoded.Bad} with its reason, never as an exception.
 *
 * <p>Errors thrown are the worker's or the registry's, which no record can fix or which pass on
 * retry: {@link ConnectException} for a value that is neither bytes nor a {@code Struct}, a key type
 * that cannot carry a resource id, or registry credentials refused; {@link TransientFailure} for a
 * registry that cannot be reached.
 */
public final class RecordDecoder {
    // the task's logger name, as before the split
    private static final Logger LOG = LoggerFactory.getLogger("dev.fencedwrites.sink.FencedJdbcSinkTask");

    private final AvroConverter values;
    private final boolean guarded;
    private final Predicate<String> readsTopic;

    /**
     * @param values     the value converter for raw bytes (Confluent wire format)
     * @param guarded    {@code fence.guard.enabled}: without the guard, markers are skipped
     * @param readsTopic whether the connector reads a topic ({@code topics}, {@code topics.regex}): a marker
     *                   fences the records of one topic, and only a connector that writes them may raise their fences
     */
    public RecordDecoder(AvroConverter values, boolean guarded, Predicate<String> readsTopic) {
        this.values = values;
        this.guarded = guarded;
        this.readsTopic = readsTopic;
    }

    /** A {@link Row} to write, a record to skip, or a bad record with its reason. */
    public Decoded decode(SinkRecord record) {
        String rejectedAs = rejectedBefore(record);
        if (rejectedAs != null) {
            return new Decoded.Bad(RejectionReason.ALREADY_REJECTED, null,
                    "the record carries " + rejectedAs + ": it is a rejected"
                            + " copy, so this connector reads a rejected topic (" + record.topic()
                            + "); set topics to the accepted topic");
        }
        String key;
        try {
            key = ResourceKeys.text(record.key());
        } catch (CharacterCodingException e) {
            return new Decoded.Bad(RejectionReason.MALFORMED_KEY, null, "the record key is not valid UTF-8 (" + e.getMessage()
                    + "), which a resource id must be");
        }
        if (key == null || key.isEmpty()) {
            return new Decoded.Bad(RejectionReason.MISSING_KEY, null, "null or empty key");
        }
        FenceStamp.Parsed parsed = FenceStamp.parse(ConnectHeaderLookup.of(record.headers()));
        if (!parsed.valid()) {
            return new Decoded.Bad(parsed.rejection(), key, parsed.detail());
        }
        FenceStamp stamp = parsed.stamp();
        if (stamp.op() == FenceOp.FENCE) {
            return marker(record, key, stamp.fence());
        }
        return record.value() == null ? Row.of(key, null, stamp.fence()) : data(record, key, stamp.fence());
    }

    /** A {@code FENCE} marker (op {@code FENCE}, {@code value} must be null). */
    private Decoded marker(SinkRecord record, String key, Fence fence) {
        if (record.value() != null) {
            return new Decoded.Bad(RejectionReason.INVALID_MARKER, key, "FENCE marker with a value");
        }
        if (!guarded) {
            LOG.debug("skipping FENCE marker for {} with {}: fence.guard.enabled=false", key, fence);
            return Decoded.SKIP;
        }
        String target = tableTopic(record);
        if (!readsTopic.test(target)) {
            // Another pipeline's marker on a shared markers topic: this connector does not write that topic's records.
            LOG.debug("skipping FENCE marker for {} with {}: it fences topic {}, which this connector does not read", key, fence,
                    target);
            return Decoded.SKIP;
        }
        // A winning marker from the enforcer's markers topic (or one sent around it): the row's fence rises, its data stays,
        // once the row holds the fence the marker superseded (so it never overtakes the previous holder's accepted writes).
        Header previous = record.headers().lastWithName(FenceHeaders.MARKER_PREVIOUS);
        if (previous == null || previous.value() == null) {
            return Row.marker(key, fence);
        }
        try {
            return Row.marker(key, fence, Fence.parse(printable(previous.value())));
        } catch (IllegalArgumentException e) {
            LOG.warn("skipping FENCE marker for {} with {}: {} {}", key, fence, FenceHeaders.MARKER_PREVIOUS, e.getMessage());
            return Decoded.SKIP;
        }
    }

    /** A data write: the value as a {@code Struct} whose schema maps to columns. */
    private Decoded data(SinkRecord record, String key, Fence fence) {
        Struct value;
        if (record.value() instanceof Struct struct) {
            value = struct; // value.converter=dev.fencedwrites.avro.connect.AvroConverter, or another converter giving Structs
        } else {
            try {
                Object decoded = values.toConnectData(record.topic(), toBytes(record.value())).value();
                if (!(decoded instanceof Struct struct)) {
                    return new Decoded.Bad(RejectionReason.MALFORMED_VALUE, key, "the value is not an Avro record");
                }
                value = struct;
            } catch (DataException e) {
                if (e.getCause() instanceof SerializationException cause && RegistryErrors.isTransient(cause)) {
                    throw new TransientFailure(cause);
                }
                if (e.getCause() instanceof SerializationException cause && RegistryErrors.isRefused(cause)) {
                    throw new ConnectException("the schema registry refused this connector's credentials: " + cause.getMessage(),
                            cause);
                }
                return new Decoded.Bad(RejectionReason.MALFORMED_VALUE, key, e.getMessage());
            }
        }
        try {
            ColumnMapping.columns(value.schema());
        } catch (DataException e) {
            return new Decoded.Bad(RejectionReason.MALFORMED_VALUE, key, e.getMessage());
        }
        return Row.of(key, value, fence);
    }

    /**
     * The topic whose table a record goes to: for a marker the enforcer published, the accepted
     * topic it names in {@code fence.marker.target.topic}; otherwise the record's own topic. Only
     * a FENCE marker is routed by the header: a write keeps its producer's headers through the
     * enforcer, so on a write the header is the producer's, not the enforcer's.
     */
    public static String tableTopic(SinkRecord record) {
        Header target = record.headers().lastWithName(FenceHeaders.MARKER_TARGET_TOPIC);
        if (target != null && target.value() != null && isMarker(record)) {
            String topic = target.value() instanceof byte[] bytes ? FenceHeaders.decode(bytes) : target.value().toString();
            if (!topic.isBlank()) {
                return topic;
            }
        }
        return record.topic();
    }

    /**
     * Whether {@code record} is a {@code FENCE} marker that names the fence it superseded
     * ({@code fence.marker.previous}): the only kind of record that may wait for its row. A record whose
     * headers cannot be read is not (the decoder then says why).
     */
    public static boolean isTakeoverMarker(SinkRecord record) {
        try {
            return record.headers().lastWithName(FenceHeaders.MARKER_PREVIOUS) != null && isMarker(record);
        } catch (RuntimeException e) {
            return false;
        }
    }

    private static boolean isMarker(SinkRecord record) {
        FenceStamp.Parsed parsed = FenceStamp.parse(ConnectHeaderLookup.of(record.headers()));
        return parsed.valid() && parsed.stamp().op() == FenceOp.FENCE;
    }

    /**
     * The first {@code fence.rejected.*} header as {@code name=value} (the reason when there is one), or {@code null} when none.
     */
    private static String rejectedBefore(SinkRecord record) {
        Header found = record.headers().lastWithName(FenceHeaders.REJECTED_REASON);
        if (found == null) {
            for (Header header : record.headers()) {
                if (header.key().startsWith(FenceHeaders.REJECTED_PREFIX)) {
                    found = header;
                    break;
                }
            }
        }
        return found == null ? null : found.key() + "=" + printable(found.value());
    }

    /** A key or header value for logs and messages: bytes as (lenient) UTF-8 text. */
    public static String printable(Object value) {
        return value instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : String.valueOf(value);
    }

    /** The raw value; any other type means the worker is misconfigured, which no record can fix. */
    private static byte[] toBytes(Object value) {
        if (value == null || value instanceof byte[]) {
            return (byte[]) value;
        }
        throw new ConnectException("record value is a " + value.getClass().getName()
                + ", expected raw bytes or a Struct: set value.converter=org.apache.kafka.connect.converters.ByteArrayConverter"
                + " (or dev.fencedwrites.avro.connect.AvroConverter) for this connector");
    }
}
