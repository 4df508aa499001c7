package dev.fencedwrites.enforcer.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencedwrites.contract.FenceHeaders;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.ProductionExceptionHandler.Response;
import org.apache.kafka.streams.errors.ProductionExceptionHandler.Result;
import org.apache.kafka.streams.errors.ProductionExceptionHandler.SerializationExceptionOrigin;
import org.apache.kafka.streams.processor.TaskId;
import org.junit.jupiter.api.Test;

/** What the enforcer does when Kafka still refuses one of its records: never a silent drop. */
class FenceProductionExceptionHandlerTest {
    private static final ErrorHandlerContext SOURCE = new Context("in", 2, 41L);

    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

    @Test
    void refusedAcceptedCopyUnderAtLeastOnceResumesWithAReferenceRecordOnTheRejectedTopic() {
        Response response = handler(StreamsConfig.AT_LEAST_ONCE).handleError(SOURCE, record("ok", new byte[10], new byte[300]),
                new RecordTooLargeException("The message is 2000000 bytes"));

        assertThat(response.result()).isEqualTo(Result.RESUME);
        assertThat(response.deadLetterQueueRecords()).singleElement().satisfies(reference -> {
            assertThat(reference.topic()).isEqualTo("dlq");
            assertThat(reference.key()).isEqualTo(new byte[10]);
            assertThat(reference.value()).isNull();
            assertThat(text(reference.headers(), FenceHeaders.REJECTED_REASON)).isEqualTo("PRODUCE_FAILED");
            assertThat(text(reference.headers(), FenceHeaders.TOKEN)).isEqualTo("5");
            assertThat(text(reference.headers(), FenceHeaders.REJECTED_STAGE)).isEqualTo("enforcer");
            assertThat(text(reference.headers(), FenceHeaders.REJECTED_ERROR)).contains("RecordTooLargeException", "'ok'",
                    "2000000");
            assertThat(text(reference.headers(), FenceHeaders.SOURCE_TOPIC)).isEqualTo("in");
            assertThat(text(reference.headers(), FenceHeaders.SOURCE_PARTITION)).isEqualTo("2");
            assertThat(text(reference.headers(), FenceHeaders.SOURCE_OFFSET)).isEqualTo("41");
            assertThat(text(reference.headers(), FenceHeaders.SOURCE_KEY_BYTES)).isEqualTo("10");
            assertThat(text(reference.headers(), FenceHeaders.SOURCE_VALUE_BYTES)).isEqualTo("300");
            assertThat(reference.headers().lastHeader(FenceHeaders.REJECTED_KEY_OMITTED)).isNull();
        });
        assertThat(count("ok", "RecordTooLargeException", "resumed")).isEqualTo(1.0);
        assertThat(meters.get("fence.enforcer.records.fenced").tag("reason", "PRODUCE_FAILED").counter().count())
                .isEqualTo(1.0);
    }

    /** The copy names its own source; the context may have moved on to a later record. */
    @Test
    void refusedRejectedCopyUnderAtLeastOnceResumesWithAReferenceRecordNamingTheCopysSource() {
        ProducerRecord<byte[], byte[]> copy = record("dlq", new byte[1], new byte[1]);
        copy.headers().add(FenceHeaders.SOURCE_TOPIC, "in".getBytes(StandardCharsets.UTF_8));
        copy.headers().add(FenceHeaders.SOURCE_PARTITION, "0".getBytes(StandardCharsets.UTF_8));
        copy.headers().add(FenceHeaders.SOURCE_OFFSET, "7".getBytes(StandardCharsets.UTF_8));

        Response response = handler(StreamsConfig.AT_LEAST_ONCE).handleError(SOURCE, copy, new InvalidRecordException("bad"));

        assertThat(response.result()).isEqualTo(Result.RESUME);
        assertThat(response.deadLetterQueueRecords()).singleElement().satisfies(reference -> {
            assertThat(reference.topic()).isEqualTo("dlq");
            assertThat(text(reference.headers(), FenceHeaders.SOURCE_PARTITION)).isEqualTo("0");
            assertThat(text(reference.headers(), FenceHeaders.SOURCE_OFFSET)).isEqualTo("7");
        });
    }

    /** A broker's refusal arrives on the producer's network thread, when the context already names a later record. */
    @Test
    void refusalReportedOnTheProducersNetworkThreadLeavesOutTheContextsCoordinatesAndKeepsTheKeyAndToken() throws Exception {
        FenceProductionExceptionHandler handler = handler(StreamsConfig.AT_LEAST_ONCE);
        List<Response> responses = new ArrayList<>();
        Thread network = new Thread(
                () -> responses.add(handler.handleError(SOURCE, record("ok", utf8("customer-42"), new byte[300]),
                        new RecordTooLargeException("too large"))),
                KafkaProducer.NETWORK_THREAD_PREFIX + " | enforcer-producer");
        network.start();
        network.join(TimeUnit.SECONDS.toMillis(30));

        assertThat(responses).singleElement()
                .satisfies(response -> assertThat(response.deadLetterQueueRecords()).singleElement().satisfies(reference -> {
                    assertThat(reference.headers().lastHeader(FenceHeaders.SOURCE_OFFSET)).isNull();
                    assertThat(reference.key()).isEqualTo(utf8("customer-42"));
                    assertThat(text(reference.headers(), FenceHeaders.TOKEN)).isEqualTo("5");
                }));
    }

