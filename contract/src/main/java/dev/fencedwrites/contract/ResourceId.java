package dev.fencedwrites.contract;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * The wire contract's record key: the resource id as UTF-8 text. Keys that differ only in bytes that are not UTF-8 would be
 * two fences in the enforcer but one row behind a Connect {@code StringConverter} (both decode to U+FFFD), so the enforcer
 * rejects them {@link RejectionReason#MALFORMED_KEY}. Source: RFC 3629 (well-formed UTF-8), as Java's strict decoder reads it.
 */
public final class ResourceId {
    private ResourceId() {
    }

    /** Whether {@code key} is well-formed UTF-8; ASCII keys, the common case, are checked without decoding. */
    public static boolean isUtf8(byte[] key) {
        for (byte b : key) {
            if (b < 0) {
                return decodes(key);
            }
        }
        return true;
    }

    private static boolean decodes(byte[] key) {
        try {
            StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(key));
            return true;
        } catch (CharacterCodingException e) {
            return false;
        }
    }
}
