package dev.fencedwrites.enforcer.internal;

import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.processor.internals.DefaultKafkaClientSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kafka Streams' own clients, except that each producer learns the rejected topic's partitions as soon as it is made.
 *
 * <p>Why (found in issue 19 from {@code EnforcerOversizedRecordIT}'s 65 s): when the broker refuses an accepted copy, the
 * refusal reaches {@link FenceProductionExceptionHandler} in the producer's own network thread, and Kafka Streams sends the
 * handler's reference record (KIP-1034) to the rejected topic from that thread. A producer that has never written to the
 * rejected topic then waits for its metadata on the very thread that would fetch it: for {@code max.block.ms} (60 s), with
 * no record of the task produced meanwhile, after which the reference record fails and the task is closed as corrupted and
 * processed again. Asking for the rejected topic's partitions on the stream thread, when the producer is made, fills the
 * producer's metadata; the enforcer also keeps an idle topic's metadata for a day instead of 5 minutes
 * ({@code producer.metadata.max.idle.ms}), so that it is still there when the first refusal comes.
 */
public final class RejectedTopicMetadata extends DefaultKafkaClientSupplier {
    private static final Logger LOG = LoggerFactory.getLogger(RejectedTopicMetadata.class);
    /** {@code metadata.max.idle.ms} of the enforcer's producers unless set: one day. */
    public static final long METADATA_MAX_IDLE_MS = 24 * 60 * 60 * 1000L;

    private final List<String> topics;

    /** @param topics the topics whose partitions each producer learns when made: the rejected topic */
    public RejectedTopicMetadata(List<String> topics) {
        this.topics = List.copyOf(topics);
    }

    @Override
    public Producer<byte[], byte[]> getProducer(Map<String, Object> config) {
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(),
                new ByteArraySerializer());
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
}
