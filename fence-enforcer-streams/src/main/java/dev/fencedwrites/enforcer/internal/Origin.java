package dev.fencedwrites.enforcer.internal;

import java.util.Optional;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.RecordMetadata;

/**
 * Where an input record was written: the input topic, partition and offset, also for a record read
 * back from the repartition topic (from its {@value PartitionRoute#ORIGIN_HEADER} header), so that
 * rejected copies and published markers name the input record in {@code fence.source.*}.
 *
 * @param rerouted  whether the record came through the repartition topic
 * @param committed for a re-routed record, the input offset of its partition that the sending task had committed
 *                  when it sent it (0 when unknown; -1 when the record had no origin header: it keeps no history)
 */
record Origin(String topic, int partition, long offset, boolean rerouted, long committed) {

    /**
     * The origin of the record being processed in {@code context}, or empty when the context knows no
     * source (a punctuation).
     *
     * @param inputTopic the input topic; {@code null} when the topology reads no other topic
     * @param headers    the record's headers, origin header included
     */
    static Optional<Origin> of(ProcessorContext<?, ?> context, String inputTopic,
            Headers headers) {
        Optional<RecordMetadata> metadata = context.recordMetadata();
        if (metadata.isEmpty()) {
            return Optional.empty();
        }
        RecordMetadata arrival = metadata.get();
        if (inputTopic == null || inputTopic.equals(arrival.topic())) {
            return Optional.of(new Origin(arrival.topic(), arrival.partition(), arrival.offset(), false, 0));
        }
        return Optional.of(PartitionRoute.origin(headers)
                .map(at -> new Origin(inputTopic, (int) at[0], at[1], true, at[2]))
                .orElseGet(() -> new Origin(arrival.topic(), arrival.partition(), arrival.offset(), true, -1)));
    }
}
