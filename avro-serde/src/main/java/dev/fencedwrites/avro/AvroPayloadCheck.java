package dev.fencedwrites.avro;

import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;

/**
 * Walks an Avro binary payload against its writer schema before anything decodes it, so that the
 * decoding that follows allocates only what the payload really holds and recurses a bounded depth.
 * Avro's own reader allocates a string, bytes, fixed or collection of the size the data
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
 *
 * <p>This class walks the schema; {@link AvroBinaryCursor} reads the encoding's primitives.
 */
final class AvroPayloadCheck {
    /** Deepest nesting of records, arrays and maps accepted; the root record is level 1. */
    static final int MAX_NESTING = 100;
    /** Items that take no bytes allowed per value beyond one per payload byte. */
    static final int ZERO_WIDTH_ALLOWANCE = 1_000;

    private final AvroBinaryCursor in;
    private long zeroWidthSeen;
    private final long zeroWidthBudget;
    private Map<Schema, Boolean> zeroWidth;

    private AvroPayloadCheck(byte[] data, int offset, int length) {
        this.in = new AvroBinaryCursor(data, offset, length);
        this.zeroWidthBudget = ZERO_WIDTH_ALLOWANCE + (long) length;
    }

    /**
     * Checks {@code length} bytes of {@code data} from {@code offset} as one value of {@code writer}.
     *
     * @throws MalformedPayload naming what is wrong, the field path and the byte offset in the payload
     */
    static void check(Schema writer, byte[] data, int offset, int length) throws MalformedPayload {
        AvroPayloadCheck check = new AvroPayloadCheck(data, offset, length);
        check.value(writer, 0);
        int left = check.in.remaining();
        if (left > 0) {
            throw new MalformedPayload(left + " bytes left after the end of the value (" + check.in.consumed() + " of " + length
                    + " bytes read): it was not written with this schema");
        }
    }

    private void value(Schema schema, int depth) throws MalformedPayload {
        switch (schema.getType()) {
            case NULL -> {
            }
            case BOOLEAN -> {
                int b = in.take(1, "boolean");
                if (in.byteAt(b) != 0 && in.byteAt(b) != 1) {
                    throw in.malformed("boolean byte " + in.byteAt(b) + " is neither 0 nor 1", b);
                }
            }
            case INT -> LogicalValueCheck.intValue(in, schema.getLogicalType(), in.readInt("int"));
            case LONG -> LogicalValueCheck.longValue(in, schema.getLogicalType(), in.readLong("long"));
            case FLOAT -> in.take(4, "float");
            case DOUBLE -> in.take(8, "double");
            case STRING -> in.take(in.length("string"), "string");
            case BYTES -> {
                int length = in.length("bytes");
                LogicalValueCheck.decimal(in, schema.getLogicalType(), in.take(length, "bytes"), length);
            }
            case FIXED -> fixed(schema);
            case ENUM -> {
                int at = in.pos();
                int index = in.readInt("enum index");
                int symbols = schema.getEnumSymbols().size();
                if (index < 0 || index >= symbols) {
                    throw in.malformed(
                            "enum index " + index + " is out of range: " + schema.getFullName() + " has " + symbols + " symbols",
                            at);
                }
            }
            case UNION -> union(schema, depth);
            case RECORD -> record(schema, depth);
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

    private void fixed(Schema schema) throws MalformedPayload {
        int size = schema.getFixedSize();
        if (size > in.remaining()) {
            throw in.malformed("fixed " + schema.getFullName() + " of " + size + " bytes, but only " + in.remaining() + " remain",
                    in.pos());
        }
        LogicalValueCheck.decimal(in, schema.getLogicalType(), in.take(size, "fixed"), size);
    }

    private void union(Schema schema, int depth) throws MalformedPayload {
        int at = in.pos();
        int index = in.readInt("union index");
        List<Schema> branches = schema.getTypes();
        if (index < 0 || index >= branches.size()) {
            throw in.malformed("union index " + index + " is out of range: the union has " + branches.size() + " branches", at);
        }
        value(branches.get(index), depth);
    }

    private void record(Schema schema, int depth) throws MalformedPayload {
        nest(depth);
        for (Schema.Field field : schema.getFields()) {
            try {
                value(field.schema(), depth + 1);
            } catch (MalformedPayload e) {
                throw e.within(field.name());
            }
        }
    }

    private void nest(int depth) throws MalformedPayload {
        if (depth >= MAX_NESTING) {
            throw in.malformed("nested deeper than " + MAX_NESTING + " records, arrays and maps", in.pos());
        }
    }

    /** The blocks of an array or map: a count (negative: followed by the block's byte size), its items, until a count of 0. */
    private void items(Schema item, boolean map, int depth) throws MalformedPayload {
        String kind = map ? "map" : "array";
        boolean empty = !map && zeroWidth(item);
        long index = 0;
        while (true) {
            int at = in.pos();
            long count = in.readLong(kind + " block count");
            if (count == 0) {
                return;
            }
            long size = -1;
            if (count < 0) {
                if (count == Long.MIN_VALUE) {
                    throw in.malformed(kind + " block count " + count + " is out of range", at);
                }
                count = -count;
                int sizeAt = in.pos();
                size = in.readLong(kind + " block size");
                if (size < 0) {
                    throw in.malformed(kind + " block size " + size + " is negative", sizeAt);
                }
                if (size > in.remaining()) {
                    throw in.malformed(kind + " block size " + size + " bytes, but only " + in.remaining() + " remain", sizeAt);
                }
            }
            int blockStart = in.pos();
            if (empty) {
                zeroWidthSeen += count;
                if (zeroWidthSeen > zeroWidthBudget) {
                    throw in.malformed(zeroWidthSeen
                            + " items that take no bytes (null, empty records, zero-size fixed) in this value: at most "
                            + zeroWidthBudget + " (" + ZERO_WIDTH_ALLOWANCE + " plus one per payload byte)", at);
                }
                // Every such item is alike; one walk checks its nesting, the rest take no bytes.
                item(item, false, index, depth);
                index += count;
            } else {
                if (count > in.remaining()) {
                    throw in.malformed(kind + " block of " + count + " items, but only " + in.remaining()
                            + " bytes remain (every item takes at least one byte)", at);
                }
                for (long i = 0; i < count; i++) {
                    item(item, map, index++, depth);
                }
            }
            if (size >= 0 && in.pos() - blockStart != size) {
                throw in.malformed(
                        kind + " block size says " + size + " bytes, its " + count + " items took " + (in.pos() - blockStart),
                        at);
            }
        }
    }

    private void item(Schema item, boolean map, long index, int depth) throws MalformedPayload {
        String segment = "[" + index + "]";
        if (map) {
            int length;
            try {
                length = in.length("map key");
            } catch (MalformedPayload e) {
                throw e.within(segment);
            }
            int key = in.take(length, "map key");
            segment = "[\"" + in.utf8(key, Math.min(length, 40)) + (length > 40 ? "..." : "") + "\"]";
        }
        try {
            value(item, depth);
        } catch (MalformedPayload e) {
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
}
