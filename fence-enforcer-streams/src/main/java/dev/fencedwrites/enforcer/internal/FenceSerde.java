package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.Fence;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.ByteUtils;

/**
 * State store value serde for a {@link StoredFence}, in five formats; it writes versions 1 to 4 and
 * reads all five, so a changelog written by any earlier version still restores.
 *
 * <ul>
 *   <li>16 bytes, the first below {@code 0x80}: token then seq, big-endian longs (seq -1 = absent). A
 *       fence without history ({@link StoredFence#of}). Tokens are positive, so the first byte never
 *       has its top bit set.</li>
 *   <li>Version 1, first byte {@code 0x81}, then zig-zag varlongs (Kafka's record encoding): the base
 *       token (0 = no base) and, with a base, its seq; an unsigned varint count of accepts; with
 *       accepts, {@code since} and per accept the offset's difference from the previous accept's (the
 *       first's from {@code since}), the token's difference from the previous fence's (the first's from
 *       the base's, or 0), and the seq. A fence without history takes 4 to 13 bytes, a key accepted
 *       once about 10.</li>
 *   <li>Version 2, first byte {@code 0x82}: version 1's fields, then the lease confirmed for the
 *       current fence's token as a zig-zag varlong. Written only when that lease is known;
 *       a value without one is written as version 1, so an enforcer without token verification
 *       writes what earlier versions read.</li>
 *   <li>Version 3, first byte {@code 0x83}: version 1's fields, the lease as a zig-zag varlong (0:
 *       unknown), then the input partition of the history's offsets as an unsigned varint (
 *       records re-routed from another input partition). Written only for such a history; enforcers
 *       from before re-routing cannot read it.</li>
 *   <li>Version 4, first byte {@code 0x84}: the base, the count of accepts, {@code since} (always), the accepts, the
 *       lease as a zig-zag varlong, the input partition plus one as an unsigned varint, then the count of remembered
 *       rejections as an unsigned varint and per rejection its offset's difference from the previous one's (the first's
 *       from {@code since}) as a zig-zag varlong and its reason's ordinal as an unsigned varint. Written only for a value
 *       that remembers rejections (at_least_once); enforcers from before cannot read it.</li>
 * </ul>
 *
 * A value in neither format fails with a {@link SerializationException} naming what is wrong.
 */
public final class FenceSerde implements Serde<StoredFence> {
    private static final int LEGACY_SIZE = 16;
    /**
     * The largest value {@link #write} produces: the version byte, the base (two varlongs), the
     * count (an unsigned varint) and {@code since}, then {@link StoredFence#MAX_ACCEPTS} accepts of
     * three varlongs; a varlong takes at most 10 bytes, an unsigned varint 5.
     */
    public static final int MAX_SIZE_BYTES = 1 + 10 + 10 + 5 + 10 + StoredFence.MAX_ACCEPTS * 30 + 10 + 5 + 5
            + StoredFence.MAX_REJECTIONS * 15;
    private static final byte VERSION_1 = (byte) 0x81;
    private static final byte VERSION_2 = (byte) 0x82;
    private static final byte VERSION_3 = (byte) 0x83;
    private static final byte VERSION_4 = (byte) 0x84;
    /** The fewest bytes one accept takes: three varlongs of one byte. */
    private static final int MIN_ACCEPT_BYTES = 3;

    @Override
    public Serializer<StoredFence> serializer() {
        return (topic, stored) -> stored == null ? null : write(stored);
    }

    @Override
    public Deserializer<StoredFence> deserializer() {
        return (topic, bytes) -> bytes == null ? null : read(bytes);
    }

