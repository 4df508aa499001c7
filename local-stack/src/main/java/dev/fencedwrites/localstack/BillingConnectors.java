package dev.fencedwrites.localstack;

import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.demo.BillingSink;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The billing connectors {@code ./fence up} and the demo run on a {@link LocalStack}: the fenced sink from the
 * accepted and markers topics into {@value #TABLE}, and optionally an unguarded control sink from the input
 * topic into {@value #UNFENCED_TABLE} that shows what the fence prevents.
 *
 * <p>A named preset here, in local-stack, rather than in the demo: {@code ./fence up} (the
 * CLI's {@code up} command) and the demo both depend on local-stack, and neither should depend on the other.
 */
public final class BillingConnectors {
    /** The table the fenced sink writes to. */
    public static final String TABLE = BillingSink.TABLE;
    /** The table the unguarded control sink writes to, straight from the input topic. */
    public static final String UNFENCED_TABLE = "billing_summary_unfenced";
    /** Name of the fenced sink connector. */
    public static final String SINK_CONNECTOR = BillingSink.CONNECTOR;
    /** Name of the unguarded control connector. */
    public static final String UNFENCED_CONNECTOR = "billing-summary-unfenced";
    /** The control sink's dead-letter topic (its bad records must not mix with the enforcer's rejections). */
    public static final String UNFENCED_DLQ = "fenced-writes-unfenced-dlq";

    private BillingConnectors() {
    }

    /** The fenced sink, and with {@code unfencedControl} also the unguarded control, in that order. */
    public static List<Connector> set(boolean unfencedControl) {
        return unfencedControl ? List.of(fencedSink(), unfencedControl()) : List.of(fencedSink());
    }

    /**
     * {@value #SINK_CONNECTOR}: the fenced sink from the accepted and markers topics (a winning FENCE marker raises
     * the row's fence) into {@value #TABLE}; records the database refuses go to the rejected topic (its dead-letter
     * queue, with Connect's context headers).
     */
    public static Connector fencedSink() {
        return new Connector(SINK_CONNECTOR, BillingConnectors::fencedSinkConfig);
    }

    /**
     * {@value #UNFENCED_CONNECTOR}: the same sink reading the input topic with {@code fence.guard.enabled=false}
     * into {@value #UNFENCED_TABLE}, dead-lettering to {@value #UNFENCED_DLQ}.
     */
    public static Connector unfencedControl() {
        return new Connector(UNFENCED_CONNECTOR, stack -> {
            Map<String, String> control = fencedSinkConfig(stack);
            control.put("topics", FenceTopics.INPUT);
            control.put("table.name", UNFENCED_TABLE);
            control.put("fence.guard.enabled", "false");
            control.put("errors.deadletterqueue.topic.name", UNFENCED_DLQ);
            return control;
        });
    }

    private static Map<String, String> fencedSinkConfig(LocalStack stack) {
        Map<String, String> sink = new LinkedHashMap<>();
        sink.put("connector.class", "dev.fencedwrites.sink.FencedJdbcSinkConnector");
        // One task per Connect worker: in a cluster each worker holds one, and a dead worker's task moves to the other.
        sink.put("tasks.max", Integer.toString(stack.connectWorkerCount()));
        sink.put("topics", FenceTopics.ACCEPTED + "," + FenceTopics.MARKERS);
        sink.put("connection.url", stack.postgresUrl());
        sink.put("schema.registry.url", stack.schemaRegistryUrl());
        sink.put("table.name", TABLE);
        // What the sink requires of its own configuration, whatever the worker says (sink-connector/README.md).
        sink.put("header.converter", "org.apache.kafka.connect.converters.ByteArrayConverter");
        sink.put("consumer.override.isolation.level", "read_committed");
        sink.put("errors.tolerance", "all");
        sink.put("errors.deadletterqueue.topic.name", FenceTopics.REJECTED);
        sink.put("errors.deadletterqueue.topic.replication.factor", Integer.toString(stack.brokerCount()));
        sink.put("errors.deadletterqueue.context.headers.enable", "true");
        return sink;
    }
}
