package dev.fencedwrites.avro;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.apache.avro.LogicalType;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;

/**
 * Walks an Avro binary payload against its writer schema before anything decodes it, so that the
 * decoding that follows allocates only what the payload really holds and recurses a bounded depth
 * (issue 13). Avro's own reader allocates a string, bytes, fixed or collection of the size the data
 * declares before reading it, so a 10-byte value claiming a 2 GB string ends in
 * {@link OutOfMemoryError}, and deep nesting of a recursive schema in {@link StackOverflowError}.
 *
 * <p>The walk reads nothing into objects; it checks, against the payload's own length:
 * <ul>
 *   <li>every string, bytes and fixed fits in the bytes that remain;</li>
 *   <li>every array or map block declares no more items than bytes remain (each item takes at
 *       least one byte), and its byte size, when given (a negative count), matches its items;</li>
 *   <li>items that take no bytes at all (null, records of only such fields, zero-size fixed) number
 *       at most {@value #ZERO_WIDTH_ALLOWANCE} plus the payload's length in bytes per value: counting
 *       bytes cannot bound them, so this budget does;</li>
 *   <li>records, arrays and maps nest at most {@value #MAX_NESTING} deep (protobuf-java's default
 *       recursion limit is the same 100);</li>
 *   <li>lengths and counts are not negative, varints end within 64 (or 32) bits, boolean bytes
 *       are 0 or 1, enum and union indexes are in range, nothing is truncated and nothing follows
 *       the value;</li>
 *   <li>logical types hold what the Avro specification allows: a {@code decimal} has at least one
 *       byte and no more digits than its precision, a {@code time-millis} or {@code time-micros}
 *       is a time of day.</li>
 * </ul>
 * A payload that passes decodes with allocations proportional to its length (times a factor set by
 * the schema's shape, never by the data) and with a bounded stack.
 *
 * <p>Why not Avro's {@code org.apache.avro.limits.*} system properties ({@code SystemLimitException}):
 * they are read once per class loader from JVM-wide properties, so a connector setting them would
 * change every other plugin's Avro in the worker, and take effect or not depending on which class
 * loaded first; and they are absolute caps unrelated to the value's size, with no answer for items
 * that take no bytes or for nesting depth.
 */
final class AvroPayloadCheck {
    /** Deepest nesting of records, arrays and maps accepted; the root record is level 1. */
    static final int MAX_NESTING = 100;
    /** Items that take no bytes allowed per value beyond one per payload byte. */
    static final int ZERO_WIDTH_ALLOWANCE = 1_000;
    private static final long DAY_MILLIS = 86_400_000L;
    private static final double LOG10_2 = Math.log10(2);

    private final byte[] data;
    private final int start;
    private final int end;
    private int pos;
    private long zeroWidthSeen;
    private final long zeroWidthBudget;
    private Map<Schema, Boolean> zeroWidth;

    private AvroPayloadCheck(byte[] data, int offset, int length) {
        this.data = data;
        this.start = offset;
        this.end = offset + length;
        this.pos = offset;
        this.zeroWidthBudget = ZERO_WIDTH_ALLOWANCE + (long) length;
    }

    /**
     * Checks {@code length} bytes of {@code data} from {@code offset} as one value of {@code writer}.
     *
     * @throws Malformed naming what is wrong, the field path and the byte offset in the payload
     */
    static void check(Schema writer, byte[] data, int offset, int length) throws Malformed {
        AvroPayloadCheck check = new AvroPayloadCheck(data, offset, length);
        check.value(writer, 0);
        int left = check.end - check.pos;
        if (left > 0) {
            throw new Malformed(left + " bytes left after the end of the value (" + (check.pos - offset) + " of " + length
                    + " bytes read): it was not written with this schema");
        }
    }

    /** Why a payload does not fit its schema; the message leads with the field path when there is one. */
    static final class Malformed extends Exception {
        /** Segments of a long field path shown at each end. */
        private static final int PATH_ENDS = 4;
        private final List<String> path = new ArrayList<>();

        Malformed(String problem) {
            super(problem, null, false, false);
        }

        Malformed within(String segment) {
            path.add(0, segment);
            return this;
        }

        @Override
        public String getMessage() {
            if (path.isEmpty()) {
                return super.getMessage();
            }
            // A deep path (a recursive schema) keeps its first and last few segments, so the reason stays in view.
            List<String> shown = path.size() <= 2 * PATH_ENDS + 1 ? path : new ArrayList<>(path.subList(0, PATH_ENDS));
            if (shown != path) {
                shown.add("(" + (path.size() - 2 * PATH_ENDS) + " more)");
                shown.addAll(path.subList(path.size() - PATH_ENDS, path.size()));
            }
            StringBuilder where = new StringBuilder("field ");
            for (String segment : shown) {
                if (!segment.startsWith("[") && where.length() > "field ".length()) {
                    where.append('.');
                }
                where.append(segment);
            }
            return where + ": " + super.getMessage();
        }
    }

