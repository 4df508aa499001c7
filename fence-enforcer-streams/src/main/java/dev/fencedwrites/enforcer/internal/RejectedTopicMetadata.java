package dev.fencedwrites.enforcer.internal;

import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.streams.KafkaClientSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Kafka clients of Kafka Streams' configured supplier ({@code default.client.supplier}), except that each producer
 * learns the rejected topic's partitions as soon as it is made.
 *
 * <p>Why (found from {@code EnforcerOversizedRecordIT}'s 65 s): when the broker refuses an accepted copy, the
 * refusal reaches {@link FenceProductionExceptionHandler} in the producer's own network thread, and Kafka Streams sends the
 * handler's reference record (KIP-1034) to the rejected topic from that thread. A producer without the rejected topic's
 * metadata then waits for it on the very thread that would fetch it: for {@code max.block.ms} (60 s), with no record of
 * the task produced meanwhile, after which the reference record fails and the task is closed as corrupted and processed
 * again. Asking for the rejected topic's partitions when the producer is made (in the {@code KafkaStreams} constructor, or
 * when a stream thread makes a new producer) fills its metadata; the enforcer also keeps an idle topic's metadata for good
 * ({@value #METADATA_MAX_IDLE_MS} ms as {@code producer.metadata.max.idle.ms}, unless set), since Kafka's 5 minutes, or any
 * finite time, would drop it from a producer that has rejected nothing for that long.
 */
public final class RejectedTopicMetadata implements KafkaClientSupplier {
    private static final Logger LOG = LoggerFactory.getLogger(RejectedTopicMetadata.class);
    /**
     * {@code metadata.max.idle.ms} of the enforcer's producers unless set: for good. Half of {@code Long.MAX_VALUE}, since the
     * producer adds it to the current time.
     */
    public static final long METADATA_MAX_IDLE_MS = Long.MAX_VALUE / 2;

    private final KafkaClientSupplier clients;
    private final List<String> topics;

    /**
     * @param clients the supplier Kafka Streams would use ({@code StreamsConfig.getKafkaClientSupplier()})
     * @param topics  the topics whose partitions each producer learns when made: the rejected topic
     */
    public RejectedTopicMetadata(KafkaClientSupplier clients, List<String> topics) {
        this.clients = clients;
        this.topics = List.copyOf(topics);
    }

    @Override
    public Producer<byte[], byte[]> getProducer(Map<String, Object> config) {
        Producer<byte[], byte[]> producer = clients.getProducer(config);
        for (String topic : topics) {
            try {
                producer.partitionsFor(topic);
            } catch (KafkaException e) {
                // Only an optimisation: the producer then learns the topic at its first write there, as without this class.
                LOG.warn("could not read the partitions of {} ahead of the first rejection: {}", topic, e.toString());
            }
        }
        return producer;
    }

    @Override
    public Admin getAdmin(Map<String, Object> config) {
        return clients.getAdmin(config);
    }

    @Override
    public Consumer<byte[], byte[]> getConsumer(Map<String, Object> config) {
        return clients.getConsumer(config);
    }

    @Override
    public Consumer<byte[], byte[]> getRestoreConsumer(Map<String, Object> config) {
        return clients.getRestoreConsumer(config);
    }

    @Override
    public Consumer<byte[], byte[]> getGlobalConsumer(Map<String, Object> config) {
        return clients.getGlobalConsumer(config);
    }
}
