package dev.fencedwrites.producer;

import dev.fencedwrites.schemas.FenceHeaders;
import dev.fencedwrites.schemas.FenceOp;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Publishes writes under a {@link FencingLease}: record key = the lease's resource, headers per
 * the wire contract v1 ({@code fence.token}, {@code fence.seq}, {@code fence.lease},
 * {@code fence.writer}, {@code fence.op}). Thread-safe like the Kafka producer it wraps.
 *
 * @param <V> the value type, written by any Kafka serializer (e.g. the project's Avro serializer)
 */
public final class FencedProducer<V> implements AutoCloseable {
    private final Producer<String, V> producer;
    private final String topic;
    private final String writer;

    /**
     * @param producer a producer with a String key serializer
     * @param topic    the input topic, e.g. {@code fenced-writes}
     * @param writer   this writer's identity for audits ({@code fence.writer})
     */
    public FencedProducer(Producer<String, V> producer, String topic, String writer) {
        this.producer = producer;
        this.topic = topic;
        this.writer = writer;
    }

    /**
     * Creates a Kafka producer with idempotent defaults ({@code acks=all},
     * {@code enable.idempotence=true}); entries of {@code kafkaConfig} override them.
     */
    public static <V> FencedProducer<V> create(Map<String, Object> kafkaConfig, Serializer<V> valueSerializer, String topic, String writer) {
        Map<String, Object> config = new HashMap<>();
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        config.putAll(kafkaConfig);
        return new FencedProducer<>(new KafkaProducer<>(config, new StringSerializer(), valueSerializer), topic, writer);
    }

    /**
     * Sends {@code value} (null = delete) under {@code lease} with the lease's next seq. The lease
     * is not re-checked here: checking cannot close the gap a pause opens, the fence does.
     *
     * @return the broker's acknowledgement; failures complete it exceptionally
     */
    public Future<RecordMetadata> send(FencingLease lease, V value) {
        return producer.send(record(lease, value, lease.nextSeq(), FenceOp.WRITE));
    }

    /** Sends the acquisition marker (seq 0, null value, {@code fence.op=FENCE}) that raises the key's fence. */
    public Future<RecordMetadata> sendFence(FencingLease lease) {
        return producer.send(record(lease, null, 0, FenceOp.FENCE));
    }

    private ProducerRecord<String, V> record(FencingLease lease, V value, long seq, FenceOp op) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, FenceHeaders.encode(lease.token()));
        headers.add(FenceHeaders.SEQ, FenceHeaders.encode(seq));
        headers.add(FenceHeaders.LEASE, FenceHeaders.encode(lease.leaseId()));
        headers.add(FenceHeaders.WRITER, FenceHeaders.encode(writer));
        headers.add(FenceHeaders.OP, FenceHeaders.encode(op.name()));
        return new ProducerRecord<>(topic, null, lease.resource(), value, headers);
    }

    /** Flushes outstanding sends. */
    public void flush() {
        producer.flush();
    }

    @Override
    public void close() {
        producer.close();
    }
}
