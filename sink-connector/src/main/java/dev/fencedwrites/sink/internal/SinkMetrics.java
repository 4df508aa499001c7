package dev.fencedwrites.sink.internal;

import dev.fencedwrites.contract.RejectionReason;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.IntSupplier;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.metrics.stats.CumulativeSum;
import org.apache.kafka.common.metrics.stats.Meter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sink task's metrics, registered through Connect's plugin metrics (KIP-877), so the worker
 * reports them with its own: in JMX as {@code kafka.connect:type=plugins,connector=NAME,task=N}
 * (plus {@code reason=REASON} for fenced records), and in Prometheus through the JMX exporter rules
 * in {@code config/connect-jmx-exporter.yml}.
 *
 * <ul>
 *   <li>{@code rows-written-total}, {@code rows-written-rate} (per second): rows the guarded upsert
 *       wrote; Prometheus {@code fence_sink_rows_written_total{connector,task}}.</li>
 *   <li>{@code fences-raised-total}, {@code fences-raised-rate} (per second): rows whose fence a
 *       winning {@code FENCE} marker raised (the fence at the resource on takeover);
 *       Prometheus {@code fence_sink_fences_raised_total{connector,task}}.</li>
 *   <li>{@code markers-waiting}: takeover markers waiting for their row ({@link PendingMarkers});
 *       Prometheus {@code fence_sink_markers_waiting{connector,task}}.</li>
 *   <li>{@code markers-given-up-total}: waiting markers given up because more than
 *       {@code fence.marker.pending.max} waited; Prometheus
 *       {@code fence_sink_markers_given_up_total{connector,task}}.</li>
 *   <li>{@code records-fenced-total}, {@code records-fenced-rate} tagged {@code reason}: records
 *       this task refused and sent to the dead-letter topic, one series per
 *       {@link RejectionReason}; Prometheus
 *       {@code fence_sink_records_fenced_total{connector,task,reason}}.</li>
 * </ul>
 *
 * Counts are per task instance and start at zero when the task starts; a batch retried after a
 * database failure is counted once, when it commits. A task started while an earlier instance of
 * the same task still holds these names (one Connect gave up stopping after
 * {@code task.shutdown.graceful.timeout.ms}, stuck in a call to a broker it was cut from) runs
 * without the names it cannot have, with a WARN: metrics never stop a task.
 */
public final class SinkMetrics {
    private static final Logger LOG = LoggerFactory.getLogger(SinkMetrics.class);
    private final Sensor written;
    private final Sensor raised;
    private final Sensor givenUp;
    private final Map<RejectionReason, Sensor> fenced = new EnumMap<>(RejectionReason.class);

    /**
     * @param metrics the task's plugin metrics ({@code SinkTaskContext.pluginMetrics()}), or
     *                {@code null} where the runtime gives none: the counts are then only kept by
     *                the caller
     */
    public SinkMetrics(PluginMetrics metrics) {
        this(metrics, () -> 0);
    }

    /**
     * @param metrics as above
     * @param waiting how many takeover markers wait for their row, read when the gauge is
     */
    public SinkMetrics(PluginMetrics metrics, IntSupplier waiting) {
        if (metrics == null) {
            written = null;
            raised = null;
            givenUp = null;
            return;
        }
        // Sensor names are shared by every plugin in the worker's metrics registry: one task's must
        // not be another's (the same sensor would count both, and one task's close would remove both).
        String prefix = "fence-sink-" + UUID.randomUUID() + ".";
        List<String> taken = new ArrayList<>();
        written = metrics.addSensor(prefix + "rows-written");
        add(taken, () -> written.add(new Meter(
                metrics.metricName("rows-written-rate", "Rows written per second by the guarded upsert", new LinkedHashMap<>()),
                metrics.metricName("rows-written-total", "Rows written by the guarded upsert", new LinkedHashMap<>()))));
        raised = metrics.addSensor(prefix + "fences-raised");
        add(taken, () -> raised.add(new Meter(
                metrics.metricName("fences-raised-rate", "Row fences raised per second by winning FENCE markers",
                        new LinkedHashMap<>()),
                metrics.metricName("fences-raised-total", "Row fences raised by winning FENCE markers", new LinkedHashMap<>()))));
        add(taken, () -> metrics.addMetric(metrics.metricName("markers-waiting", "Takeover FENCE markers waiting for their row",
                new LinkedHashMap<>()), (Gauge<Integer>) (config, now) -> waiting.getAsInt()));
        givenUp = metrics.addSensor(prefix + "markers-given-up");
        add(taken, () -> givenUp.add(metrics.metricName("markers-given-up-total",
                "Waiting FENCE markers given up because more than fence.marker.pending.max waited", new LinkedHashMap<>()),
                new CumulativeSum()));
        for (RejectionReason reason : RejectionReason.values()) {
            if (reason.enforcerOnly()) {
                continue; // the sink never refuses a record for it: no series that can only read zero
            }
            LinkedHashMap<String, String> tags = new LinkedHashMap<>();
            tags.put("reason", reason.name());
            Sensor sensor = metrics.addSensor(prefix + "records-fenced." + reason.name());
            add(taken, () -> sensor.add(new Meter(
                    metrics.metricName("records-fenced-rate",
                            "Records refused per second and sent to the dead-letter topic, by reason", tags),
                    metrics.metricName("records-fenced-total", "Records refused and sent to the dead-letter topic, by reason",
                            tags))));
            fenced.put(reason, sensor);
        }
        if (!taken.isEmpty()) {
            LOG.warn("{} of this sink task's metrics are still registered by an earlier instance of the same task that did not "
                    + "stop (Connect gave up on it after task.shutdown.graceful.timeout.ms): this instance runs without them "
                    + "until the task is restarted; first: {}", taken.size(), taken.get(0));
        }
    }

    /** Registers metrics; a name still held by an earlier instance of the task is noted in {@code taken}, not thrown. */
    private static void add(List<String> taken, Runnable registration) {
        try {
            registration.run();
        } catch (IllegalArgumentException e) {
            taken.add(e.getMessage());
        }
    }

    /** Counts {@code rows} rows written by one committed batch. */
    public void written(int rows) {
        if (written != null && rows > 0) {
            written.record(rows);
        }
    }

    /** Counts {@code rows} row fences raised by markers in one committed batch. */
    public void fencesRaised(int rows) {
        if (raised != null && rows > 0) {
            raised.record(rows);
        }
    }

    /** Counts {@code markers} waiting markers given up. */
    public void markersGivenUp(int markers) {
        if (givenUp != null && markers > 0) {
            givenUp.record(markers);
        }
    }

    /** Counts one record refused for {@code reason}. */
    public void fenced(RejectionReason reason) {
        Sensor sensor = fenced.get(reason);
        if (sensor != null) {
            sensor.record();
        }
    }
}