    private void value(Schema schema, int depth) throws Malformed {
        switch (schema.getType()) {
            case NULL -> {
            }
            case BOOLEAN -> {
                int b = take(1, "boolean");
                if (data[b] != 0 && data[b] != 1) {
                    throw malformed("boolean byte " + data[b] + " is neither 0 nor 1", b);
                }
            }
            case INT -> intValue(schema.getLogicalType(), readInt("int"));
            case LONG -> longValue(schema.getLogicalType(), readLong("long"));
            case FLOAT -> take(4, "float");
            case DOUBLE -> take(8, "double");
            case STRING -> take(length("string"), "string");
            case BYTES -> {
                int length = length("bytes");
                decimal(schema.getLogicalType(), take(length, "bytes"), length);
            }
            case FIXED -> {
                int size = schema.getFixedSize();
                if (size > end - pos) {
                    throw malformed("fixed " + schema.getFullName() + " of " + size + " bytes, but only " + (end - pos) + " remain", pos);
                }
                decimal(schema.getLogicalType(), take(size, "fixed"), size);
            }
            case ENUM -> {
                int at = pos;
                int index = readInt("enum index");
                int symbols = schema.getEnumSymbols().size();
                if (index < 0 || index >= symbols) {
                    throw malformed("enum index " + index + " is out of range: " + schema.getFullName() + " has " + symbols + " symbols", at);
                }
            }
            case UNION -> {
                int at = pos;
                int index = readInt("union index");
                List<Schema> branches = schema.getTypes();
                if (index < 0 || index >= branches.size()) {
                    throw malformed("union index " + index + " is out of range: the union has " + branches.size() + " branches", at);
                }
                value(branches.get(index), depth);
            }
            case RECORD -> {
                nest(depth);
                for (Schema.Field field : schema.getFields()) {
                    try {
                        value(field.schema(), depth + 1);
                    } catch (Malformed e) {
                        throw e.within(field.name());
                    }
                }
            }
            case ARRAY -> {
                nest(depth);
                items(schema.getElementType(), false, depth + 1);
            }
            case MAP -> {
                nest(depth);
                items(schema.getValueType(), true, depth + 1);
            }
        }
    }

    private void nest(int depth) throws Malformed {
        if (depth >= MAX_NESTING) {
            throw malformed("nested deeper than " + MAX_NESTING + " records, arrays and maps", pos);
        }
    }

    /** The blocks of an array or map: a count (negative: followed by the block's byte size), its items, until a count of 0. */
    private void items(Schema item, boolean map, int depth) throws Malformed {
        String kind = map ? "map" : "array";
        boolean empty = !map && zeroWidth(item);
        long index = 0;
        while (true) {
            int at = pos;
            long count = readLong(kind + " block count");
            if (count == 0) {
                return;
            }
            long size = -1;
            if (count < 0) {
                if (count == Long.MIN_VALUE) {
                    throw malformed(kind + " block count " + count + " is out of range", at);
                }
                count = -count;
                int sizeAt = pos;
                size = readLong(kind + " block size");
                if (size < 0) {
                    throw malformed(kind + " block size " + size + " is negative", sizeAt);
                }
                if (size > end - pos) {
                    throw malformed(kind + " block size " + size + " bytes, but only " + (end - pos) + " remain", sizeAt);
                }
            }
            int blockStart = pos;
            if (empty) {
                zeroWidthSeen += count;
                if (zeroWidthSeen > zeroWidthBudget) {
                    throw malformed(zeroWidthSeen + " items that take no bytes (null, empty records, zero-size fixed) in this value: at most "
                            + zeroWidthBudget + " (" + ZERO_WIDTH_ALLOWANCE + " plus one per payload byte)", at);
                }
                // Every such item is alike; one walk checks its nesting, the rest take no bytes.
                item(item, false, index, depth);
                index += count;
            } else {
                if (count > end - pos) {
                    throw malformed(kind + " block of " + count + " items, but only " + (end - pos)
                            + " bytes remain (every item takes at least one byte)", at);
                }
                for (long i = 0; i < count; i++) {
                    item(item, map, index++, depth);
                }
            }
            if (size >= 0 && pos - blockStart != size) {
                throw malformed(kind + " block size says " + size + " bytes, its " + count + " items took " + (pos - blockStart), at);
            }
        }
    }

