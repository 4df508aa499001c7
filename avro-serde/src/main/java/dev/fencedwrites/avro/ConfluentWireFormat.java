package dev.fencedwrites.avro;

import java.nio.ByteBuffer;
import org.apache.kafka.common.errors.SerializationException;

/**
 * The Confluent wire format: magic byte 0, 4-byte big-endian schema id, then the Avro binary.
 */
final class ConfluentWireFormat {
    static final byte MAGIC_BYTE = 0;
    static final int HEADER_SIZE = 5;

    private ConfluentWireFormat() {
    }

    /** Reads and checks the header, leaving {@code buffer} at the Avro payload; returns the schema id. */
    static int readSchemaId(ByteBuffer buffer) {
        if (buffer.remaining() < HEADER_SIZE) {
            throw new SerializationException("value of " + buffer.remaining()
                    + " bytes is too short for the Confluent wire format (magic byte + 4-byte schema id)");
        }
        byte magic = buffer.get();
        if (magic != MAGIC_BYTE) {
            throw new SerializationException("unknown magic byte " + magic + ": not the Confluent wire format");
        }
        return buffer.getInt();
    }
}
