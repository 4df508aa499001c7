package dev.fencedwrites.interop;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.fencedwrites.demo.BillingSummary;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.zip.CRC32;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;

/**
 * What the interop tests write and where clients put it: the steps the Node.js and Python writer scripts take on stdin
 * (one JSON object each: {@code acquire}, {@code release}, {@code write}), BillingSummary values as JSON and as the Avro
 * record, and the partition each client's default partitioner picks for a key.
 */
final class Writes {
    /** The {@code computedAt} of every summary written, with a millisecond part. */
    static final long COMPUTED_AT = Instant.parse("2026-11-30T18:00:00.123Z").toEpochMilli();

    private Writes() {
    }

    /** A step: {@code holder} takes {@code key}'s lock (and sends its marker). */
    static ObjectNode acquire(String holder, String key) {
        return ExternalCommand.JSON.createObjectNode().put("acquire", holder).put("key", key);
    }

    /** A step: {@code holder} releases {@code key}'s lock (revokes its lease). */
    static ObjectNode release(String holder, String key) {
        return ExternalCommand.JSON.createObjectNode().put("release", holder).put("key", key);
    }

    /** A step: {@code holder} writes {@code value} (null: a delete) to {@code key} under its lock's token. */
    static ObjectNode write(String holder, String key, long seq, ObjectNode value) {
        ObjectNode record = ExternalCommand.JSON.createObjectNode().put("write", holder).put("key", key).put("seq", seq);
        record.set("value", value == null ? ExternalCommand.JSON.nullNode() : value);
        return record;
    }

    /** A BillingSummary as the writer scripts take it: JSON with the Avro field names, {@code computedAt} in epoch millis. */
    static ObjectNode summaryJson(String customer, long amountMinor, int lineItems, String computedBy) {
        return ExternalCommand.JSON.createObjectNode().put("customerId", customer).put("billingPeriod", "2026-11")
                .put("amountMinor", amountMinor).put("currency", "EUR").put("lineItems", lineItems).put("computedAt", COMPUTED_AT)
                .put("computedBy", computedBy);
    }

    /** The same BillingSummary as the Avro record. */
    static BillingSummary summary(String customer, long amountMinor, int lineItems, String computedBy) {
        return BillingSummary.newBuilder().setCustomerId(customer).setBillingPeriod("2026-11").setAmountMinor(amountMinor)
                .setCurrency("EUR").setLineItems(lineItems).setComputedAt(Instant.ofEpochMilli(COMPUTED_AT))
                .setComputedBy(computedBy).build();
    }

    /** The partition Kafka's Java producer picks for a String key: murmur2 of its UTF-8 bytes. */
    static int javaPartition(String key, int partitions) {
        return BuiltInPartitioner.partitionForKey(key.getBytes(StandardCharsets.UTF_8), partitions);
    }

    /** The partition librdkafka's default partitioner (consistent_random) picks for a key: CRC32 of its bytes. */
    static int crc32Partition(String key, int partitions) {
        CRC32 crc = new CRC32();
        crc.update(key.getBytes(StandardCharsets.UTF_8));
        return (int) (crc.getValue() % partitions);
    }

    /** The first {@code count} keys {@code prefix + i} that CRC32 puts on another of {@code partitions} than murmur2. */
    static List<String> keysWhereCrc32DisagreesWithMurmur2(String prefix, int count, int partitions) {
        List<String> keys = new ArrayList<>();
        for (int i = 0; keys.size() < count; i++) {
            if (crc32Partition(prefix + i, partitions) != javaPartition(prefix + i, partitions)) {
                keys.add(prefix + i);
            }
        }
        return keys;
    }

    /** Keys {@code prefix + i}, {@code perPartition} of them on each of {@code partitions} by murmur2. */
    static List<String> keysCoveringEveryPartition(String prefix, int perPartition, int partitions) {
        Map<Integer, List<String>> byPartition = new HashMap<>();
        for (int i = 0; byPartition.values().stream().mapToInt(List::size).sum() < perPartition * partitions; i++) {
            String key = prefix + i;
            List<String> keys = byPartition.computeIfAbsent(javaPartition(key, partitions), p -> new ArrayList<>());
            if (keys.size() < perPartition) {
                keys.add(key);
            }
        }
        return byPartition.values().stream().flatMap(List::stream).toList();
    }

    /** Eight random hex digits, to make a test's key prefix its own on a shared stack. */
    static String shortId() {
        return UUID.randomUUID().toString().substring(0, 8);
    }
}
