package dev.fencedwrites.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.time.temporal.Temporal;
import java.util.Collection;
import java.util.Map;
import java.util.UUID;
import org.apache.avro.LogicalType;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericFixed;
import org.apache.avro.generic.IndexedRecord;

/**
 * A decoded Avro value as JSON the way users read it: {@code decimal} as a JSON number with its scale,
 * {@code timestamp-millis}/{@code -micros}/{@code -nanos} as ISO-8601 instants, {@code local-timestamp-*} as ISO local
 * date-times, {@code date} as an ISO date, {@code time-millis}/{@code -micros} as ISO times, {@code uuid} (on a string or a
 * 16-byte fixed) as its text. Other bytes and fixed print as Avro's JSON encoding does (one ISO-8859-1 character a byte);
 * NaN and the infinities as strings. Takes generic and specific records alike (the latter hold {@code Instant},
 * {@code BigDecimal} and so on already).
 */
final class AvroJson {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private AvroJson() {
    }

    static JsonNode of(Object value, Schema schema) {
        if (value == null) {
            return NODES.nullNode();
        }
        if (value instanceof Temporal || value instanceof BigDecimal || value instanceof UUID) {
            return converted(value);
        }
        return switch (schema.getType()) {
            case UNION -> of(value, schema.getTypes().get(GenericData.get().resolveUnion(schema, value)));
            case RECORD -> record((IndexedRecord) value, schema);
            case ARRAY -> {
                ArrayNode array = NODES.arrayNode();
                ((Collection<?>) value).forEach(item -> array.add(of(item, schema.getElementType())));
                yield array;
            }
            case MAP -> {
                ObjectNode map = NODES.objectNode();
                ((Map<?, ?>) value).forEach((key, item) -> map.set(key.toString(), of(item, schema.getValueType())));
                yield map;
            }
            case BYTES -> bytes(bytes((ByteBuffer) value), schema);
            case FIXED -> bytes(((GenericFixed) value).bytes(), schema);
            case INT -> intValue(((Number) value).intValue(), schema.getLogicalType());
            case LONG -> longValue(((Number) value).longValue(), schema.getLogicalType());
            case FLOAT, DOUBLE -> number(((Number) value).doubleValue(), value);
            case BOOLEAN -> NODES.booleanNode((Boolean) value);
            default -> NODES.textNode(value.toString()); // string (uuid too), enum
        };
    }

    private static ObjectNode record(IndexedRecord record, Schema schema) {
        ObjectNode object = NODES.objectNode();
        for (Schema.Field field : schema.getFields()) {
            object.set(field.name(), of(record.get(field.pos()), field.schema()));
        }
        return object;
    }

    private static JsonNode converted(Object value) {
        return value instanceof BigDecimal decimal ? NODES.numberNode(decimal) : NODES.textNode(value.toString());
    }

    private static JsonNode bytes(byte[] bytes, Schema schema) {
        LogicalType logical = schema.getLogicalType();
        if (logical instanceof LogicalTypes.Decimal decimal) {
            return NODES.numberNode(new BigDecimal(new BigInteger(bytes), decimal.getScale()));
        }
        if (logical != null && "uuid".equals(logical.getName()) && bytes.length == 16) {
            ByteBuffer buffer = ByteBuffer.wrap(bytes);
            return NODES.textNode(new UUID(buffer.getLong(), buffer.getLong()).toString());
        }
        return NODES.textNode(new String(bytes, StandardCharsets.ISO_8859_1));
    }

    private static JsonNode intValue(int value, LogicalType logical) {
        if (logical instanceof LogicalTypes.Date) {
            return NODES.textNode(LocalDate.ofEpochDay(value).toString());
        }
        if (logical instanceof LogicalTypes.TimeMillis) {
            return NODES.textNode(LocalTime.ofNanoOfDay(value * 1_000_000L).toString());
        }
        return NODES.numberNode(value);
    }

    private static JsonNode longValue(long value, LogicalType logical) {
        String name = logical == null ? "" : logical.getName();
        return switch (name) {
            case "timestamp-millis" -> NODES.textNode(Instant.ofEpochMilli(value).toString());
            case "timestamp-micros" -> NODES.textNode(Instant.EPOCH.plus(value, ChronoUnit.MICROS).toString());
            case "timestamp-nanos" -> NODES.textNode(Instant.EPOCH.plus(value, ChronoUnit.NANOS).toString());
            case "local-timestamp-millis" -> NODES.textNode(local(Instant.ofEpochMilli(value)));
            case "local-timestamp-micros" -> NODES.textNode(local(Instant.EPOCH.plus(value, ChronoUnit.MICROS)));
            case "local-timestamp-nanos" -> NODES.textNode(local(Instant.EPOCH.plus(value, ChronoUnit.NANOS)));
            case "time-micros" -> NODES.textNode(LocalTime.ofNanoOfDay(value * 1_000L).toString());
            default -> NODES.numberNode(value);
        };
    }

    private static String local(Instant instant) {
        return LocalDateTime.ofInstant(instant, ZoneOffset.UTC).toString();
    }

    private static JsonNode number(double number, Object value) {
        if (Double.isNaN(number) || Double.isInfinite(number)) {
            return NODES.textNode(value.toString());
        }
        return value instanceof Float f ? NODES.numberNode(f) : NODES.numberNode(number);
    }

    private static byte[] bytes(ByteBuffer buffer) {
        byte[] bytes = new byte[buffer.remaining()];
        buffer.duplicate().get(bytes);
        return bytes;
    }
}