    static byte[] write(StoredFence stored) {
        if (stored.rejectionCount() > 0) {
            return writeVersion4(stored);
        }
        Fence base = stored.base();
        long baseToken = base == null ? 0 : base.token();
        boolean history = stored.acceptCount() > 0;
        int size = 1 + ByteUtils.sizeOfVarlong(baseToken) + (base == null ? 0 : ByteUtils.sizeOfVarlong(base.seq()))
                + ByteUtils.sizeOfUnsignedVarint(stored.acceptCount()) + (history ? ByteUtils.sizeOfVarlong(stored.since()) : 0)
                + (stored.lease() != 0 || rerouted(stored) ? ByteUtils.sizeOfVarlong(stored.lease()) : 0)
                + (rerouted(stored) ? ByteUtils.sizeOfUnsignedVarint(stored.origin()) : 0);
        long offset = stored.since();
        long token = baseToken;
        for (int i = 0; i < stored.acceptCount(); i++) {
            size += ByteUtils.sizeOfVarlong(stored.offsetAt(i) - offset) + ByteUtils.sizeOfVarlong(stored.tokenAt(i) - token)
                    + ByteUtils.sizeOfVarlong(stored.seqAt(i));
            offset = stored.offsetAt(i);
            token = stored.tokenAt(i);
        }
        ByteBuffer buffer = ByteBuffer.allocate(size);
        buffer.put(rerouted(stored) ? VERSION_3 : stored.lease() != 0 ? VERSION_2 : VERSION_1);
        ByteUtils.writeVarlong(baseToken, buffer);
        if (base != null) {
            ByteUtils.writeVarlong(base.seq(), buffer);
        }
        ByteUtils.writeUnsignedVarint(stored.acceptCount(), buffer);
        if (history) {
            ByteUtils.writeVarlong(stored.since(), buffer);
        }
        writeAccepts(stored, baseToken, buffer);
        if (stored.lease() != 0 || rerouted(stored)) {
            ByteUtils.writeVarlong(stored.lease(), buffer);
        }
        if (rerouted(stored)) {
            ByteUtils.writeUnsignedVarint(stored.origin(), buffer);
        }
        return buffer.array();
    }

    /** Version 4: a value that remembers rejections. */
    private static byte[] writeVersion4(StoredFence stored) {
        Fence base = stored.base();
        long baseToken = base == null ? 0 : base.token();
        ByteBuffer buffer = ByteBuffer.allocate(MAX_SIZE_BYTES);
        buffer.put(VERSION_4);
        ByteUtils.writeVarlong(baseToken, buffer);
        if (base != null) {
            ByteUtils.writeVarlong(base.seq(), buffer);
        }
        ByteUtils.writeUnsignedVarint(stored.acceptCount(), buffer);
        ByteUtils.writeVarlong(stored.since(), buffer);
        writeAccepts(stored, baseToken, buffer);
        ByteUtils.writeVarlong(stored.lease(), buffer);
        ByteUtils.writeUnsignedVarint(stored.origin() + 1, buffer);
        ByteUtils.writeUnsignedVarint(stored.rejectionCount(), buffer);
        long offset = stored.since();
        for (int i = 0; i < stored.rejectionCount(); i++) {
            ByteUtils.writeVarlong(stored.rejectionOffsetAt(i) - offset, buffer);
            ByteUtils.writeUnsignedVarint(stored.rejectionAt(i).ordinal(), buffer);
            offset = stored.rejectionOffsetAt(i);
        }
        return Arrays.copyOf(buffer.array(), buffer.position());
    }

    private static boolean rerouted(StoredFence stored) {
        return stored.origin() != StoredFence.OWN;
    }

    static StoredFence read(byte[] bytes) {
        if (bytes.length == LEGACY_SIZE && bytes[0] >= 0) {
            ByteBuffer buffer = ByteBuffer.wrap(bytes);
            return StoredFence.of(fence(buffer.getLong(), buffer.getLong()));
        }
        if (bytes.length > 0 && bytes[0] == VERSION_4) {
            return readVersion4(bytes);
        }
        if (bytes.length == 0 || (bytes[0] != VERSION_1 && bytes[0] != VERSION_2 && bytes[0] != VERSION_3)) {
            throw new SerializationException("stored fence has "
                    + bytes.length + " bytes" + (bytes.length == 0
                            ? ""
                            : String.format(
                                    " starting with 0x%02x", bytes[0]))
                    + ": neither the 16-byte format nor version 1 (0x81), 2 (0x82), 3 (0x83) or 4 (0x84)");
        }
        boolean withLease = bytes[0] == VERSION_2;
        boolean withOrigin = bytes[0] == VERSION_3;
        ByteBuffer buffer = ByteBuffer.wrap(bytes, 1, bytes.length - 1);
        try {
            long baseToken = ByteUtils.readVarlong(buffer);
            Fence base = baseToken == 0 ? null : fence(baseToken, ByteUtils.readVarlong(buffer));
            int count = ByteUtils.readUnsignedVarint(buffer);
            long since = count == 0 ? StoredFence.UNKNOWN : ByteUtils.readVarlong(buffer);
            // An unsigned varint past Integer.MAX_VALUE reads as negative: refused here, before any array is sized by it.
            if (count < 0 || count > buffer.remaining() / MIN_ACCEPT_BYTES) {
                throw new SerializationException("stored fence claims " + count + " accepts in " + buffer.remaining() + " bytes");
            }
            long[] accepts = readAccepts(buffer, count, since, baseToken);
            long lease = withLease || withOrigin ? ByteUtils.readVarlong(buffer) : 0;
            if (withLease && lease <= 0) {
                throw new SerializationException(
                        "stored fence of version 2 has lease " + lease + ", expected a positive etcd lease id");
            }
            int origin = withOrigin ? ByteUtils.readUnsignedVarint(buffer) : StoredFence.OWN;
            if (withOrigin && count == 0) {
                throw new SerializationException("stored fence of version 3 has no accepts for its input partition " + origin);
            }
            if (buffer.hasRemaining()) {
                throw new SerializationException(
                        "stored fence has " + buffer.remaining() + " bytes after its last "
                                + (withLease || withOrigin ? "field" : "accept"));
            }
            return new StoredFence(base, since, accepts, lease, origin);
        } catch (BufferUnderflowException e) {
            throw new SerializationException("stored fence of " + bytes.length + " bytes is truncated", e);
        } catch (IllegalArgumentException e) {
            throw new SerializationException("stored fence is malformed: " + e.getMessage(), e);
        }
    }

