package dev.fencedwrites.sink.internal;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.sink.FencedWriteException;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Counts what a sink task's committed batches did ({@link SinkMetrics} and {@link #counts()}), and
 * reports every refused record to the errant record reporter, which sends it to the dead-letter topic
 * (KIP-610) with {@code fence.rejected.reason}, {@code .stage=sink}, {@code .highest} and the
 * {@code fence.source.*} headers of the wire contract. Without a reporter, refusals are only logged
 * and counted.
 */
public final class SinkOutcomes {
    // the task's logger name, as before the split
    private static final Logger LOG = LoggerFactory.getLogger("dev.fencedwrites.sink.FencedJdbcSinkTask");

    private final ErrantRecordReporter reporter;
    private final SinkMetrics metrics;
    private final AtomicLong written = new AtomicLong();
    private final AtomicLong fencesRaised = new AtomicLong();
    private final Map<RejectionReason, AtomicLong> rejected = new EnumMap<>(RejectionReason.class);

    /**
     * @param reporter the task's errant record reporter, or {@code null} when the connector has no dead-letter queue
     * @param metrics  the task's metrics
     */
    public SinkOutcomes(ErrantRecordReporter reporter, SinkMetrics metrics) {
        this.reporter = reporter;
        this.metrics = metrics;
        for (RejectionReason reason : RejectionReason.values()) {
            rejected.put(reason, new AtomicLong());
        }
    }

    /** Counts one committed batch and reports its refused records. */
    public void committed(SinkWriter.Result result) {
        written.addAndGet(result.written());
        metrics.written(result.written());
        fencesRaised.addAndGet(result.fencesRaised());
        metrics.fencesRaised(result.fencesRaised());
        result.rejections().forEach(this::report);
    }

    private void report(Rejection rejection) {
        long count = rejected.get(rejection.reason()).incrementAndGet();
        metrics.fenced(rejection.reason());
        SinkRecord record = rejection.record();
        LOG.info("fenced at the database: key={} reason={} highest={} ({}); {} so far", RecordDecoder.printable(record.key()),
                rejection.reason(), rejection.highest(), rejection.detail(), count);
        if (reporter == null) {
            return;
        }
        ConnectHeaders headers = new ConnectHeaders();
        record.headers().forEach(headers::add);
        addText(headers, FenceHeaders.REJECTED_REASON, rejection.reason().name());
        addText(headers, FenceHeaders.REJECTED_STAGE, FenceHeaders.STAGE_SINK);
        addText(headers, FenceHeaders.REJECTED_HIGHEST, rejection.highest() == null ? "" : rejection.highest().toString());
        addText(headers, FenceHeaders.SOURCE_TOPIC, record.originalTopic());
        addText(headers, FenceHeaders.SOURCE_PARTITION, String.valueOf(record.originalKafkaPartition()));
        addText(headers, FenceHeaders.SOURCE_OFFSET, String.valueOf(record.originalKafkaOffset()));
        // Connect's reporter sends the original consumer record for any record the framework made
        // (including record.newRecord(...)), dropping added headers; a record built here is converted
        // with the worker's converters instead, so it carries these headers and the original bytes.
        // It names the original topic-partition, which the reporter's offset-commit wait is keyed by.
        SinkRecord withReason = new SinkRecord(record.originalTopic(), record.originalKafkaPartition(), record.keySchema(),
                record.key(), record.valueSchema(), record.value(), record.originalKafkaOffset(), record.timestamp(),
                record.timestampType(), headers);
        reporter.report(withReason, new FencedWriteException(rejection.reason(), rejection.detail()));
    }

    private static void addText(ConnectHeaders headers, String name, String value) {
        headers.addBytes(name, FenceHeaders.encode(value));
    }

    /** Rows written, row fences raised, and records fenced by reason (every reason, zeros included), in that order. */
    public Map<String, Long> counts() {
        Map<String, Long> counts = new LinkedHashMap<>();
        counts.put("written", written.get());
        counts.put("fences_raised", fencesRaised.get());
        rejected.forEach((reason, n) -> counts.put(reason.name(), n.get()));
        return counts;
    }
}
