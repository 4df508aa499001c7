package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.schemas.Fence;
import java.nio.ByteBuffer;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/**
 * State store value serde for a {@link Fence}: 16 bytes, token then seq, both big-endian longs
 * (seq -1 = absent). Fixed size keeps the changelog small and cheap to restore.
 */
public final class FenceSerde implements Serde<Fence> {
    private static final int SIZE = 16;

    @Override
    public Serializer<Fence> serializer() {
        return (topic, fence) -> fence == null ? null : ByteBuffer.allocate(SIZE).putLong(fence.token()).putLong(fence.seq()).array();
    }

    @Override
    public Deserializer<Fence> deserializer() {
        return (topic, bytes) -> {
            if (bytes == null) {
                return null;
            }
            if (bytes.length != SIZE) {
                throw new SerializationException("stored fence has " + bytes.length + " bytes, expected " + SIZE);
            }
            ByteBuffer buffer = ByteBuffer.wrap(bytes);
            return new Fence(buffer.getLong(), buffer.getLong());
        };
    }
}
