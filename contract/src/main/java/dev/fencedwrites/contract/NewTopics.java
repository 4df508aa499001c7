package dev.fencedwrites.contract;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.RetriableException;

/**
 * Waiting until newly created topics can take writes.
 *
 * <p>{@code Admin.createTopics} completes when the controller has recorded the topics, before every
 * broker has applied them. An idempotent producer that writes at once can have its first request
 * refused {@code NOT_LEADER_OR_FOLLOWER} while a later request of the same producer is appended;
 * every retry of the first then fails {@code OUT_OF_ORDER_SEQUENCE_NUMBER} until
 * {@code delivery.timeout.ms} expires it and its records are lost (KAFKA-14312, KAFKA-15591).
 * Whoever creates a topic and then writes to it waits here first.
 */
public final class NewTopics {
    private static final long RETRY_BACKOFF_MS = 100;

    private NewTopics() {
    }

    /**
     * Returns once every partition of {@code topics} has a leader that answers a {@code ListOffsets}
     * request for it, which the leader serves from the same partition state a produce request needs.
     *
     * @param admin   a client of the cluster that holds the topics
     * @param topics  topic names, each already created
     * @param timeout how long to wait in all
     * @throws TimeoutException   when some partition has no serving leader within {@code timeout};
     *                            the message names the last retriable error
     * @throws ExecutionException when the cluster answers with an error that waiting does not cure
     *                            (an authorization failure, for example)
     */
    public static void awaitWritable(Admin admin, Collection<String> topics, Duration timeout)
            throws ExecutionException, InterruptedException, TimeoutException {
        long deadline = System.nanoTime() + timeout.toNanos();
        String last = "no answer yet";
        while (true) {
            long leftMs = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
            String step = "describeTopics (an unknown topic is retried until the wait ends)";
            try {
                Map<String, TopicDescription> described = admin.describeTopics(topics).allTopicNames().get(leftMs,
                        TimeUnit.MILLISECONDS);
                Map<TopicPartition, OffsetSpec> partitions = new HashMap<>();
                String leaderless = null;
                for (TopicDescription topic : described.values()) {
                    for (TopicPartitionInfo partition : topic.partitions()) {
                        if (partition.leader() == null || partition.leader().isEmpty()) {
                            leaderless = topic.name() + "-" + partition.partition();
                        }
                        partitions.put(new TopicPartition(topic.name(), partition.partition()), OffsetSpec.latest());
                    }
                }
                if (leaderless == null) {
                    step = "listOffsets on their leaders";
                    admin.listOffsets(partitions, new ListOffsetsOptions().timeoutMs((int) Math.min(Integer.MAX_VALUE, leftMs)))
                            .all().get(leftMs, TimeUnit.MILLISECONDS);
                    return;
                }
                last = "partition " + leaderless + " has no leader";
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof RetriableException)) {
                    throw e;
                }
                last = e.getCause().toString();
            } catch (TimeoutException e) {
                last = step + " did not complete" + ("no answer yet".equals(last) ? "" : "; before that: " + last);
            }
            if (System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RETRY_BACKOFF_MS) > deadline) {
                throw new TimeoutException("the partitions of " + topics + " had no leader serving them within "
                        + timeout.toMillis() + " ms: " + last);
            }
            Thread.sleep(RETRY_BACKOFF_MS);
        }
    }
}