    private void item(Schema item, boolean map, long index, int depth) throws Malformed {
        String segment = "[" + index + "]";
        if (map) {
            int length;
            try {
                length = length("map key");
            } catch (Malformed e) {
                throw e.within(segment);
            }
            int key = take(length, "map key");
            segment = "[\"" + new String(data, key, Math.min(length, 40), StandardCharsets.UTF_8) + (length > 40 ? "..." : "") + "\"]";
        }
        try {
            value(item, depth);
        } catch (Malformed e) {
            throw e.within(segment);
        }
    }

    /** Whether a value of {@code schema} can take no bytes: null, zero-size fixed, or a record of only such fields. */
    private boolean zeroWidth(Schema schema) {
        return switch (schema.getType()) {
            case NULL -> true;
            case FIXED -> schema.getFixedSize() == 0;
            case RECORD -> {
                if (zeroWidth == null) {
                    zeroWidth = new IdentityHashMap<>();
                }
                Boolean known = zeroWidth.get(schema);
                if (known != null) {
                    yield known;
                }
                zeroWidth.put(schema, false); // a record that contains itself has no finite value, let alone an empty one
                boolean all = true;
                for (Schema.Field field : schema.getFields()) {
                    if (!zeroWidth(field.schema())) {
                        all = false;
                        break;
                    }
                }
                zeroWidth.put(schema, all);
                yield all;
            }
            default -> false;
        };
    }

    private void intValue(LogicalType logical, int value) throws Malformed {
        if (logical instanceof LogicalTypes.TimeMillis && (value < 0 || value >= DAY_MILLIS)) {
            throw malformed("time-millis " + value + " is not a time of day (0 to " + (DAY_MILLIS - 1) + " ms)", pos);
        }
    }

    private void longValue(LogicalType logical, long value) throws Malformed {
        if (logical instanceof LogicalTypes.TimeMicros && (value < 0 || value >= DAY_MILLIS * 1_000)) {
            throw malformed("time-micros " + value + " is not a time of day (0 to " + (DAY_MILLIS * 1_000 - 1) + " µs)", pos);
        }
    }

    /** A decimal's unscaled value, big-endian two's complement in {@code length} bytes at {@code at}, must exist and fit its precision. */
    private void decimal(LogicalType logical, int at, int length) throws Malformed {
        if (!(logical instanceof LogicalTypes.Decimal decimal)) {
            return;
        }
        int precision = decimal.getPrecision();
        String type = "decimal(" + precision + "," + decimal.getScale() + ")";
        if (length == 0) {
            throw malformed(type + " with no bytes", at);
        }
        // |v| <= 2^(8n-1); below 10^precision whenever (8n-1)·log10(2) < precision: no need to look.
        if ((8.0 * length - 1) * LOG10_2 < precision - 1e-9) {
            return;
        }
        BigInteger unscaled = new BigInteger(data, at, length).abs();
        int bits = unscaled.bitLength();
        boolean tooMany = (bits - 1) * LOG10_2 >= precision + 1e-9
                || bits * LOG10_2 > precision - 1e-9 && unscaled.compareTo(BigInteger.TEN.pow(precision)) >= 0;
        if (tooMany) {
            throw malformed(type + " whose unscaled value has more digits than its precision " + precision, at);
        }
    }

    /** A string's, bytes' or map key's length: not negative and no more than what remains. */
    private int length(String what) throws Malformed {
        int at = pos;
        long length = readLong(what + " length");
        if (length < 0) {
            throw malformed(what + " length " + length + " is negative", at);
        }
        if (length > end - pos) {
            throw malformed(what + " of " + length + " bytes, but only " + (end - pos) + " remain (the length lies or the value is truncated)", at);
        }
        return (int) length;
    }

    /** Moves past {@code n} bytes; returns where they start. */
    private int take(int n, String what) throws Malformed {
        if (n > end - pos) {
            throw malformed("truncated: the value ends inside a " + what + " (needs " + n + " bytes, " + (end - pos) + " remain)", pos);
        }
        int at = pos;
        pos += n;
        return at;
    }

    /** A zig-zag varint of at most 5 bytes within 32 bits, as Avro writes an int. */
    private int readInt(String what) throws Malformed {
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
    private long readLong(String what) throws Malformed {
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

    private Malformed malformed(String problem, int at) {
        return new Malformed(problem + " (at byte " + (at - start) + " of " + (end - start) + ")");
    }
}
