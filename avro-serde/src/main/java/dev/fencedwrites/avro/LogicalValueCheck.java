package dev.fencedwrites.avro;

import java.math.BigInteger;
import org.apache.avro.LogicalType;
import org.apache.avro.LogicalTypes;

/**
 * The logical-type rules of {@link AvroPayloadCheck} (Avro specification, "Logical Types"): a
 * {@code decimal} has at least one byte and no more digits than its precision, and a
 * {@code time-millis} or {@code time-micros} is a time of day. Values of other logical types pass.
 */
final class LogicalValueCheck {
    private static final long DAY_MILLIS = 86_400_000L;
    private static final double LOG10_2 = Math.log10(2);

    private LogicalValueCheck() {
    }

    static void intValue(AvroBinaryCursor in, LogicalType logical, int value) throws MalformedPayload {
        if (logical instanceof LogicalTypes.TimeMillis && (value < 0 || value >= DAY_MILLIS)) {
            throw in.malformed("time-millis " + value + " is not a time of day (0 to " + (DAY_MILLIS - 1) + " ms)", in.pos());
        }
    }

    static void longValue(AvroBinaryCursor in, LogicalType logical, long value) throws MalformedPayload {
        if (logical instanceof LogicalTypes.TimeMicros && (value < 0 || value >= DAY_MILLIS * 1_000)) {
            throw in.malformed("time-micros " + value + " is not a time of day (0 to " + (DAY_MILLIS * 1_000 - 1) + " µs)",
                    in.pos());
        }
    }

    /**
     * A decimal's unscaled value, big-endian two's complement in {@code length} bytes at {@code at}, must exist and fit its
     * precision.
     */
    static void decimal(AvroBinaryCursor in, LogicalType logical, int at, int length) throws MalformedPayload {
        if (!(logical instanceof LogicalTypes.Decimal decimal)) {
            return;
        }
        int precision = decimal.getPrecision();
        String type = "decimal(" + precision + "," + decimal.getScale() + ")";
        if (length == 0) {
            throw in.malformed(type + " with no bytes", at);
        }
        // |v| <= 2^(8n-1); below 10^precision whenever (8n-1)·log10(2) < precision: no need to look.
        if ((8.0 * length - 1) * LOG10_2 < precision - 1e-9) {
            return;
        }
        BigInteger unscaled = in.bigInteger(at, length).abs();
        int bits = unscaled.bitLength();
        boolean tooMany = (bits - 1) * LOG10_2 >= precision + 1e-9
                || bits * LOG10_2 > precision - 1e-9 && unscaled.compareTo(BigInteger.TEN.pow(precision)) >= 0;
        if (tooMany) {
            throw in.malformed(type + " whose unscaled value has more digits than its precision " + precision, at);
        }
    }
}
