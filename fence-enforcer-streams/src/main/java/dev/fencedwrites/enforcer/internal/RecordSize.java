package dev.fencedwrites.enforcer.internal;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.utils.Utils;

/**
 * Upper bounds of a record's size as Kafka counts it against a topic's {@code max.message.bytes}
 * and the producer's {@code max.request.size}: the record in a batch of its own, uncompressed
 * (the producer checks the uncompressed size too, KafkaProducer#ensureValidRecordSize).
 */
public final class RecordSize {
    /** A record batch's header (magic v2): 61 bytes. */
    static final int BATCH_OVERHEAD = 61;
    /**
     * A record's own framing at most: length, attributes, timestamp and offset deltas, key and value lengths, header count
     * (varints).
     */
    static final int RECORD_OVERHEAD = 40;
    /** Per header at most: the name's and the value's length varints. */
    static final int HEADER_OVERHEAD = 10;

    private RecordSize() {
    }

    /** The bound for a record of this key, value and headers; {@code null} key or value counts 0 bytes. */
    public static long upperBound(byte[] key, byte[] value, Iterable<Header> headers) {
        long size = BATCH_OVERHEAD + RECORD_OVERHEAD + length(key) + length(value);
        for (Header header : headers) {
            size += headerBytes(header) + HEADER_OVERHEAD;
        }
        return size;
    }

    /** The headers' names (UTF-8) and values, in bytes, without framing. */
    public static long headersBytes(Iterable<Header> headers) {
        long size = 0;
        for (Header header : headers) {
            size += headerBytes(header);
        }
        return size;
    }

    /** One header's name (UTF-8) and value, in bytes, without framing. */
    static long headerBytes(Header header) {
        // Counted, not encoded: no copy of the name per header per record.
        return Utils.utf8Length(header.key()) + length(header.value());
    }

    static int length(byte[] bytes) {
        return bytes == null ? 0 : bytes.length;
    }
}
