package dev.fencedwrites.avro;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Builds a value in the Confluent wire format byte by byte, so a test can write what no Avro
 * encoder would: lengths and counts that lie, indexes out of range, truncated or padded payloads.
 */
final class AvroPayload {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();

    private AvroPayload(int schemaId) {
        out.write(0);
        out.writeBytes(ByteBuffer.allocate(4).putInt(schemaId).array());
    }

    /** A payload starting with the wire format's header for {@code schemaId}. */
    static AvroPayload withSchemaId(int schemaId) {
        return new AvroPayload(schemaId);
    }

    /** An Avro {@code long} (or {@code int}, length, count, index): zig-zag, then base-128 varint. */
    AvroPayload varint(long value) {
        long zigzag = (value << 1) ^ (value >> 63);
        while ((zigzag & ~0x7FL) != 0) {
            out.write((int) ((zigzag & 0x7F) | 0x80));
            zigzag >>>= 7;
        }
        out.write((int) zigzag);
        return this;
    }

    /** Raw bytes as they are. */
    AvroPayload raw(int... bytes) {
        for (int b : bytes) {
            out.write(b);
        }
        return this;
    }

    /** An Avro string: its length, then its UTF-8 bytes. */
    AvroPayload string(String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        varint(bytes.length);
        out.writeBytes(bytes);
        return this;
    }

    byte[] bytes() {
        return out.toByteArray();
    }
}