    @Test
    void referenceRecordLeavesOutAKeyLargerThan1KiB() {
        Response response = handler(StreamsConfig.AT_LEAST_ONCE).handleError(SOURCE, record("ok", new byte[1025], new byte[1]),
                new RecordTooLargeException("too large"));

        assertThat(response.deadLetterQueueRecords()).singleElement().satisfies(reference -> {
            assertThat(reference.key()).isNull();
            assertThat(text(reference.headers(), FenceHeaders.REJECTED_KEY_OMITTED)).isEqualTo("true");
            assertThat(text(reference.headers(), FenceHeaders.SOURCE_KEY_BYTES)).isEqualTo("1025");
        });
    }

    /** The producer has moved the transaction to an abortable error: nothing sent in it could commit. */
    @Test
    void refusedRecordUnderExactlyOnceFailsTheThreadAndIsCounted() {
        Response response = handler(StreamsConfig.EXACTLY_ONCE_V2).handleError(SOURCE, record("ok", new byte[1], new byte[1]),
                new RecordTooLargeException("too large"));

        assertThat(response.result()).isEqualTo(Result.FAIL);
        assertThat(response.deadLetterQueueRecords()).isEmpty();
        assertThat(count("ok", "RecordTooLargeException", "failed")).isEqualTo(1.0);
        assertThat(meters.find("fence.enforcer.records.fenced").counter()).isNull();
    }

    /** Resuming would lose the fence from the changelog, and a restore would let a stale write through. */
    @Test
    void refusedChangelogRecordFailsTheThreadUnderAnyGuarantee() {
        Response response = handler(StreamsConfig.AT_LEAST_ONCE).handleError(SOURCE,
                record("fence-enforcer-fences-changelog", new byte[1], new byte[16]),
                new RecordTooLargeException("too large"));

        assertThat(response.result()).isEqualTo(Result.FAIL);
        assertThat(response.deadLetterQueueRecords()).isEmpty();
    }

    @Test
    void refusedReferenceRecordFailsTheThreadInsteadOfLooping() {
        FenceProductionExceptionHandler handler = handler(StreamsConfig.AT_LEAST_ONCE);
        ProducerRecord<byte[], byte[]> reference = handler.handleError(SOURCE, record("ok", new byte[1], new byte[1]),
                new RecordTooLargeException("too large")).deadLetterQueueRecords().get(0);

        Response response = handler.handleError(SOURCE, reference, new RecordTooLargeException("still too large"));

        assertThat(response.result()).isEqualTo(Result.FAIL);
    }

    @Test
    void retriableErrorIsRetriedAsKafkasDefaultHandlerDoes() {
        Response response = handler(StreamsConfig.AT_LEAST_ONCE).handleError(SOURCE, record("ok", new byte[1], new byte[1]),
                new NotEnoughReplicasException("isr"));

        assertThat(response.result()).isEqualTo(Result.RETRY);
        assertThat(response.deadLetterQueueRecords()).isEmpty();
    }

    /** A serializer fails before the send, so the transaction is intact and the reference record can commit with it. */
    @Test
    void serializationErrorUnderExactlyOnceResumesWithAReferenceRecord() {
        Response response = handler(StreamsConfig.EXACTLY_ONCE_V2).handleSerializationError(SOURCE,
                record("ok", new byte[3], null),
                new SerializationException("cannot"), SerializationExceptionOrigin.VALUE);

        assertThat(response.result()).isEqualTo(Result.RESUME);
        assertThat(response.deadLetterQueueRecords()).singleElement()
                .satisfies(reference -> assertThat(text(reference.headers(), FenceHeaders.REJECTED_ERROR))
                        .contains("SerializationException"));
    }

    @Test
    void handlerWithoutTheRejectedTopicIsRefusedAtConfiguration() {
        assertThatThrownBy(() -> new FenceProductionExceptionHandler().configure(Map.of()))
                .hasMessageContaining(FenceProductionExceptionHandler.REJECTED_TOPIC_CONFIG);
    }

    private FenceProductionExceptionHandler handler(String guarantee) {
        FenceProductionExceptionHandler handler = new FenceProductionExceptionHandler();
        handler.configure(Map.of(FenceProductionExceptionHandler.REJECTED_TOPIC_CONFIG, "dlq",
                StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee,
                FenceProductionExceptionHandler.METER_REGISTRY_CONFIG, meters));
        return handler;
    }

    private double count(String topic, String exception, String outcome) {
        return meters.get("fence.enforcer.production.errors").tags("topic", topic, "exception", exception, "outcome", outcome)
                .counter()
                .count();
    }

    private static ProducerRecord<byte[], byte[]> record(String topic, byte[] key, byte[] value) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, "5".getBytes(StandardCharsets.UTF_8));
        return new ProducerRecord<>(topic, null, key, value, headers);
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static String text(Headers headers, String name) {
        return FenceHeaders.decode(headers.lastHeader(name).value());
    }

    private record Context(String topic, int partition, long offset) implements ErrorHandlerContext {
        @Override
        public Headers headers() {
            return new RecordHeaders();
        }

        @Override
        public String processorNodeId() {
            return "fence";
        }

        @Override
        public TaskId taskId() {
            return new TaskId(0, partition);
        }

        @Override
        public long timestamp() {
            return 0L;
        }

        @Override
        public byte[] sourceRawKey() {
            return null;
        }

        @Override
        public byte[] sourceRawValue() {
            return null;
        }
    }
}