    private static StoredFence readVersion4(byte[] bytes) {
        ByteBuffer buffer = ByteBuffer.wrap(bytes, 1, bytes.length - 1);
        try {
            long baseToken = ByteUtils.readVarlong(buffer);
            Fence base = baseToken == 0 ? null : fence(baseToken, ByteUtils.readVarlong(buffer));
            int count = ByteUtils.readUnsignedVarint(buffer);
            long since = ByteUtils.readVarlong(buffer);
            if (count < 0 || count > buffer.remaining() / MIN_ACCEPT_BYTES) {
                throw new SerializationException("stored fence claims " + count + " accepts in " + buffer.remaining() + " bytes");
            }
            long[] accepts = readAccepts(buffer, count, since, baseToken);
            long lease = ByteUtils.readVarlong(buffer);
            int origin = ByteUtils.readUnsignedVarint(buffer) - 1;
            int rejected = ByteUtils.readUnsignedVarint(buffer);
            if (count > StoredFence.MAX_ACCEPTS || rejected < 1 || rejected > StoredFence.MAX_REJECTIONS
                    || rejected > buffer.remaining() / 2) {
                throw new SerializationException("stored fence of version 4 claims " + count + " accepts and " + rejected
                        + " rejections in " + buffer.remaining() + " bytes (at most " + StoredFence.MAX_ACCEPTS + " and "
                        + StoredFence.MAX_REJECTIONS + ")");
            }
            long[] rejections = new long[2 * rejected];
            long offset = since;
            for (int i = 0; i < rejections.length; i += 2) {
                offset += ByteUtils.readVarlong(buffer);
                rejections[i] = offset;
                rejections[i + 1] = ByteUtils.readUnsignedVarint(buffer);
            }
            if (buffer.hasRemaining()) {
                throw new SerializationException("stored fence has " + buffer.remaining() + " bytes after its last rejection");
            }
            return new StoredFence(base, since, accepts, lease, origin, rejections);
        } catch (BufferUnderflowException e) {
            throw new SerializationException("stored fence of " + bytes.length + " bytes is truncated", e);
        } catch (IllegalArgumentException e) {
            throw new SerializationException("stored fence is malformed: " + e.getMessage(), e);
        }
    }

    /** Writes the accepts: per accept its offset's and token's differences from the previous (from since, the base) and seq. */
    private static void writeAccepts(StoredFence stored, long baseToken, ByteBuffer buffer) {
        long offset = stored.since();
        long token = baseToken;
        for (int i = 0; i < stored.acceptCount(); i++) {
            ByteUtils.writeVarlong(stored.offsetAt(i) - offset, buffer);
            ByteUtils.writeVarlong(stored.tokenAt(i) - token, buffer);
            ByteUtils.writeVarlong(stored.seqAt(i), buffer);
            offset = stored.offsetAt(i);
            token = stored.tokenAt(i);
        }
    }

    /**
     * Reads {@code count} accepts as {@link #writeAccepts} wrote them, packed as StoredFence keeps them (no
     * Accept or Fence object per accept); its constructor checks each.
     */
    private static long[] readAccepts(ByteBuffer buffer, int count, long since, long baseToken) {
        long[] accepts = new long[3 * count];
        long offset = since;
        long token = baseToken;
        for (int i = 0; i < accepts.length; i += 3) {
            offset += ByteUtils.readVarlong(buffer);
            token += ByteUtils.readVarlong(buffer);
            accepts[i] = offset;
            accepts[i + 1] = token;
            accepts[i + 2] = ByteUtils.readVarlong(buffer);
        }
        return accepts;
    }

    private static Fence fence(long token, long seq) {
        try {
            return new Fence(token, seq);
        } catch (IllegalArgumentException e) {
            throw new SerializationException("stored fence is malformed: " + e.getMessage(), e);
        }
    }
}
