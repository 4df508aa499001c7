package dev.fencedwrites.enforcer.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.enforcer.internal.StoredFence.Accept;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.utils.ByteUtils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The fence store's value formats: the 16-byte one of earlier versions is still read; version 1 round-trips; anything else fails
 * clearly.
 */
class FenceSerdeTest {
    private final FenceSerde serde = new FenceSerde();

    /**
     * A version 4 value keeps each remembered rejection's reason by ordinal, and changelogs outlive releases: the reasons a
     * value can remember keep their numbers (reordering the enum would make old values replay another reason).
     */
    @Test
    void theReasonsAValueRemembersKeepTheirNumbers() {
        assertThat(RejectionReason.TOO_LARGE.ordinal()).isEqualTo(10);
        assertThat(RejectionReason.FUTURE_TOKEN.ordinal()).isEqualTo(17);
        assertThat(RejectionReason.UNVERIFIABLE_TOKEN.ordinal()).isEqualTo(21);
        assertThat(FenceProcessor.MAY_COME_OUT_OTHERWISE).containsExactlyInAnyOrder(RejectionReason.TOO_LARGE,
                RejectionReason.FUTURE_TOKEN, RejectionReason.UNVERIFIABLE_TOKEN);
    }

    @Test
    void readsTheSixteenByteFormatOfEarlierVersions() {
        byte[] legacy = ByteBuffer.allocate(16).putLong(42).putLong(7).array();

        assertThat(serde.deserializer().deserialize("t", legacy)).isEqualTo(StoredFence.of(new Fence(42, 7)));
    }

    @Test
    void readsASixteenByteValueWithoutSeq() {
        byte[] legacy = ByteBuffer.allocate(16).putLong(42).putLong(Fence.NO_SEQ).array();

        assertThat(serde.deserializer().deserialize("t", legacy).fence()).isEqualTo(Fence.of(42));
    }

    /** The changelog limit check keeps room for the largest value the serde writes; the worst case must stay within it. */
    @Test
    void theLargestValueFitsMaxSizeBytes() {
        List<Accept> accepts = new ArrayList<>();
        for (int i = 0; i < StoredFence.MAX_ACCEPTS; i++) {
            long offset = i == 0 ? 0 : Long.MAX_VALUE / 2 + i;
            accepts.add(new Accept(offset, new Fence(i % 2 == 0 ? Long.MAX_VALUE : 1, Long.MAX_VALUE)));
        }
        StoredFence worst = new StoredFence(new Fence(Long.MAX_VALUE, Long.MAX_VALUE), 0, accepts, Long.MAX_VALUE);

        assertThat(FenceSerde.write(worst).length).isLessThanOrEqualTo(FenceSerde.MAX_SIZE_BYTES);
        assertThat(FenceSerde.read(FenceSerde.write(worst))).isEqualTo(worst);
    }

