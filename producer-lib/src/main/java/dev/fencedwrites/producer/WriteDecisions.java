package dev.fencedwrites.producer;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceOp;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.contract.RejectionReason;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.utils.Utils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opt-in: tells a writer what the enforcer decided on its own writes, so a superseded worker learns that it was fenced
 * and can stop, the way a Kafka producer learns it from {@code ProducerFencedException}.
 *
 * <p>One {@code read_committed} consumer, without a consumer group, on one thread ({@code fence-write-decisions}). It reads
 * only the partitions of the accepted and rejected topics that the {@linkplain #watch watched} resources' keys map to
 * (murmur2 of the UTF-8 key, Kafka's default partitioner: the enforcer writes a key's records to the partition its key
 * gives), from their end at the time of {@code watch}. It reports the records whose {@code fence.writer} is this writer's
 * and whose key is watched: the enforcer copies the input record's headers to both topics, so {@code fence.token},
 * {@code fence.seq} and {@code fence.lease} identify the write; a rejected copy adds {@code fence.rejected.reason},
 * {@code .stage} and {@code .highest} (the fence that refused it).
 *
 * <p>Cost: the consumer fetches every record of those partitions (other writers' too) and drops what is not this writer's,
 * so with many keys it reads about the share of both topics that its keys' partitions hold; a decision arrives after the
 * enforcer commits its transaction (its {@code commit.interval.ms}, 100 ms under {@code exactly_once_v2}). A rejected copy
 * reduced to a reference record (headers omitted) has no writer header and is not reported.
 *
 * <p>Call {@link #watch} before sending under a lease (before {@code acquire}), or decisions written before the watch began
 * are missed. Thread-safe; {@link #close} stops the thread and the consumer.
 */
public final class WriteDecisions implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WriteDecisions.class);
    private static final Duration POLL = Duration.ofMillis(200);

    private final Consumer<byte[], byte[]> consumer;
    private final List<String> topics;
    private final String writer;
    private final DecisionListener listener;
    private final Set<String> watched = ConcurrentHashMap.newKeySet();
    private final BlockingQueue<Watch> pending = new LinkedBlockingQueue<>();
    private final Thread thread;
    private volatile boolean closed;
    private volatile RuntimeException failure;

    private record Watch(String resource, CompletableFuture<Void> started) {
    }

    WriteDecisions(Consumer<byte[], byte[]> consumer, String acceptedTopic, String rejectedTopic, String writer,
            DecisionListener listener) {
        if (writer == null || writer.isBlank()) {
            throw new IllegalArgumentException("writer must be the fence.writer of the FencedProducer whose writes to watch");
        }
        this.consumer = consumer;
        this.topics = List.of(acceptedTopic, rejectedTopic);
        this.writer = writer;
        this.listener = listener;
        this.thread = new Thread(this::run, "fence-write-decisions");
        thread.setDaemon(true);
        thread.start();
    }

    /** Watches {@code writer}'s writes on the default topics: {@code fenced-writes-accepted}, {@code fenced-writes-rejected}. */
    public static WriteDecisions start(Map<String, Object> kafkaConfig, String writer, DecisionListener listener) {
        return start(kafkaConfig, FenceTopics.ACCEPTED, FenceTopics.REJECTED, writer, listener);
    }

    /**
     * Starts the watcher's consumer and thread.
     *
     * @param kafkaConfig   consumer settings: {@code bootstrap.servers} and any security settings (those of the producer
     *                      serve); {@code isolation.level} is set to {@code read_committed} and {@code enable.auto.commit}
     *                      to false, since the enforcer writes transactionally and the watcher commits no offsets
     * @param writer        the {@code fence.writer} of the {@link FencedProducer} whose writes to report
     * @param listener      hears each decision, on the watcher's thread
     * @throws KafkaException if the consumer cannot be created (a bad setting, named by Kafka)
     */
    public static WriteDecisions start(Map<String, Object> kafkaConfig, String acceptedTopic, String rejectedTopic,
            String writer, DecisionListener listener) {
        Map<String, Object> config = new HashMap<>(kafkaConfig);
        // The setting's value, not IsolationLevel.toString(): before kafka-clients 4.0 that is the enum's name, refused.
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        config.putIfAbsent(ConsumerConfig.CLIENT_ID_CONFIG, "fence-write-decisions-" + writer);
        return new WriteDecisions(new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer()),
                acceptedTopic, rejectedTopic, writer, listener);
    }

    /**
     * Starts reporting decisions on writes to {@code resource}: assigns its key's partitions of both topics and returns once
     * their start offsets (the ends, now) are fixed. Watching a resource again does nothing.
     *
     * @throws TimeoutException     if that took longer than {@code timeout}
     * @throws KafkaException       if a topic does not exist or the broker cannot be reached
     * @throws IllegalStateException if the watcher is closed
     */
    public void watch(String resource, Duration timeout) throws InterruptedException, TimeoutException {
        if (failure != null) {
            throw new IllegalStateException("this WriteDecisions stopped reading: " + failure, failure);
        }
        if (closed || !thread.isAlive()) {
            throw new IllegalStateException("this WriteDecisions is closed");
        }
        if (watched.contains(resource)) {
            return;
        }
        Watch watch = new Watch(resource, new CompletableFuture<>());
        if (Thread.currentThread() == thread) {
            start(watch); // a listener, on the watcher's own thread, would wait for itself: start the watch here
        } else {
            pending.add(watch);
        }
        try {
            watch.started().get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            throw new KafkaException("could not watch the decisions on " + resource + ": " + e.getCause().getMessage(),
                    e.getCause());
        }
    }

    private void run() {
        try {
            while (!closed) {
                if (consumer.assignment().isEmpty()) {
                    Watch first = pending.poll(POLL.toMillis(), TimeUnit.MILLISECONDS); // nothing to poll before a watch
                    if (first != null) {
                        start(first);
                    }
                    continue;
                }
                for (Watch watch = pending.poll(); watch != null; watch = pending.poll()) {
                    start(watch);
                }
                try {
                    consumer.poll(POLL).forEach(this::report);
                } catch (WakeupException e) {
                    // close() woke us up
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            failure = e;
            LOG.error("the write decisions of {} are no longer read: {}", writer, e.toString(), e);
            try {
                listener.onFailure(e);
            } catch (RuntimeException listenerFailure) {
                LOG.warn("the decision listener failed on the watcher's failure", listenerFailure);
            }
        } finally {
            closed = true;
            IllegalStateException stopped = failure == null
                    ? new IllegalStateException("WriteDecisions closed")
                    : new IllegalStateException("WriteDecisions stopped: " + failure, failure);
            pending.forEach(w -> w.started().completeExceptionally(stopped));
            closeConsumer();
        }
    }

    /**
     * {@code close(Duration)}, deprecated since kafka-clients 4.1 for {@code close(CloseOptions)} (KIP-1092), which 3.x
     * lacks: producer-lib runs on kafka-clients 3.6.2 and later (README's Status).
     */
    @SuppressWarnings("deprecation")
    private void closeConsumer() {
        consumer.close(Duration.ofSeconds(5));
    }

    private void start(Watch watch) {
        try {
            Set<TopicPartition> fresh = new HashSet<>();
            byte[] key = watch.resource().getBytes(StandardCharsets.UTF_8);
            for (String topic : topics) {
                List<PartitionInfo> partitions = consumer.partitionsFor(topic);
                if (partitions == null || partitions.isEmpty()) {
                    throw new KafkaException("topic " + topic + " does not exist");
                }
                fresh.add(new TopicPartition(topic, Utils.toPositive(Utils.murmur2(key)) % partitions.size()));
            }
            fresh.removeAll(consumer.assignment());
            if (!fresh.isEmpty()) {
                Set<TopicPartition> all = new HashSet<>(consumer.assignment());
                all.addAll(fresh);
                consumer.assign(all); // keeps the positions of the partitions already assigned
                consumer.seekToEnd(fresh);
                fresh.forEach(consumer::position); // fixes the start now, not at the next poll
            }
            watched.add(watch.resource());
            watch.started().complete(null);
        } catch (RuntimeException e) {
            watch.started().completeExceptionally(e);
        }
    }

    private void report(ConsumerRecord<byte[], byte[]> record) {
        if (record.key() == null || !writer.equals(text(record, FenceHeaders.WRITER))) {
            return;
        }
        String resource = new String(record.key(), StandardCharsets.UTF_8);
        if (!watched.contains(resource)) {
            return;
        }
        WriteDecision decision;
        try {
            decision = decision(record, resource);
        } catch (IllegalArgumentException e) {
            LOG.debug("not a write of this writer's form at {}-{}@{}: {}", record.topic(), record.partition(), record.offset(),
                    e.getMessage());
            return;
        }
        try {
            listener.onDecision(decision);
        } catch (RuntimeException e) {
            LOG.warn("the decision listener failed on {}", decision, e);
        }
    }

    private WriteDecision decision(ConsumerRecord<byte[], byte[]> record, String resource) {
        String seq = text(record, FenceHeaders.SEQ);
        Fence fence = Fence.parse(seq == null ? text(record, FenceHeaders.TOKEN) : text(record, FenceHeaders.TOKEN) + "." + seq);
        String lease = text(record, FenceHeaders.LEASE);
        String op = text(record, FenceHeaders.OP);
        boolean accepted = record.topic().equals(topics.get(0));
        String highest = accepted ? null : text(record, FenceHeaders.REJECTED_HIGHEST);
        return new WriteDecision(accepted ? WriteDecision.Outcome.ACCEPTED : WriteDecision.Outcome.REJECTED, resource, fence,
                lease == null ? -1 : Long.parseLong(lease), op == null ? FenceOp.WRITE : FenceOp.valueOf(op),
                accepted ? null : reason(text(record, FenceHeaders.REJECTED_REASON)),
                accepted ? null : text(record, FenceHeaders.REJECTED_STAGE),
                highest == null || highest.isEmpty() ? null : Fence.parse(highest), record.topic(), record.partition(),
                record.offset(), Instant.ofEpochMilli(record.timestamp()));
    }

    private static RejectionReason reason(String name) {
        for (RejectionReason reason : RejectionReason.values()) {
            if (reason.name().equals(name)) {
                return reason;
            }
        }
        return null;
    }

    private static String text(ConsumerRecord<?, ?> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? null : FenceHeaders.decode(header.value());
    }

    /** Stops the thread and closes the consumer (waiting at most 10 s; an interrupt stops the wait and is kept). */
    @Override
    public void close() {
        closed = true;
        if (Thread.currentThread() == thread) {
            return; // called from a listener: the loop ends after it returns, and closes the consumer
        }
        consumer.wakeup();
        try {
            thread.join(Duration.ofSeconds(10).toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
