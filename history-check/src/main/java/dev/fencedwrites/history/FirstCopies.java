package dev.fencedwrites.history;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * Under {@code at_least_once} the enforcer writes the outcomes of the records after its last commit again when it
 * restarts after a crash (Kafka Streams' at-least-once processing), so a decision can be on its topic more than once:
 * this passes on only the first copy of each, and counts the others. A rejected copy or a marker is the same decision as
 * an earlier one when it names the same input record ({@code fence.source.*}); an accepted copy when a key's earlier
 * accepted copy has the same content ({@link Hashes#content}: the enforcer copies an input record byte for byte, and no two
 * input records of a key carry the same fence). What stays is checked as under {@code exactly_once_v2}, so a record
 * decided both ways is still found. Memory: a position per rejected copy and marker, a fingerprint per accepted copy.
 * Not thread-safe; one per pass.
 */
final class FirstCopies {
    private final Findings findings;
    private final Set<Source> rejected = new HashSet<>();
    private final Set<Source> markers = new HashSet<>();
    private final Map<String, Set<Long>> accepted = new HashMap<>();

    /** An input record a copy names. */
    private record Source(String topic, Position position) {
    }

    FirstCopies(Findings findings) {
        this.findings = findings;
    }

    /** {@code next}, given only the first copy of each rejection by the enforcer (the sink's are all passed on). */
    Consumer<ConsumerRecord<byte[], byte[]>> rejected(Consumer<ConsumerRecord<byte[], byte[]>> next) {
        return bySource(rejected, next, true);
    }

    /** {@code next}, given only the first copy of each marker. */
    Consumer<ConsumerRecord<byte[], byte[]>> markers(Consumer<ConsumerRecord<byte[], byte[]>> next) {
        return bySource(markers, next, false);
    }

    /** {@code next}, given only the first copy of each accepted record. */
    Consumer<ConsumerRecord<byte[], byte[]>> accepted(Consumer<ConsumerRecord<byte[], byte[]>> next) {
        return record -> {
            String key = OutputRecord.key(record.key());
            if (key != null && !accepted.computeIfAbsent(key, k -> new HashSet<>()).add(Hashes.content(record))) {
                findings.count("accepted copies written again (at_least_once)");
                return;
            }
            next.accept(record);
        };
    }

    private Consumer<ConsumerRecord<byte[], byte[]>> bySource(Set<Source> seen, Consumer<ConsumerRecord<byte[], byte[]>> next,
            boolean rejections) {
        return record -> {
            OutputRecord copy = OutputRecord.of(record);
            boolean decision = copy.source() != null && !(rejections && copy.sinkStage());
            if (decision && !seen.add(new Source(copy.sourceTopic(), copy.source()))) {
                findings.count((rejections ? "rejected copies" : "markers") + " written again (at_least_once)");
                return;
            }
            next.accept(record);
        };
    }
}
