package dev.fencedwrites.avro;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;

/**
 * A bounded reader of Avro's binary encoding for {@link AvroPayloadCheck}: zig-zag varints (Avro
 * specification, "Binary Encoding"), lengths checked against the bytes that remain, and skips, all
 * within {@code length} bytes of an array from {@code offset}. It reads nothing into objects; every
 * problem is an {@link MalformedPayload} naming the byte offset within the payload.
 */
final class AvroBinaryCursor {
    private final byte[] data;
    private final int start;
    private final int end;
    private int pos;

    AvroBinaryCursor(byte[] data, int offset, int length) {
        this.data = data;
        this.start = offset;
        this.end = offset + length;
        this.pos = offset;
    }

    /** The current position in the array. */
    int pos() {
        return pos;
    }

    /** Bytes left after the current position. */
    int remaining() {
        return end - pos;
    }

    /** Bytes read since the start of the payload. */
    int consumed() {
        return pos - start;
    }

    /** The byte at array index {@code at}. */
    byte byteAt(int at) {
        return data[at];
    }

    /** {@code length} bytes at {@code at} as UTF-8 text (for messages). */
    String utf8(int at, int length) {
        return new String(data, at, length, StandardCharsets.UTF_8);
    }

    /** {@code length} bytes at {@code at} as a big-endian two's-complement integer. */
    BigInteger bigInteger(int at, int length) {
        return new BigInteger(data, at, length);
    }

    /** A string's, bytes' or map key's length: not negative and no more than what remains. */
    int length(String what) throws MalformedPayload {
        int at = pos;
        long length = readLong(what + " length");
        if (length < 0) {
            throw malformed(what + " length " + length + " is negative", at);
        }
        if (length > end - pos) {
            throw malformed(what + " of " + length + " bytes, but only " + (end - pos)
                    + " remain (the length lies or the value is truncated)", at);
        }
        return (int) length;
    }

    /** Moves past {@code n} bytes; returns where they start. */
    int take(int n, String what) throws MalformedPayload {
        if (n > end - pos) {
            throw malformed("truncated: the value ends inside a " + what + " (needs " + n + " bytes, " + (end - pos) + " remain)",
                    pos);
        }
        int at = pos;
        pos += n;
        return at;
    }

    /** A zig-zag varint of at most 5 bytes within 32 bits, as Avro writes an int. */
    int readInt(String what) throws MalformedPayload {
        int at = pos;
        int raw = 0;
        for (int i = 0; i < 5; i++) {
            if (pos >= end) {
                throw malformed("truncated: the value ends inside an int (" + what + ")", at);
            }
            int b = data[pos++] & 0xFF;
            if (i == 4 && b > 0x0F) {
                throw malformed("malformed int (" + what + "): its varint runs past 32 bits", at);
            }
            raw |= (b & 0x7F) << (7 * i);
            if ((b & 0x80) == 0) {
                return (raw >>> 1) ^ -(raw & 1);
            }
        }
        throw malformed("malformed int (" + what + "): more than 5 bytes", at);
    }

    /** A zig-zag varint of at most 10 bytes within 64 bits, as Avro writes a long. */
    long readLong(String what) throws MalformedPayload {
        int at = pos;
        long raw = 0;
        for (int i = 0; i < 10; i++) {
            if (pos >= end) {
                throw malformed("truncated: the value ends inside a long (" + what + ")", at);
            }
            int b = data[pos++] & 0xFF;
            if (i == 9 && b > 1) {
                throw malformed("malformed long (" + what + "): its varint runs past 64 bits", at);
            }
            raw |= (long) (b & 0x7F) << (7 * i);
            if ((b & 0x80) == 0) {
                return (raw >>> 1) ^ -(raw & 1);
            }
        }
        throw malformed("malformed long (" + what + "): more than 10 bytes", at);
    }

    /** A problem at array index {@code at}, its message ending with the byte offset within the payload. */
    MalformedPayload malformed(String problem, int at) {
        return new MalformedPayload(problem + " (at byte " + (at - start) + " of " + (end - start) + ")");
    }
}
