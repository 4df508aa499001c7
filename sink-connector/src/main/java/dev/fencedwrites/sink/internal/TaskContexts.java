package dev.fencedwrites.sink.internal;

import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTaskContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** What a sink task takes from its Connect context on runtimes that may predate the feature. */
public final class TaskContexts {
    // the task's logger name, as before the split
    private static final Logger LOG = LoggerFactory.getLogger("dev.fencedwrites.sink.FencedJdbcSinkTask");

    private TaskContexts() {
    }

    /**
     * Refuses a Connect runtime older than 3.6, the oldest the sink supports: it names each record's source partition
     * and offset by {@code SinkRecord.originalTopic()} and its siblings (KIP-793, Kafka 3.6), so that a transform that
     * renames the topic still commits the right offsets. Without this check an older worker would fail the task at its
     * first rejection instead of at start.
     *
     * @throws ConnectException on a runtime without {@code SinkRecord.originalTopic()}, naming the worker's version
     */
    public static void requireSupportedRuntime() {
        requireSupportedRuntime(SinkRecord.class, AppInfoParser.getVersion());
    }

    static void requireSupportedRuntime(Class<?> sinkRecord, String workerVersion) {
        try {
            sinkRecord.getMethod("originalTopic");
        } catch (NoSuchMethodException e) {
            throw new ConnectException("the fenced JDBC sink needs Kafka Connect 3.6 or later (SinkRecord.originalTopic(),"
                    + " KIP-793); this worker runs Kafka " + workerVersion);
        }
    }

    /**
     * The dead-letter queue's reporter, or {@code null}: none before Kafka 2.6 (KIP-610) or without
     * {@code errors.tolerance=all} and {@code errors.deadletterqueue.topic.name}, which is logged.
     */
    public static ErrantRecordReporter errantRecordReporter(SinkTaskContext context) {
        ErrantRecordReporter reporter;
        try {
            reporter = context.errantRecordReporter();
        } catch (NoSuchMethodError | NoClassDefFoundError e) {
            reporter = null;
        }
        if (reporter == null) {
            LOG.warn("no errant record reporter (configure errors.tolerance=all and errors.deadletterqueue.topic.name):"
                    + " fenced records are only logged and counted");
        }
        return reporter;
    }

    /** The task's plugin metrics, or {@code null} on runtimes before Kafka 4.1 (KIP-877), which is logged. */
    public static PluginMetrics pluginMetrics(SinkTaskContext context) {
        try {
            return context.pluginMetrics();
        } catch (AbstractMethodError | NoSuchMethodError | UnsupportedOperationException e) {
            LOG.warn("this Connect runtime has no plugin metrics (Kafka 4.1+): the sink's counts are only logged");
            return null;
        }
    }
}