    /**
     * Remembered rejections (at_least_once: a rejection a replay could decide otherwise) are kept in version 4, also for a
     * key with no fence and no accepts, and the worst case still fits MAX_SIZE_BYTES.
     */
    @Test
    void keepsRememberedRejectionsInVersionFour() {
        StoredFence unfenced = StoredFence.afterRejection(null, StoredFence.OWN, 40, RejectionReason.FUTURE_TOKEN, 0);
        StoredFence fenced = StoredFence.afterRejection(
                StoredFence.afterAccept(StoredFence.of(new Fence(5, 1)), 3, 17, new Fence(6, 1), 0, 60), 3, 18,
                RejectionReason.TOO_LARGE, 0);
        List<Accept> accepts = new ArrayList<>();
        for (int i = 0; i < StoredFence.MAX_ACCEPTS; i++) {
            accepts.add(new Accept(i == 0 ? 0 : Long.MAX_VALUE / 4 + i, new Fence(i % 2 == 0 ? Long.MAX_VALUE : 1,
                    Long.MAX_VALUE)));
        }
        StoredFence worst = new StoredFence(new Fence(Long.MAX_VALUE, Long.MAX_VALUE), 0, accepts, Long.MAX_VALUE,
                Integer.MAX_VALUE - 1);
        for (int i = 0; i < StoredFence.MAX_REJECTIONS; i++) {
            worst = StoredFence.afterRejection(worst, Integer.MAX_VALUE - 1, Long.MAX_VALUE / 2 + i * (Long.MAX_VALUE / 256),
                    RejectionReason.values()[RejectionReason.values().length - 1], 0);
        }

        assertThat(roundTrip(unfenced)).isEqualTo(unfenced);
        assertThat(roundTrip(unfenced).fence()).isNull();
        assertThat(roundTrip(unfenced).rejectedAt(StoredFence.OWN, 40)).isEqualTo(RejectionReason.FUTURE_TOKEN);
        assertThat(roundTrip(fenced)).isEqualTo(fenced);
        assertThat(roundTrip(fenced).rejectedAt(3, 18)).isEqualTo(RejectionReason.TOO_LARGE);
        assertThat(roundTrip(fenced).fence()).isEqualTo(new Fence(6, 1));
        assertThat(FenceSerde.write(fenced)[0]).isEqualTo((byte) 0x84);
        assertThat(worst.rejectionCount()).isEqualTo(StoredFence.MAX_REJECTIONS);
        assertThat(FenceSerde.write(worst).length).isLessThanOrEqualTo(FenceSerde.MAX_SIZE_BYTES);
        assertThat(roundTrip(worst)).isEqualTo(worst);
    }

    /** The lease confirmed for the fence's token is kept (version 2); without one, version 1 is written, as before. */
    @Test
    void keepsTheConfirmedLeaseInVersionTwoAndWritesVersionOneWithout() {
        StoredFence leased = StoredFence.afterAccept(StoredFence.of(new Fence(5, 1)), 7, new Fence(6, 0), 0,
                7_587_899_286_109_583_620L);
        StoredFence unleased = StoredFence.of(new Fence(6, 0));

        assertThat(roundTrip(leased)).isEqualTo(leased);
        assertThat(roundTrip(leased).lease()).isEqualTo(7_587_899_286_109_583_620L);
        assertThat(FenceSerde.write(leased)[0]).isEqualTo((byte) 0x82);
        assertThat(FenceSerde.write(unleased)[0]).isEqualTo((byte) 0x81);
        assertThat(roundTrip(unleased).lease()).isZero();
    }

    @Test
    void aVersionTwoValueWithoutAPositiveLeaseIsRefused() {
        byte[] bytes = FenceSerde.write(StoredFence.of(new Fence(6, 0), 9));
        bytes[bytes.length - 1] = 0; // the varlong lease 9 becomes 0

        assertThatThrownBy(() -> FenceSerde.read(bytes)).isInstanceOf(SerializationException.class)
                .hasMessageContaining("lease 0");
    }

    @Test
    void roundTripsAHistory() {
        StoredFence value = new StoredFence(new Fence(5, 1), 1_000_000L,
                List.of(new Accept(1_000_003L, new Fence(6, 1)), new Accept(1_000_004L, Fence.of(6)),
                        new Accept(2_000_000L, new Fence(Long.MAX_VALUE, 0))));

        assertThat(roundTrip(value)).isEqualTo(value);
    }

    @Test
    void roundTripsAFirstAcceptWithoutBase() {
        StoredFence value = StoredFence.afterAccept(null, 12_345, new Fence(9, 1), 0);

        assertThat(roundTrip(value)).isEqualTo(value);
    }

    @Test
    void roundTripsAFenceWithoutHistory() {
        assertThat(roundTrip(StoredFence.of(new Fence(3, Fence.NO_SEQ)))).isEqualTo(StoredFence.of(Fence.of(3)));
    }

    @Test
    void writesNoValueOfSixteenBytesThatReadsAsTheOldFormat() {
        StoredFence value = new StoredFence(new Fence(1L << 40, 1L << 40), 0,
                List.of(new Accept(1, new Fence(1L << 40, (1L << 40) + 1))));

        byte[] bytes = serde.serializer().serialize("t", value);

        assertThat(bytes[0]).isEqualTo((byte) 0x81);
        assertThat(roundTrip(value)).isEqualTo(value);
    }

