package dev.fencedwrites.enforcer;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * Start check under {@code partition.mismatch.policy=reject}: the strict topology does not
 * read the repartition topic {@code <application.id>-fence-reroute-repartition}, so records an earlier
 * {@code reroute} run sent there and did not decide yet would stay undecided. The enforcer refuses to
 * start while the topic holds any record past the application's committed offset (Kafka Streams
 * commits repartition offsets like input offsets and purges what it committed).
 */
final class RerouteDrainCheck {
    private RerouteDrainCheck() {
    }

    /**
     * @param topic the repartition topic; nothing is checked when it does not exist
     * @throws IllegalStateException naming the topic, the records left and the way out
     */
    static void requireDrained(Admin admin, String applicationId, String topic, Duration timeout)
            throws ExecutionException, InterruptedException, TimeoutException {
        Map<String, TopicDescription> found = TopicAdmin.describe(admin, List.of(topic), timeout);
        if (!found.containsKey(topic)) {
            return;
        }
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        Map<TopicPartition, OffsetSpec> earliest = new HashMap<>();
        found.get(topic).partitions().forEach(p -> {
            latest.put(new TopicPartition(topic, p.partition()), OffsetSpec.latest());
            earliest.put(new TopicPartition(topic, p.partition()), OffsetSpec.earliest());
        });
        Map<TopicPartition, ListOffsetsResultInfo> ends = admin.listOffsets(latest).all()
                .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        Map<TopicPartition, ListOffsetsResultInfo> starts = admin.listOffsets(earliest).all()
                .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(applicationId)
                .partitionsToOffsetAndMetadata().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        long left = 0;
        for (Map.Entry<TopicPartition, ListOffsetsResultInfo> end : ends.entrySet()) {
            OffsetAndMetadata done = committed.get(end.getKey());
            long from = Math.max(starts.get(end.getKey()).offset(), done == null ? 0 : done.offset());
            left += Math.max(0, end.getValue().offset() - from);
        }
        if (left > 0) {
            throw new IllegalStateException("repartition topic '" + topic + "' holds " + left + " re-routed record(s) that "
                    + "application '" + applicationId + "' has not decided yet, and "
                    + FenceEnforcerConfig.PARTITION_MISMATCH_POLICY
                    + "=reject does not read it: start once with " + FenceEnforcerConfig.PARTITION_MISMATCH_POLICY
                    + "=reroute until its lag is 0 (kafka-consumer-groups.sh --describe --group " + applicationId
                    + "), or delete the topic to drop them");
        }
    }
}
