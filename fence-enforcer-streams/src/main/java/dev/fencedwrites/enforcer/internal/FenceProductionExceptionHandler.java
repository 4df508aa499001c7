package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.RejectionReason;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.ProductionExceptionHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The enforcer's Kafka Streams {@link ProductionExceptionHandler}: a record Kafka refuses is never
 * dropped silently. The processor bounds every output by the topics' limits read at
 * start, so this handler sees only what slipped past them, e.g. a topic's
 * {@code max.message.bytes} lowered while the enforcer runs.
 *
 * <p>Every call is logged with the source record's coordinates and counted in
 * {@code fence_enforcer_production_errors_total{topic,exception,outcome}}; a reference record is also
 * counted in {@code fence_enforcer_records_fenced_total{reason="PRODUCE_FAILED"}}. Then, by case:
 * <ul>
 *   <li>a {@link RetriableException}: {@code RETRY}, as Kafka's default handler does (Streams
 *       reprocesses the task from its last commit);</li>
 *   <li>a record of the fence store's changelog: {@code FAIL}; resuming would lose a fence from
 *       the changelog, and a restore would then let a stale write through;</li>
 *   <li>under {@code exactly_once_v2}: {@code FAIL}; the producer has already moved its
 *       transaction to an abortable error (KafkaProducer#doSend, TransactionManager
 *       #maybeTransitionToErrorState), so nothing of this transaction, a reference record
 *       included, can commit; the stream thread dies loudly and no offset moves past the record
 *       (replaced, it fails again on the record, and {@code StreamThreadFailures} stops the instance: restart it so it
 *       reads the topics' limits again);</li>
 *   <li>a reference record of this handler that itself failed: {@code FAIL};</li>
 *   <li>otherwise ({@code at_least_once}): {@code RESUME} with a reference record on the rejected
 *       topic through the handler's dead-letter records (KIP-1034): reason {@code PRODUCE_FAILED},
 *       no value, {@code fence.rejected.error}, the failed record's sizes, its key and its
 *       {@code fence.token}/{@code .seq}/{@code .lease}/{@code .writer}/{@code .op} headers when
 *       each is at most 1 KiB, and the source coordinates: a rejected copy's own
 *       {@code fence.source.*}, else the context's when the error came from inside the send (on
 *       the stream thread). A broker's refusal arrives on the producer's network thread after the
 *       stream thread has moved on, so an accepted copy's offset is then unknown and left out.</li>
 * </ul>
 * A serialization error happens before the send, so it leaves the transaction intact: it gets the
 * reference record under either guarantee (the changelog case still fails).
 *
 * <p>Configured from the Streams properties: {@value #REJECTED_TOPIC_CONFIG} (required) and
 * {@value #METER_REGISTRY_CONFIG} (a Micrometer {@link MeterRegistry} object; counters are not
 * kept without it), plus {@code processing.guarantee}.
 */
public final class FenceProductionExceptionHandler implements ProductionExceptionHandler {
    /** Streams property: the rejected topic, where reference records go. */
    public static final String REJECTED_TOPIC_CONFIG = "fence.enforcer.rejected.topic";
    /** Streams property: the {@link MeterRegistry} instance the counters are registered in. */
    public static final String METER_REGISTRY_CONFIG = "fence.enforcer.meter.registry";
    private static final Logger LOG = LoggerFactory.getLogger(FenceProductionExceptionHandler.class);
    private static final String CHANGELOG_SUFFIX = "-changelog";
    /** The failed record's own headers a reference record keeps, when small, so the record can be found without its offset. */
    private static final List<String> IDENTIFYING_HEADERS = List.of(FenceHeaders.TOKEN, FenceHeaders.SEQ, FenceHeaders.LEASE,
            FenceHeaders.WRITER, FenceHeaders.OP);
    /** The largest key or identifying header value a reference record keeps, in bytes. */
    private static final int MAX_IDENTIFYING_BYTES = 1024;
    /** The longest error text kept in {@link FenceHeaders#REJECTED_ERROR}, in characters. */
    private static final int MAX_ERROR_CHARS = 500;

    private String rejectedTopic;
    private boolean exactlyOnce;
    private MeterRegistry meters;

    @Override
    public void configure(Map<String, ?> configs) {
        Object topic = configs.get(REJECTED_TOPIC_CONFIG);
        if (topic == null || topic.toString().isEmpty()) {
            throw new IllegalArgumentException(REJECTED_TOPIC_CONFIG + " must name the rejected topic");
        }
        rejectedTopic = topic.toString();
        exactlyOnce = !StreamsConfig.AT_LEAST_ONCE.equals(String.valueOf(configs.get(StreamsConfig.PROCESSING_GUARANTEE_CONFIG)));
        Object registry = configs.get(METER_REGISTRY_CONFIG);
        meters = registry instanceof MeterRegistry given ? given : null;
    }

    @Override
    public Response handleError(ErrorHandlerContext context, ProducerRecord<byte[], byte[]> record, Exception exception) {
        if (exception instanceof RetriableException) {
            count(record.topic(), exception, "retried");
            return Response.retry();
        }
        String refusal = refusal(record.topic(), record.headers(), exactlyOnce);
        if (refusal != null) {
            count(record.topic(), exception, "failed");
            LOG.error(
                    "Kafka refused the enforcer's record for topic '{}' ({}), from source {}: {}; stopping the stream thread: {}",
                    record.topic(),
                    sizes(record.key(), record.value(), record.headers()), source(context), exception, refusal);
            return Response.fail();
        }
        count(record.topic(), exception, "resumed");
        LOG.error(
                "Kafka refused the enforcer's record for topic '{}' ({}), from source {}: {}; a reference record goes to '{}' "
                        + "instead",
                record.topic(), sizes(record.key(), record.value(), record.headers()), source(context), exception, rejectedTopic);
        return Response
                .resume(List.of(reference(context, record.topic(), record.key(), record.value(), record.headers(), exception)));
    }

    @Override
    @SuppressWarnings("rawtypes")
    public Response handleSerializationError(ErrorHandlerContext context, ProducerRecord record, Exception exception,
            SerializationExceptionOrigin origin) {
        String refusal = refusal(record.topic(), record.headers(), false);
        if (refusal != null) {
            count(record.topic(), exception, "failed");
            LOG.error("cannot serialize the enforcer's {} for topic '{}', from source {}; stopping the stream thread: {}", origin,
                    record.topic(),
                    source(context), refusal, exception);
            return Response.fail();
        }
        count(record.topic(), exception, "resumed");
        LOG.error("cannot serialize the enforcer's {} for topic '{}', from source {}; a reference record goes to '{}' instead",
                origin, record.topic(),
                source(context), rejectedTopic, exception);
        byte[] key = record.key() instanceof byte[] bytes ? bytes : null;
        byte[] value = record.value() instanceof byte[] bytes ? bytes : null;
        return Response.resume(List.of(reference(context, record.topic(), key, value, record.headers(), exception)));
    }

    /** Why this failure must stop the thread, or {@code null} when a reference record can stand in. */
    private String refusal(String topic, Headers headers, boolean transactionAborted) {
        if (topic.endsWith(CHANGELOG_SUFFIX)) {
            return "a fence missing from the changelog would be lost on restore";
        }
        if (headers != null && headers.lastHeader(FenceHeaders.REJECTED_ERROR) != null) {
            return "not even the reference record could be written to '" + topic + "'";
        }
        if (transactionAborted) {
            return "under exactly_once_v2 the producer's transaction is aborted by this error, so no reference record could "
                    + "commit; the record stays uncommitted on the input (if a topic's max.message.bytes changed, restart the "
                    + "enforcer so it reads it)";
        }
        return null;
    }

    private ProducerRecord<byte[], byte[]> reference(ErrorHandlerContext context, String failedTopic, byte[] key, byte[] value,
            Headers own,
            Exception exception) {
        Header[] ownHeaders = own == null ? new Header[0] : own.toArray();
        List<Header> headers = new ArrayList<>();
        headers.add(header(FenceHeaders.REJECTED_REASON, RejectionReason.PRODUCE_FAILED.name()));
        headers.add(header(FenceHeaders.REJECTED_STAGE, FenceHeaders.STAGE_ENFORCER));
        headers.add(header(FenceHeaders.REJECTED_HIGHEST, ""));
        String error = exception.getClass().getName() + " on topic '" + failedTopic + "': " + exception.getMessage();
        headers.add(header(FenceHeaders.REJECTED_ERROR,
                error.length() > MAX_ERROR_CHARS ? error.substring(0, MAX_ERROR_CHARS) : error));
        Header[] coordinates = {last(ownHeaders, FenceHeaders.SOURCE_TOPIC), last(ownHeaders, FenceHeaders.SOURCE_PARTITION),
                last(ownHeaders, FenceHeaders.SOURCE_OFFSET)};
        if (coordinates[0] != null && coordinates[1] != null && coordinates[2] != null) {
            headers.addAll(List.of(coordinates)); // a rejected copy names its source itself
        } else if (onStreamThread() && context.topic() != null && context.offset() >= 0) {
            headers.add(header(FenceHeaders.SOURCE_TOPIC, context.topic()));
            headers.add(header(FenceHeaders.SOURCE_PARTITION, Integer.toString(context.partition())));
            headers.add(header(FenceHeaders.SOURCE_OFFSET, Long.toString(context.offset())));
        }
        for (String name : IDENTIFYING_HEADERS) {
            Header identifying = last(ownHeaders, name);
            if (identifying != null && RecordSize.length(identifying.value()) <= MAX_IDENTIFYING_BYTES) {
                headers.add(identifying);
            }
        }
        boolean keepKey = key != null && key.length <= MAX_IDENTIFYING_BYTES;
        headers.add(header(FenceHeaders.SOURCE_KEY_BYTES, Integer.toString(RecordSize.length(key))));
        headers.add(header(FenceHeaders.SOURCE_VALUE_BYTES, Integer.toString(RecordSize.length(value))));
        headers.add(header(FenceHeaders.SOURCE_HEADERS_BYTES, Long.toString(RecordSize.headersBytes(List.of(ownHeaders)))));
        headers.add(header(FenceHeaders.REJECTED_VALUE_OMITTED, "true"));
        headers.add(header(FenceHeaders.REJECTED_HEADERS_OMITTED, Integer.toString(ownHeaders.length)));
        if (!keepKey) {
            headers.add(header(FenceHeaders.REJECTED_KEY_OMITTED, "true"));
        }
        return new ProducerRecord<byte[], byte[]>(rejectedTopic, null, null, keepKey ? key : null, null,
                new RecordHeaders(headers.toArray(Header[]::new)));
    }

    /**
     * Whether this call runs on the stream thread, inside the send: then the context's record is
     * the one whose output failed. A broker's refusal arrives later on the producer's network
     * thread, when the stream thread has moved on and the context names a later record
     * (RecordCollectorImpl reads the context when the callback runs).
     */
    private static boolean onStreamThread() {
        return !Thread.currentThread().getName().startsWith(KafkaProducer.NETWORK_THREAD_PREFIX);
    }

    private static Header last(Header[] headers, String name) {
        for (int i = headers.length - 1; i >= 0; i--) {
            if (headers[i].key().equals(name)) {
                return headers[i];
            }
        }
        return null;
    }

    private void count(String topic, Exception exception, String outcome) {
        if (meters != null) {
            Counter.builder("fence.enforcer.production.errors")
                    .description("Records Kafka refused to take from the enforcer, by outcome")
                    .tag("topic", topic).tag("exception", exception.getClass().getSimpleName()).tag("outcome", outcome)
                    .register(meters).increment();
            if (outcome.equals("resumed")) {
                // The same series the processor counts its rejections in (EnforcerMetrics).
                Counter.builder("fence.enforcer.records.fenced").tag("reason", RejectionReason.PRODUCE_FAILED.name())
                        .register(meters).increment();
            }
        }
    }

    private static String source(ErrorHandlerContext context) {
        return context.topic() == null
                ? "unknown (no input record in context)"
                : context.topic() + "-" + context.partition() + "@" + context.offset();
    }

    private static String sizes(byte[] key, byte[] value, Headers headers) {
        return "key " + RecordSize.length(key) + " B, value " + RecordSize.length(value) + " B, headers "
                + (headers == null ? 0 : RecordSize.headersBytes(headers)) + " B";
    }

    private static Header header(String name, String value) {
        return new RecordHeader(name, FenceHeaders.encode(value));
    }
}
