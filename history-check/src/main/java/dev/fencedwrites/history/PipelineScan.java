package dev.fencedwrites.history;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads the pipeline's topics for {@code fence verify}: each partition from its beginning to the end offset it had when first
 * read ({@code read_committed}, no consumer group), the same range on every pass, with a progress line every
 * {@value #PROGRESS_SECONDS} s; and the committed offsets of the enforcer's and the sink's consumer groups.
 */
final class PipelineScan implements TopicSource, AutoCloseable {
    private static final int PROGRESS_SECONDS = 5;
    /** How many accepted copies from the window's start {@link #window} looks for among the input records. */
    private static final int WINDOW_PROBE = 100;

    private final Map<String, Object> client;
    private final PrintWriter progress;
    private final Admin admin;
    private final Map<String, Map<TopicPartition, Long>> ends = new HashMap<>();

    /** @param client every Kafka client setting (bootstrap.servers, security); {@code progress}: where progress lines go */
    PipelineScan(Map<String, Object> client, PrintWriter progress) {
        this.client = Map.copyOf(client);
        this.progress = progress;
        Properties props = new Properties();
        props.putAll(client);
        props.putIfAbsent("default.api.timeout.ms", "15000");
        props.putIfAbsent("request.timeout.ms", "10000");
        this.admin = Admin.create(props);
    }

    /** The topic's partition count, or 0 when it does not exist. */
    int partitions(String topic) throws InterruptedException {
        try {
            TopicDescription description = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            return description.partitions().size();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof UnknownTopicOrPartitionException) {
                return 0;
            }
            throw new IllegalStateException("cannot describe topic " + topic + ": " + e.getCause(), e.getCause());
        }
    }

    /** The group's committed offset per partition of {@code topic}; a partition it has not committed is absent. */
    Map<Integer, Long> committed(String group, String topic) throws InterruptedException {
        try {
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                    .get();
            Map<Integer, Long> out = new HashMap<>();
            offsets.forEach((partition, at) -> {
                if (partition.topic().equals(topic) && at != null) {
                    out.put(partition.partition(), at.offset());
                }
            });
            return out;
        } catch (ExecutionException e) {
            throw new IllegalStateException("cannot read the committed offsets of consumer group " + group + ": " + e.getCause(),
                    e.getCause());
        }
    }

    /** The end offset of each partition of {@code topic} (read_committed), fixed at the first call for the topic. */
    Map<TopicPartition, Long> ends(String topic) {
        return ends.computeIfAbsent(topic, t -> {
            try (KafkaConsumer<byte[], byte[]> consumer = consumer()) {
                List<TopicPartition> partitions = consumer.partitionsFor(t, Duration.ofSeconds(15)).stream()
                        .map(p -> new TopicPartition(t, p.partition())).toList();
                return Map.copyOf(consumer.endOffsets(partitions));
            }
        });
    }

    /**
     * Feeds {@code handler} the records of {@code topic} from {@code from} (else the beginning) below {@code until} and
     * {@link #ends}, each partition in offset order.
     */
    @Override
    public void read(String topic, String pass, Map<Integer, Long> from, Map<Integer, Long> until,
            Consumer<ConsumerRecord<byte[], byte[]>> handler) {
        Map<TopicPartition, Long> end = new HashMap<>();
        ends(topic).forEach((partition, at) -> end.put(partition, Math.min(at, until.getOrDefault(partition.partition(), at))));
        long started = System.nanoTime();
        long records = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = consumer()) {
            consumer.assign(end.keySet());
            consumer.seekToBeginning(end.keySet());
            end.keySet().forEach(partition -> {
                Long at = from.get(partition.partition());
                if (at != null && at > consumer.position(partition)) {
                    consumer.seek(partition, at);
                }
            });
            long total = end.keySet().stream().mapToLong(p -> end.get(p) - consumer.position(p)).sum();
            long lastReport = started;
            while (end.keySet().stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    if (record.offset() < end.get(new TopicPartition(record.topic(), record.partition()))) {
                        handler.accept(record);
                        records++;
                    }
                }
                if (System.nanoTime() - lastReport > Duration.ofSeconds(PROGRESS_SECONDS).toNanos()) {
                    lastReport = System.nanoTime();
                    progress.printf("[verify] %s: %s, %,d of about %,d records%n", pass, topic, records, total);
                    progress.flush();
                }
            }
        }
        progress.printf("[verify] %s: read %,d %s of %s in %.1f s%n", pass, records, records == 1 ? "record" : "records", topic,
                (System.nanoTime() - started) / 1e9);
        progress.flush();
    }

    /**
     * The window of {@code fence verify --since} ({@link Scope.Window}). On each partition the accepted topic's window starts
     * at its first committed copy whose timestamp is at or after {@code sinceMillis} (the enforcer keeps each input record's
     * timestamp, and writes a key's copies in its input records' order), and the input's at the first record so stamped; but
     * after any
     * record stamped earlier (a writer's clock behind) that comes before the first input record holding one of the next
     * {@value #WINDOW_PROBE} copies' contents, since its copy may be before the accepted topic's window. Every accepted copy
     * before the window is then the decision of an input record before it, and every one in it of an input record in it.
     *
     * @throws IllegalStateException when the two topics' partition counts differ (a key's copies are then elsewhere)
     */
    Scope.Window window(String input, String accepted, long sinceMillis, Findings findings) {
        Map<TopicPartition, Long> inputEnds = ends(input);
        Map<TopicPartition, Long> acceptedEnds = ends(accepted);
        if (inputEnds.size() != acceptedEnds.size()) {
            throw new IllegalStateException("--since needs the accepted topic " + accepted + " to have as many partitions as "
                    + input + " (" + acceptedEnds.size() + " and " + inputEnds.size() + ")");
        }
        Map<Integer, Long> inputFrom = new HashMap<>();
        Map<Integer, Long> acceptedFrom = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = consumer()) {
            Map<TopicPartition, Long> inputAt = firstAtOrAfter(consumer, inputEnds, sinceMillis);
            Map<TopicPartition, Long> acceptedAt = firstAtOrAfter(consumer, acceptedEnds, sinceMillis);
            for (TopicPartition partition : inputEnds.keySet()) {
                TopicPartition copies = new TopicPartition(accepted, partition.partition());
                Set<Long> probe = new HashSet<>();
                // The first committed copy stamped at or after the time: offsetsForTimes may name an aborted one (an
                // enforcer killed mid-transaction), after which the committed copies made again of earlier records follow.
                long[] copiesFrom = {acceptedEnds.get(copies)};
                readRange(consumer, copies, acceptedAt.get(copies), acceptedEnds.get(copies),
                        record -> {
                            requireCreateTime(record);
                            if (probe.isEmpty() && record.timestamp() < sinceMillis) {
                                return true;
                            }
                            if (probe.isEmpty()) {
                                copiesFrom[0] = record.offset();
                            }
                            probe.add(Hashes.content(record));
                            return probe.size() < WINDOW_PROBE;
                        });
                long[] skewed = {-1};
                boolean[] matched = {false};
                readRange(consumer, partition, inputAt.get(partition), inputEnds.get(partition), record -> {
                    requireCreateTime(record);
                    if (probe.contains(Hashes.content(record))) {
                        matched[0] = true;
                        return false;
                    }
                    if (record.timestamp() < sinceMillis) {
                        skewed[0] = record.offset(); // stamped earlier (a writer's clock behind): its copy may be before
                    }
                    return true;
                });
                // No probed copy matched (re-routed or bypass copies only): the first input stamped at or after the time.
                inputFrom.put(partition.partition(), matched[0] && skewed[0] >= 0 ? skewed[0] + 1 : inputAt.get(partition));
                acceptedFrom.put(partition.partition(), copiesFrom[0]);
            }
        }
        long skipped = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = consumer()) {
            for (Map.Entry<TopicPartition, Long> start : consumer.beginningOffsets(inputEnds.keySet()).entrySet()) {
                skipped += Math.max(0, inputFrom.get(start.getKey().partition()) - start.getValue());
            }
        }
        findings.add("input offsets before --since (not read; their accepted copies and markers set each key's fence)",
                skipped);
        return new Scope.Window(inputFrom, acceptedFrom);
    }

    /**
     * {@code --since} finds the window by the records' own timestamps, which the enforcer keeps on its copies.
     *
     * @throws IllegalStateException when the topic stamps records with the broker's time instead
     */
    private static void requireCreateTime(ConsumerRecord<byte[], byte[]> record) {
        if (record.timestampType() == TimestampType.LOG_APPEND_TIME) {
            throw new IllegalStateException("--since needs CreateTime timestamps, and " + record.topic()
                    + " has message.timestamp.type=LogAppendTime: run verify without --since");
        }
    }

    /** Per partition, the first offset whose timestamp is at or after {@code millis}, else the end. */
    private static Map<TopicPartition, Long> firstAtOrAfter(KafkaConsumer<byte[], byte[]> consumer,
            Map<TopicPartition, Long> ends, long millis) {
        Map<TopicPartition, Long> query = new HashMap<>();
        ends.keySet().forEach(partition -> query.put(partition, millis));
        Map<TopicPartition, OffsetAndTimestamp> found = consumer.offsetsForTimes(query);
        Map<TopicPartition, Long> out = new HashMap<>();
        ends.forEach((partition, end) -> {
            OffsetAndTimestamp at = found.get(partition);
            out.put(partition, at == null ? end : Math.min(at.offset(), end));
        });
        return out;
    }

    /** Feeds {@code handler} one partition's records from {@code from} below {@code until} while it returns true. */
    private static void readRange(KafkaConsumer<byte[], byte[]> consumer, TopicPartition partition, long from, long until,
            Predicate<ConsumerRecord<byte[], byte[]>> handler) {
        consumer.assign(List.of(partition));
        consumer.seek(partition, from);
        while (consumer.position(partition) < until) {
            for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                if (record.offset() >= until || !handler.test(record)) {
                    return;
                }
            }
        }
    }

    /**
     * Feeds {@code handler} the records of {@code topic} written since {@link #ends} was taken, up to its end now: what
     * the sink may have written to its table after the passes read the topic.
     */
    void readSince(String topic, Consumer<ConsumerRecord<byte[], byte[]>> handler) {
        Map<TopicPartition, Long> from = ends(topic);
        try (KafkaConsumer<byte[], byte[]> consumer = consumer()) {
            consumer.assign(from.keySet());
            Map<TopicPartition, Long> now = consumer.endOffsets(from.keySet());
            from.forEach(consumer::seek);
            while (now.keySet().stream().anyMatch(p -> consumer.position(p) < now.get(p))) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    if (record.offset() < now.get(new TopicPartition(record.topic(), record.partition()))) {
                        handler.accept(record);
                    }
                }
            }
        }
    }

    private KafkaConsumer<byte[], byte[]> consumer() {
        Properties props = new Properties();
        props.putAll(client);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        // A position deleted by retention during the read moves to the earliest record, not past the rest.
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.putIfAbsent(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "2000");
        props.putIfAbsent(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        props.remove(ConsumerConfig.GROUP_ID_CONFIG);
        return new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    @Override
    public void close() {
        admin.close(Duration.ofSeconds(5));
    }
}