    @Test
    void keyAcceptedOnceTakesFewerBytesThanTheOldFormat() {
        byte[] bytes = serde.serializer().serialize("t", StoredFence.afterAccept(null, 300_000, new Fence(1_000, 1), 0));

        assertThat(bytes.length).isLessThan(16);
    }

    /** A history of records re-routed from input partition 2 keeps its partition, as version 3. */
    @Test
    void roundTripsTheInputPartitionOfAReroutedHistoryAsVersion3() {
        StoredFence rerouted = StoredFence.afterAccept(StoredFence.of(Fence.of(3)), 2, 40, new Fence(9, 1), 0, 0);
        StoredFence leased = StoredFence.afterAccept(rerouted, 2, 41, new Fence(9, 2), 0, 77);

        assertThat(FenceSerde.write(rerouted)[0]).isEqualTo((byte) 0x83);
        assertThat(roundTrip(rerouted)).isEqualTo(rerouted);
        assertThat(roundTrip(leased)).isEqualTo(leased);
        assertThat(roundTrip(leased).origin()).isEqualTo(2);
        assertThat(FenceSerde.write(StoredFence.afterAccept(null, 40, new Fence(9, 1), 0))[0])
                .as("a history of the key's own partition keeps the earlier format").isEqualTo((byte) 0x81);
    }

    @Test
    void refusesAnUnknownFormat() {
        assertThatThrownBy(() -> serde.deserializer().deserialize("t", new byte[]{(byte) 0x85, 0, 0}))
                .isInstanceOf(SerializationException.class).hasMessageContaining("0x85");
        assertThatThrownBy(() -> serde.deserializer().deserialize("t", new byte[]{(byte) 0x84, 0, 0}))
                .isInstanceOf(SerializationException.class).hasMessageContaining("truncated");
        assertThatThrownBy(() -> serde.deserializer().deserialize("t", new byte[0])).isInstanceOf(SerializationException.class);
    }

    @Test
    void refusesATruncatedValue() {
        byte[] bytes = serde.serializer().serialize("t", StoredFence.afterAccept(null, 12_345, new Fence(9, 1), 0));

        assertThatThrownBy(() -> serde.deserializer().deserialize("t", Arrays.copyOf(bytes, bytes.length - 1)))
                .isInstanceOf(SerializationException.class).hasMessageContaining("truncated");
    }

    @Test
    void refusesBytesAfterTheLastAccept() {
        byte[] bytes = serde.serializer().serialize("t", StoredFence.afterAccept(null, 12_345, new Fence(9, 1), 0));

        assertThatThrownBy(() -> serde.deserializer().deserialize("t", Arrays.copyOf(bytes, bytes.length + 1)))
                .isInstanceOf(SerializationException.class).hasMessageContaining("after its last accept");
    }

    /** A count larger than the bytes could hold would otherwise allocate before failing. */
    @Test
    void refusesACountTheBytesCannotHold() {
        byte[] bytes = {(byte) 0x81, 0, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x07, 0};

        assertThatThrownBy(() -> serde.deserializer().deserialize("t", bytes)).isInstanceOf(SerializationException.class)
                .hasMessageContaining("claims");
    }

    /**
     * Counts past Integer.MAX_VALUE read as negative ints: -1, one whose triple wraps to 1, and one whose triple is
     * Integer.MAX_VALUE (an 8-byte value asking for a 16 GB array). Found by the review of the packed history.
     */
    @ParameterizedTest(name = "count bytes {0}")
    @ValueSource(strings = {"ff ff ff ff 0f", "ab d5 aa d5 0a", "d5 aa d5 aa 0d"})
    void refusesACountThatReadsAsNegative(String count) {
        ByteBuffer bytes = ByteBuffer.allocate(32).put((byte) 0x81).put((byte) 0);
        for (String hex : count.split(" ")) {
            bytes.put((byte) Integer.parseInt(hex, 16));
        }
        bytes.put(new byte[]{0, 0, 2});
        byte[] value = Arrays.copyOf(bytes.array(), bytes.position());

        assertThatThrownBy(() -> serde.deserializer().deserialize("t", value)).isInstanceOf(SerializationException.class)
                .hasMessageContaining("claims");
    }

