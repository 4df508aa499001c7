package dev.fencedwrites.sink;

import dev.fencedwrites.sink.internal.SinkMetrics;
import org.apache.kafka.common.metrics.PluginMetrics;

/** Registers every plugin metric a sink task registers, for the metrics reference of the docker module's tests. */
public final class SinkMeters {
    private SinkMeters() {
    }

    /** Registers the sink task's metrics in {@code metrics}, as a task's start does. */
    public static void registerAll(PluginMetrics metrics) {
        new SinkMetrics(metrics);
    }
}
