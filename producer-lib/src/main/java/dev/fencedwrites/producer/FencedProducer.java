package dev.fencedwrites.producer;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceOp;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes writes under a {@link FencingLease}: record key = the lease's resource, headers per
 * the wire contract v1 ({@code fence.token}, {@code fence.seq}, {@code fence.lease},
 * {@code fence.writer}, {@code fence.op}). Each write under a lease gets the lease's next
 * {@code fence.seq}, from 1.
 *
 * <p>Fence at takeover: {@link #acquire} publishes a {@code FENCE} marker (seq 0, no value) for the
 * resource as soon as the lock is held and waits for the broker to acknowledge it, so the key's
 * fence is raised before the new holder writes anything: a paused former holder's write that lands
 * after the marker is rejected even if the new holder never writes.
 *
 * <p>Sends under a lease that is no longer valid fail fast with {@link LeaseLostException} and are
 * counted as {@code fence_producer_sends_refused_total}. That saves a write the fence would reject;
 * it cannot stop a write whose check passed before a pause, which is what the fence is for.
 * Thread-safe like the Kafka producer it wraps.
 *
 * @param <V> the value type, written by any Kafka serializer (e.g. the project's Avro serializer)
 */
public final class FencedProducer<V> implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(FencedProducer.class);
    /** The least time {@link #acquire} waits for the marker's acknowledgement, whatever is left of its timeout. */
    static final Duration MIN_MARKER_WAIT = Duration.ofSeconds(5);

    private final Producer<String, V> producer;
    private final String topic;
    private final String writer;
    private final Takeover takeover;
    private final Counter refused;
    private final Counter markers;

    /** What {@link #acquire} does once etcd has granted the lock. */
    public enum Takeover {
        /**
         * Publish the {@code FENCE} marker (seq 0) and wait for the broker's acknowledgement before returning the lease: the
         * fence rises at takeover, before the first write (recommended).
         */
        PUBLISH_MARKER,
        /** Return the lease at once: the fence rises with the new holder's first accepted write. */
        NO_MARKER
    }

    /**
     * A producer that fences at takeover and reports no metrics.
     *
     * @param producer a producer with a String key serializer; idempotence is the caller's choice here
     * @param topic    the input topic, e.g. {@code fenced-writes}
     * @param writer   this writer's identity for audits ({@code fence.writer})
     */
    public FencedProducer(Producer<String, V> producer, String topic, String writer) {
        this(producer, topic, writer, Takeover.PUBLISH_MARKER, new CompositeMeterRegistry());
    }

    /**
     * @param producer       a producer with a String key serializer
     * @param topic          the input topic, e.g. {@code fenced-writes}
     * @param writer         this writer's identity for audits ({@code fence.writer})
     * @param takeover       whether {@link #acquire} publishes the {@code FENCE} marker ({@code PUBLISH_MARKER}, recommended)
     * @param registry       where {@code fence.producer.sends.refused} and {@code fence.producer.markers} go
     */
    public FencedProducer(Producer<String, V> producer, String topic, String writer, Takeover takeover,
            MeterRegistry registry) {
        if (topic == null || topic.isBlank()) {
            throw new IllegalArgumentException("topic must be a topic name");
        }
        if (writer == null || writer.isBlank()) {
            throw new IllegalArgumentException("writer must name this writer (it goes into fence.writer)");
        }
        this.producer = producer;
        this.topic = topic;
        this.writer = writer;
        this.takeover = Objects.requireNonNull(takeover, "takeover");
        this.refused = Counter.builder("fence.producer.sends.refused")
                .description("Sends refused because their lease was no longer held")
                .register(registry);
        this.markers = Counter.builder("fence.producer.markers").description("FENCE markers published at acquisition")
                .register(registry);
    }

    /**
     * Creates a Kafka producer with idempotent defaults ({@code acks=all},
     * {@code enable.idempotence=true}); entries of {@code kafkaConfig} override them. Fences at takeover.
     */
    public static <V> FencedProducer<V> create(Map<String, Object> kafkaConfig, Serializer<V> valueSerializer, String topic,
            String writer) {
        return create(kafkaConfig, valueSerializer, topic, writer, Takeover.PUBLISH_MARKER, new CompositeMeterRegistry());
    }

    /**
     * Like {@link #create(Map, Serializer, String, String)}, choosing whether to fence at takeover and where metrics go.
     */
    public static <V> FencedProducer<V> create(Map<String, Object> kafkaConfig, Serializer<V> valueSerializer, String topic,
            String writer, Takeover takeover, MeterRegistry registry) {
        Map<String, Object> config = new HashMap<>();
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        config.putAll(kafkaConfig);
        return new FencedProducer<>(new KafkaProducer<>(config, new StringSerializer(), valueSerializer), topic, writer,
                takeover, registry);
    }

    /**
     * Acquires {@code resource} through {@code leases} and, unless fencing at takeover is off,
     * publishes the {@code FENCE} marker and waits for its acknowledgement (for the rest of
     * {@code timeout}, at least 5 s) before returning the lease.
     *
     * @throws LeaseAcquisitionException if the lease cannot be acquired or the marker not published (the lease is then released)
     * @throws InterruptedException      if interrupted (the lease is released)
     */
    public FencingLease acquire(FencingLeaseClient leases, String resource, Duration ttl, Duration timeout)
            throws LeaseAcquisitionException, InterruptedException {
        long start = System.nanoTime();
        FencingLease lease = leases.acquire(resource, ttl, timeout);
        if (takeover == Takeover.NO_MARKER) {
            return lease;
        }
        boolean fenced = false;
        try {
            long waitNanos = Math.max(MIN_MARKER_WAIT.toNanos(), timeout.toNanos() - (System.nanoTime() - start));
            CompletableFuture<RecordMetadata> pending = sendFence(lease);
            producer.flush(); // do not let linger.ms hold the marker back
            RecordMetadata marker = pending.get(waitNanos, TimeUnit.NANOSECONDS);
            markers.increment();
            LOG.info("raised the fence of {} to token {} (marker at {}-{}@{})", resource, lease.token(), marker.topic(),
                    marker.partition(), marker.offset());
            fenced = true;
            return lease;
        } catch (ExecutionException | TimeoutException | KafkaException e) {
            Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
            throw new LeaseAcquisitionException(
                    "acquired " + resource + " (token " + lease.token() + ") but could not publish its FENCE marker to "
                            + topic + ", so released it: " + cause,
                    cause);
        } finally {
            if (!fenced) {
                lease.close(); // whatever went wrong (also an interrupt), nobody else can use or release this lease
            }
        }
    }

    /**
     * The common case in one call: acquires {@code resource} (with its marker), runs {@code work},
     * publishes the value it returns under the lease and waits for the acknowledgement, then
     * releases the lease, also when anything fails.
     *
     * @param work computes the value to publish; {@code null} publishes a delete. It should check
     *             {@link FencingLease#isValid()} between long steps; the fence rejects its write if a pause outran the lease
     * @return where the write landed
     * @throws LeaseAcquisitionException if the lease cannot be acquired
     * @throws LeaseLostException        if the lease was lost before the write was sent
     * @throws KafkaException            if the broker did not accept the write
     * @throws Exception                 whatever {@code work} throws
     */
    public RecordMetadata runUnderLease(FencingLeaseClient leases, String resource, Duration ttl, Duration timeout,
            LeaseWork<V> work)
            throws Exception {
        try (FencingLease lease = acquire(leases, resource, ttl, timeout)) {
            V value = work.run(lease);
            return sendAndWait(lease, value);
        }
    }

    /**
     * Sends {@code value} (null = delete) under {@code lease} with the lease's next seq. Never throws:
     * every failure completes the future exceptionally, with {@link LeaseLostException} when the
     * lease is no longer valid (nothing is sent), or the producer's exception.
     *
     * @return the broker's acknowledgement
     */
    public CompletableFuture<RecordMetadata> send(FencingLease lease, V value) {
        LeaseLostException lost = lease.lostException();
        if (lost != null) {
            refused.increment();
            return CompletableFuture.failedFuture(lost);
        }
        return sendUnder(lease, value, FenceOp.WRITE);
    }

    /**
     * Sends like {@link #send} and waits for the acknowledgement (at most the producer's
     * {@code delivery.timeout.ms}).
     *
     * @throws LeaseLostException   if the lease is no longer valid (nothing was sent)
     * @throws KafkaException       if the producer failed; a non-Kafka cause is wrapped in one
     * @throws InterruptedException if interrupted while waiting (the write may still land)
     */
    public RecordMetadata sendAndWait(FencingLease lease, V value) throws InterruptedException {
        try {
            return send(lease, value).get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException runtime) {
                throw runtime;
            }
            throw new KafkaException("send to " + topic + " failed", e.getCause());
        }
    }

    /**
     * Sends the acquisition marker (seq 0, null value, {@code fence.op=FENCE}) that raises the key's
     * fence. {@link #acquire} calls it; call it yourself only for leases acquired elsewhere.
     */
    public CompletableFuture<RecordMetadata> sendFence(FencingLease lease) {
        LeaseLostException lost = lease.lostException();
        if (lost != null) {
            refused.increment();
            return CompletableFuture.failedFuture(lost);
        }
        return sendUnder(lease, null, FenceOp.FENCE);
    }

    /**
     * Takes the lease's next seq and hands the record to the producer under the lease's lock, so
     * concurrent sends under one lease reach the log in seq order (the value serializer runs
     * inside {@code producer.send}); sends under different leases do not wait for each other.
     */
    private CompletableFuture<RecordMetadata> sendUnder(FencingLease lease, V value, FenceOp op) {
        CompletableFuture<RecordMetadata> result = new CompletableFuture<>();
        try {
            synchronized (lease) {
                long seq = op == FenceOp.FENCE ? 0 : lease.nextSeq();
                producer.send(record(lease, value, seq, op), (metadata, error) -> {
                    if (error != null) {
                        result.completeExceptionally(error);
                    } else {
                        result.complete(metadata);
                    }
                });
            }
        } catch (RuntimeException e) {
            // Serialization errors, a closed producer, max.block.ms on a full buffer or missing metadata.
            result.completeExceptionally(e);
        }
        return result;
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

    /**
     * The work {@link #runUnderLease} runs while holding the lease.
     *
     * @param <V> the value type
     */
    @FunctionalInterface
    public interface LeaseWork<V> {
        /** Computes the value to publish under {@code lease}; {@code null} publishes a delete. */
        V run(FencingLease lease) throws Exception;
    }
}
