package dev.fencedwrites.sink.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.ByteBuffer;
import java.util.Base64;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;

/** Connect values of array and map fields as the JSON text of their {@code JSONB} columns ({@link ColumnMapping}'s rule). */
final class JsonValues {
    private static final ObjectMapper JSON = new ObjectMapper();

    private JsonValues() {
    }

    /** The bytes a buffer holds from its position to its limit, without moving it. */
    static byte[] bytes(ByteBuffer buffer) {
        byte[] copy = new byte[buffer.remaining()];
        buffer.duplicate().get(copy);
        return copy;
    }

    /** Arrays and maps as JSON; Structs inside become objects, bytes base64 text. */
    static String json(Object value) {
        try {
            return JSON.writeValueAsString(plain(value));
        } catch (JsonProcessingException e) {
            throw new DataException("cannot write " + value.getClass().getSimpleName() + " as JSON: " + e.getMessage(), e);
        }
    }

    private static Object plain(Object value) {
        if (value instanceof Struct struct) {
            Map<String, Object> object = new LinkedHashMap<>();
            for (Field field : struct.schema().fields()) {
                object.put(field.name(), plain(struct.get(field)));
            }
            return object;
        }
        if (value instanceof List<?> list) {
            return list.stream().map(JsonValues::plain).toList();
        }
        if (value instanceof Map<?, ?> map) {
            Map<String, Object> object = new LinkedHashMap<>();
            map.forEach((k, v) -> object.put(String.valueOf(k), plain(v)));
            return object;
        }
        if (value instanceof byte[] bytes) {
            return Base64.getEncoder().encodeToString(bytes);
        }
        if (value instanceof ByteBuffer buffer) {
            return Base64.getEncoder().encodeToString(bytes(buffer));
        }
        if (value instanceof Date date) {
            return date.toInstant().toString();
        }
        return value;
    }
}
