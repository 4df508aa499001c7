package dev.fencedwrites.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.demo.BillingSummary;
import java.time.Instant;
import java.time.YearMonth;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.Iterator;
import java.util.Map;
import org.apache.avro.Schema;

/**
 * {@code fence produce --value JSON}: a {@code BillingSummary} from JSON fields over the defaults, with a reason for every bad
 * field.
 */
final class SummaryJson {
    private static final ObjectMapper JSON = new ObjectMapper();

    private SummaryJson() {
    }

    /**
     * The summary to publish: {@code json}'s fields over the defaults, then {@code amount}.
     *
     * @throws IllegalArgumentException naming the field when the JSON is not an object of BillingSummary's fields and types
     */
    static BillingSummary summary(String key, String json, Long amount, String writer, Instant now) {
        BillingSummary.Builder builder = BillingSummary.newBuilder().setCustomerId(key)
                .setBillingPeriod(YearMonth.now(ZoneOffset.UTC).toString()).setCurrency("EUR").setLineItems(1)
                .setComputedAt(now).setComputedBy(writer);
        boolean hasAmount = amount != null;
        if (json != null) {
            JsonNode object;
            try {
                object = JSON.readTree(json);
            } catch (JsonProcessingException e) {
                throw new IllegalArgumentException("--value is not JSON: " + e.getOriginalMessage());
            }
            if (object == null || !object.isObject()) {
                throw new IllegalArgumentException(
                        "--value must be a JSON object of BillingSummary fields, e.g. {\"amountMinor\": 1999}");
            }
            Schema schema = BillingSummary.getClassSchema();
            for (Iterator<Map.Entry<String, JsonNode>> fields = object.fields(); fields.hasNext();) {
                Map.Entry<String, JsonNode> field = fields.next();
                String name = field.getKey();
                JsonNode node = field.getValue();
                if (schema.getField(name) == null) {
                    throw new IllegalArgumentException("--value has unknown field '" + name + "'; BillingSummary has "
                            + schema.getFields().stream().map(Schema.Field::name).toList());
                }
                switch (name) {
                    case "customerId" -> builder.setCustomerId(text(name, node));
                    case "billingPeriod" -> builder.setBillingPeriod(text(name, node));
                    case "currency" -> builder.setCurrency(text(name, node));
                    case "computedBy" -> builder.setComputedBy(text(name, node));
                    case "amountMinor" -> {
                        builder.setAmountMinor(integral(name, node, Long.MIN_VALUE, Long.MAX_VALUE));
                        hasAmount = true;
                    }
                    case "lineItems" -> builder.setLineItems((int) integral(name, node, Integer.MIN_VALUE, Integer.MAX_VALUE));
                    case "computedAt" -> builder.setComputedAt(instant(name, node));
                    default ->
                        throw new IllegalArgumentException("--value field '" + name + "' cannot be set from the command line");
                }
            }
        }
        if (amount != null) {
            builder.setAmountMinor(amount);
        }
        if (!hasAmount) {
            throw new IllegalArgumentException("amountMinor is required: give --amount MINOR or \"amountMinor\" in --value");
        }
        return builder.build();
    }

    private static String text(String name, JsonNode node) {
        if (!node.isTextual()) {
            throw new IllegalArgumentException("--value field '" + name + "' must be a string, got " + node);
        }
        return node.asText();
    }

    private static long integral(String name, JsonNode node, long min, long max) {
        if (!node.isIntegralNumber() || !node.canConvertToLong() || node.asLong() < min || node.asLong() > max) {
            throw new IllegalArgumentException(
                    "--value field '" + name + "' must be a whole number in [" + min + ", " + max + "], got " + node);
        }
        return node.asLong();
    }

    /** Epoch milliseconds (as {@code ./fence consume} prints it) or an ISO-8601 instant. */
    private static Instant instant(String name, JsonNode node) {
        if (node.isIntegralNumber() && node.canConvertToLong()) {
            return Instant.ofEpochMilli(node.asLong());
        }
        if (node.isTextual()) {
            try {
                return Instant.parse(node.asText());
            } catch (DateTimeParseException e) {
                // falls through to the error below
            }
        }
        throw new IllegalArgumentException("--value field '" + name
                + "' must be epoch milliseconds or an ISO-8601 instant like 2026-11-30T12:00:00Z, got " + node);
    }
}
