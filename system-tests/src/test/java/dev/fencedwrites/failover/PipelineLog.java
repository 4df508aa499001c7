package dev.fencedwrites.failover;

import dev.fencedwrites.avro.AvroDeserializer;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceOp;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.failover.Decided.Input;
import dev.fencedwrites.failover.Decided.Kind;
import dev.fencedwrites.failover.Decided.Output;
import dev.fencedwrites.failover.Decided.Ref;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads the pipeline's topics back for the failover checks, {@code read_committed}, each from its
 * beginning to its end: the input topic as {@link Input}s, the accepted, rejected (stage
 * {@code enforcer}) and markers topics as {@link Output}s. Also answers how far a consumer group has
 * committed, to know when the enforcer or the sink has caught up.
 */
final class PipelineLog {
    /** The enforcer's default application.id, its consumer group. */
    static final String ENFORCER_GROUP = "fence-enforcer";

    private final String bootstrap;
    private final AvroDeserializer<BillingSummary> values;

    PipelineLog(String bootstrap, String registry) {
        this.bootstrap = bootstrap;
        this.values = new AvroDeserializer<>(new RestSchemaRegistryClient(registry, Duration.ofSeconds(10)),
                BillingSummary.getClassSchema());
    }

    List<Input> inputs() {
        List<Input> inputs = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> record : readAll(FenceTopics.INPUT)) {
            boolean marker = FenceOp.FENCE.name().equals(header(record, FenceHeaders.OP));
            inputs.add(new Input(record.partition(), record.offset(), key(record), fence(record), marker, writeId(record)));
        }
        return inputs;
    }

    /** The enforcer's outputs: every accepted record, rejected copy of stage enforcer and published marker. */
    List<Output> outputs() {
        List<Output> outputs = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> record : readAll(FenceTopics.ACCEPTED)) {
            outputs.add(new Output(Kind.ACCEPTED, record.partition(), record.offset(), key(record), fence(record), null,
                    writeId(record), null));
        }
        for (ConsumerRecord<byte[], byte[]> record : readAll(FenceTopics.REJECTED)) {
            if (FenceHeaders.STAGE_ENFORCER.equals(header(record, FenceHeaders.REJECTED_STAGE))) {
                outputs.add(new Output(Kind.REJECTED, record.partition(), record.offset(), key(record), fence(record),
                        source(record), writeId(record), RejectionReason.valueOf(header(record, FenceHeaders.REJECTED_REASON))));
            }
        }
        for (ConsumerRecord<byte[], byte[]> record : readAll(FenceTopics.MARKERS)) {
            outputs.add(
                    new Output(Kind.MARKER, record.partition(), record.offset(), key(record), fence(record), source(record), -1,
                            null));
        }
        return outputs;
    }

    /**
     * Whether {@code group} has committed the end of every partition of {@code topics}: it has
     * processed everything written so far (the enforcer commits its outputs with its offsets).
     */
    boolean committedToEnd(String group, List<String> topics) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            Map<TopicPartition, OffsetSpec> ends = new HashMap<>();
            admin.describeTopics(topics).allTopicNames().get(30, TimeUnit.SECONDS).forEach((name, description) -> description
                    .partitions().forEach(p -> ends.put(new TopicPartition(name, p.partition()), OffsetSpec.latest())));
            return admin.listOffsets(ends).all().get(30, TimeUnit.SECONDS).entrySet().stream().allMatch(e -> e.getValue()
                    .offset() == 0
                    || committed.get(e.getKey()) != null && committed.get(e.getKey()).offset() >= e.getValue().offset());
        }
    }

    /**
     * Whether {@code group} has committed at least {@code targets} (a position per topic partition). For
     * a sink: Connect commits the offset after the last record it handled, never past the transaction
     * marker that ends a transactional topic, so the end offset is out of its reach.
     */
    boolean committedAtLeast(String group, Map<TopicPartition, Long> targets) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            return targets.entrySet().stream().allMatch(
                    e -> committed.get(e.getKey()) != null && committed.get(e.getKey()).offset() >= e.getValue());
        }
    }

    /** The position after the last of {@code outputs} of each kind's topic partition: where a sink has read them all. */
    static Map<TopicPartition, Long> after(List<Output> outputs) {
        Map<TopicPartition, Long> after = new HashMap<>();
        for (Output output : outputs) {
            String topic = switch (output.kind()) {
                case ACCEPTED -> FenceTopics.ACCEPTED;
                case MARKER -> FenceTopics.MARKERS;
                case REJECTED -> FenceTopics.REJECTED;
            };
            after.merge(new TopicPartition(topic, output.partition()), output.offset() + 1, Math::max);
        }
        return after;
    }

    /** The offsets {@code group} has committed on {@code topic}, by partition (absent: none yet). */
    Map<Integer, Long> committed(String group, String topic) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            Map<Integer, Long> offsets = new HashMap<>();
            admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS)
                    .forEach((partition, offset) -> {
                        if (partition.topic().equals(topic) && offset != null) {
                            offsets.put(partition.partition(), offset.offset());
                        }
                    });
            return offsets;
        }
    }

    private List<ConsumerRecord<byte[], byte[]>> readAll(String topic) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5_000);
        List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> ends = consumer.endOffsets(partitions, Duration.ofSeconds(30));
            long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
            while (partitions.stream().anyMatch(p -> consumer.position(p, Duration.ofSeconds(30)) < ends.get(p))) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("could not read " + topic + " to its end " + ends + " within 2 minutes");
                }
                consumer.poll(Duration.ofMillis(500)).forEach(records::add);
            }
        }
        return records;
    }

    private long writeId(ConsumerRecord<byte[], byte[]> record) {
        BillingSummary value = record.value() == null ? null : values.deserialize(record.topic(), record.value());
        return value == null ? -1 : value.getAmountMinor();
    }

    private static Fence fence(ConsumerRecord<byte[], byte[]> record) {
        String seq = header(record, FenceHeaders.SEQ);
        return new Fence(Long.parseLong(header(record, FenceHeaders.TOKEN)), seq == null ? Fence.NO_SEQ : Long.parseLong(seq));
    }

    private static Ref source(ConsumerRecord<byte[], byte[]> record) {
        return new Ref(Integer.parseInt(header(record, FenceHeaders.SOURCE_PARTITION)),
                Long.parseLong(header(record, FenceHeaders.SOURCE_OFFSET)));
    }

    private static String key(ConsumerRecord<byte[], byte[]> record) {
        return record.key() == null ? null : new String(record.key(), StandardCharsets.UTF_8);
    }

    private static String header(ConsumerRecord<byte[], byte[]> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }
}
