package dev.fencedwrites.sink.internal;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import org.apache.kafka.connect.errors.ConnectException;

/**
 * The resource id of a record: its key as text, the way the enforcer sees it. The enforcer keeps
 * one fence per serialized key (the key's bytes); the wire contract says those bytes are UTF-8, so
 * a {@code String} key (from {@code StringConverter}) is taken as it is and a {@code byte[]} or
 * {@code ByteBuffer} key (from {@code ByteArrayConverter}) is decoded as UTF-8, strictly: every key
 * the enforcer tells apart stays apart in the table. Any other key type (a {@code Struct},
 * a number) comes from a key converter that cannot carry a resource id.
 */
public final class ResourceKeys {
    /**
     * Connect's converters whose keys are never text ({@code org.apache.kafka.connect.converters}):
     * a connector configured with one as {@code key.converter} can write no record.
     */
    public static final Set<String> NON_TEXT_CONVERTERS = Set.of(
            "org.apache.kafka.connect.converters.IntegerConverter", "org.apache.kafka.connect.converters.LongConverter",
            "org.apache.kafka.connect.converters.ShortConverter", "org.apache.kafka.connect.converters.FloatConverter",
            "org.apache.kafka.connect.converters.DoubleConverter", "org.apache.kafka.connect.converters.BooleanConverter");

    private ResourceKeys() {
    }

    /**
     * The key as text: {@code null} for a null key, a {@code String} as it is, bytes decoded as UTF-8.
     *
     * @throws CharacterCodingException if key bytes are not valid UTF-8 (the record is dead-lettered {@code MALFORMED_KEY})
     * @throws ConnectException         naming {@code key.converter} if the key is of any other type: a worker or connector
     * setting
     *                                  that no record can fix, so the task fails rather than dead-letter every record
     */
    public static String text(Object key) throws CharacterCodingException {
        if (key == null || key instanceof String) {
            return (String) key;
        }
        if (key instanceof byte[] bytes) {
            return decode(ByteBuffer.wrap(bytes));
        }
        if (key instanceof ByteBuffer buffer) {
            return decode(buffer.duplicate());
        }
        throw new ConnectException("record key is a " + key.getClass().getName()
                + ", but the fenced sink needs the resource id as text: set "
                + "key.converter=org.apache.kafka.connect.storage.StringConverter (or "
                + "org.apache.kafka.connect.converters.ByteArrayConverter, whose bytes it reads as UTF-8) for this connector");
    }

    private static String decode(ByteBuffer bytes) throws CharacterCodingException {
        return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT)
                .decode(bytes).toString();
    }
}