    /**
     * A version 4 value, written field by field: no base, {@code count} accepts claimed (each written as 3 one-byte
     * varlongs when {@code written} says so), since 0, lease 5, no origin, {@code rejected} rejections claimed and
     * {@code rejectionsWritten} written (offset delta 1, reason 0).
     */
    private static byte[] version4(int count, int written, int rejected, int rejectionsWritten) {
        ByteBuffer buffer = ByteBuffer.allocate(64).put((byte) 0x84);
        ByteUtils.writeVarlong(0, buffer);
        ByteUtils.writeUnsignedVarint(count, buffer);
        ByteUtils.writeVarlong(0, buffer);
        for (int i = 0; i < written; i++) {
            ByteUtils.writeVarlong(1, buffer);
            ByteUtils.writeVarlong(i + 1, buffer);
            ByteUtils.writeVarlong(1, buffer);
        }
        ByteUtils.writeVarlong(5, buffer);
        ByteUtils.writeUnsignedVarint(0, buffer);
        ByteUtils.writeUnsignedVarint(rejected, buffer);
        for (int i = 0; i < rejectionsWritten; i++) {
            ByteUtils.writeVarlong(1, buffer);
            ByteUtils.writeUnsignedVarint(0, buffer);
        }
        return Arrays.copyOf(buffer.array(), buffer.position());
    }

    @Test
    void readsAVersion4ValueWrittenFieldByField() {
        StoredFence stored = serde.deserializer().deserialize("t", version4(2, 2, 1, 1));

        assertThat(stored.acceptCount()).isEqualTo(2);
        assertThat(stored.lease()).isEqualTo(5);
        assertThat(serde.serializer().serialize("t", stored)).isEqualTo(version4(2, 2, 1, 1));
    }

    /** More accepts than the bytes after them could hold (3 bytes each at least) is refused before reading them. */
    @Test
    void refusesAVersion4CountTheBytesCannotHold() {
        assertThatThrownBy(() -> serde.deserializer().deserialize("t", version4(5, 2, 1, 1)))
                .isInstanceOf(SerializationException.class).hasMessageContaining("claims 5 accepts in 11 bytes");
    }

    /** A count the bytes could just hold passes the first check and is read until the bytes run out. */
    @Test
    void readsAVersion4CountThatJustFitsUntilTheBytesRunOut() {
        byte[] value = Arrays.copyOf(version4(3, 3, 1, 1), 4 + 3 * 3); // version, base, count, since and the accepts

        assertThatThrownBy(() -> serde.deserializer().deserialize("t", value)).isInstanceOf(SerializationException.class)
                .hasMessageContaining("truncated");
    }

    /** More rejections than the bytes after them could hold (2 bytes each at least) is refused before reading them. */
    @Test
    void refusesVersion4RejectionsTheBytesCannotHold() {
        assertThatThrownBy(() -> serde.deserializer().deserialize("t", version4(1, 1, 3, 1)))
                .isInstanceOf(SerializationException.class).hasMessageContaining("claims 1 accepts and 3 rejections in 2 bytes");
    }

    @ParameterizedTest(name = "token bytes {0}")
    @ValueSource(longs = {0, -1})
    void refusesANonPositiveTokenInTheOldFormat(long token) {
        byte[] legacy = ByteBuffer.allocate(16).putLong(token).putLong(1).array();

        assertThatThrownBy(() -> serde.deserializer().deserialize("t", legacy)).isInstanceOf(SerializationException.class);
    }

    @Test
    void refusesAVersionOneValueWithNeitherBaseNorAccept() {
        assertThatThrownBy(() -> serde.deserializer().deserialize("t", new byte[]{(byte) 0x81, 0, 0}))
                .isInstanceOf(SerializationException.class).hasMessageContaining("malformed");
    }

    private StoredFence roundTrip(StoredFence value) {
        return serde.deserializer().deserialize("t", serde.serializer().serialize("t", value));
    }
}
