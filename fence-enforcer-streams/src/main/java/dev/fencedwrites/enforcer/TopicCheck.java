package dev.fencedwrites.enforcer;

import static dev.fencedwrites.enforcer.TopicAdmin.adminProperties;
import static dev.fencedwrites.enforcer.TopicAdmin.brokerMessageMaxBytes;
import static dev.fencedwrites.enforcer.TopicAdmin.compacted;
import static dev.fencedwrites.enforcer.TopicAdmin.create;
import static dev.fencedwrites.enforcer.TopicAdmin.describe;
import static dev.fencedwrites.enforcer.TopicAdmin.maxMessageBytes;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.streams.StreamsConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Startup checks of the enforcer's topics: each exists (or is created when
 * {@value FenceEnforcerConfig#TOPICS_CREATE_ENABLE} is set), the accepted and rejected topics have
 * at least as many partitions as the input, the rejected topic is not compacted, and the size
 * limits of the output topics are read for the processor (records that do not fit are routed,
 * never allowed to stop the application). The Admin calls are {@link TopicAdmin}'s.
 */
final class TopicCheck {
    /** Room for the headers a rejection adds, over the input topic's max.message.bytes. */
    static final int REJECTION_HEADROOM_BYTES = 64 * 1024;
    private static final Logger LOG = LoggerFactory.getLogger(TopicCheck.class);

    /** The Kafka producer's default max.request.size. */
    static final int DEFAULT_MAX_REQUEST_SIZE = 1024 * 1024;
    /** The Kafka producer's default buffer.memory: a larger record is refused too. */
    private static final long DEFAULT_BUFFER_MEMORY = 32L * 1024 * 1024;

    /**
     * What the broker says of the enforcer's topics, sizes in bytes.
     *
     * @param inputPartitions the input topic's partition count
     * @param acceptedMax     the accepted topic's max.message.bytes
     * @param rejectedMax     the rejected topic's max.message.bytes
     * @param changelogMax    the fence store's changelog topic's max.message.bytes; before Kafka Streams
     *                        creates it, the value it will get ({@code streams.topic.max.message.bytes},
     *                        else the broker's message.max.bytes); with a markers topic, the smaller of that
     *                        and the markers topic's, since a stored key may be published as a marker
     * @param rerouteMax      the repartition topic's max.message.bytes, found the same way as the changelog's
     */
    record Topics(int inputPartitions, int acceptedMax, int rejectedMax, int changelogMax, int rerouteMax) {
        /** The largest of the output limits: what the producer's max.request.size is raised to. */
        int largestOutput() {
            return Math.max(Math.max(acceptedMax, rejectedMax), Math.max(changelogMax, rerouteMax));
        }

        /**
         * The processor's bounds: each topic's limit capped by the producer's effective
         * max.request.size (and buffer.memory) in {@code streamsProperties}.
         *
         * @throws IllegalStateException naming the settings when the rejected topic could not take even a reference record
         */
        FenceEnforcerTopology.Limits limits(Properties streamsProperties) {
            int producerMax = producerMaxRecordBytes(streamsProperties);
            int rejected = Math.min(rejectedMax, producerMax);
            if (rejected < FenceEnforcerTopology.Limits.MIN_REJECTED_MAX_BYTES) {
                throw new IllegalStateException("the rejected topic takes records of at most " + rejected + " bytes (its "
                        + TopicConfig.MAX_MESSAGE_BYTES_CONFIG + " and the producer's " + ProducerConfig.MAX_REQUEST_SIZE_CONFIG
                        + "), fewer than the "
                        + FenceEnforcerTopology.Limits.MIN_REJECTED_MAX_BYTES
                        + " a reference record of a rejected record needs: raise them");
            }
            return new FenceEnforcerTopology.Limits(inputPartitions, Math.min(acceptedMax, producerMax), rejected,
                    Math.min(changelogMax, producerMax), Math.min(rerouteMax, producerMax));
        }
    }

    /**
     * The largest record the Streams producer sends: its max.request.size and buffer.memory as
     * Kafka Streams resolves them ({@code producer.} prefix first, then the plain name, then the
     * producer's defaults), the smaller of the two.
     */
    static int producerMaxRecordBytes(Properties streamsProperties) {
        Map<String, Object> producer = FenceEnforcerConfig.quietStreamsConfig(streamsProperties)
                .getProducerConfigs("fence-enforcer-limits");
        Object maxRequest = producer.get(ProducerConfig.MAX_REQUEST_SIZE_CONFIG);
        Object bufferMemory = producer.get(ProducerConfig.BUFFER_MEMORY_CONFIG);
        long max = maxRequest == null ? DEFAULT_MAX_REQUEST_SIZE : Long.parseLong(maxRequest.toString().trim());
        long buffer = bufferMemory == null ? DEFAULT_BUFFER_MEMORY : Long.parseLong(bufferMemory.toString().trim());
        return (int) Math.min(Integer.MAX_VALUE, Math.min(max, buffer));
    }

    private TopicCheck() {
    }

    /**
     * Checks (and, when allowed, creates) the input, accepted, rejected and markers topics and reads their limits.
     *
     * @throws IllegalStateException naming the topic and the fix when a check fails or Kafka does not answer in time
     */
    static Topics prepare(FenceEnforcerConfig config, Duration timeout) throws InterruptedException {
        try (Admin admin = Admin.create(adminProperties(config.streamsProperties()))) {
            String input = config.inputTopic();
            Map<String, TopicDescription> found = prepareInput(admin, config, timeout);
            int partitions = found.get(input).partitions().size();
            int inputMax = maxMessageBytes(admin, input, timeout).get(input);
            prepareOutputs(admin, config, found, partitions, inputMax, timeout);
            Map<String, Integer> maxBytes = maxMessageBytes(admin, input, timeout, config.acceptedTopic(),
                    config.rejectedTopic());
            String applicationId = config.getString(FenceEnforcerConfig.APPLICATION_ID);
            String changelog = FenceEnforcerTopology.changelogTopic(applicationId);
            int changelogMax = internalMaxMessageBytes(admin, config, changelog, timeout);
            requireChangelogConfig(admin, config, changelog, timeout);
            String reroute = FenceEnforcerTopology.rerouteTopic(applicationId);
            int rerouteMax = internalMaxMessageBytes(admin, config, reroute, timeout);
            if (config.partitionMismatch() == PartitionMismatch.REJECT) {
                RerouteDrainCheck.requireDrained(admin, applicationId, reroute, timeout);
            }
            int rejectedMax = maxBytes.get(config.rejectedTopic());
            int acceptedMax = maxBytes.get(config.acceptedTopic());
            if (compacted(admin, config.rejectedTopic(), timeout)) {
                throw new IllegalStateException(
                        "rejected topic '" + config.rejectedTopic() + "' is compacted (cleanup.policy=compact): it would drop "
                                + "rejected records and refuses records without a key; use cleanup.policy=delete");
            }
            if (config.markersTopic().isPresent()) {
                // A stored key may come back as a published marker: it must fit the markers topic too.
                changelogMax = Math.min(changelogMax,
                        prepareMarkers(admin, config, config.markersTopic().get(), partitions, timeout));
            }
            warnOfSmallOutputs(config, inputMax, acceptedMax, rejectedMax);
            return new Topics(partitions, acceptedMax, rejectedMax, changelogMax, rerouteMax);
        } catch (ExecutionException e) {
            throw new IllegalStateException("cannot check the enforcer's topics: " + e.getCause()
                    + (e.getCause() instanceof RetriableException
                            ? " (is Kafka running at bootstrap.servers=" + String.join(",", config.getList(
                                    FenceEnforcerConfig.BOOTSTRAP_SERVERS)) + ", and are the streams.* security settings "
                                    + "right?)"
                            : ""),
                    e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException(
                    "Kafka did not answer within " + timeout.toSeconds() + " s while checking the enforcer's topics");
        }
    }

    /**
     * The input, accepted and rejected topics that exist, by name, once the input topic does (created when missing and allowed).
     */
    private static Map<String, TopicDescription> prepareInput(Admin admin, FenceEnforcerConfig config, Duration timeout)
            throws ExecutionException, InterruptedException, TimeoutException {
        String input = config.inputTopic();
        Map<String, TopicDescription> found = describe(admin, List.of(input, config.acceptedTopic(), config.rejectedTopic()),
                timeout);
        if (!found.containsKey(input)) {
            requireCreate(config, input);
            create(admin, new NewTopic(input, Optional.of(config.getInt(FenceEnforcerConfig.TOPICS_CREATE_PARTITIONS)),
                    replication(config)), timeout);
            long deadline = System.nanoTime() + timeout.toNanos();
            do {
                // A topic created a moment ago may not be in every broker's metadata yet.
                Thread.sleep(100);
                found = describe(admin, List.of(input, config.acceptedTopic(), config.rejectedTopic()), timeout);
            } while (!found.containsKey(input) && System.nanoTime() - deadline < 0);
            if (!found.containsKey(input)) {
                throw new IllegalStateException(
                        "created input topic '" + input + "' but it did not appear within " + timeout.toSeconds() + " s");
            }
        }
        return found;
    }

    /** Creates a missing accepted or rejected topic (when allowed) and checks that each has at least the input's partitions. */
    private static void prepareOutputs(Admin admin, FenceEnforcerConfig config, Map<String, TopicDescription> found,
            int partitions, int inputMax,
            Duration timeout) throws ExecutionException, InterruptedException, TimeoutException {
        for (String output : List.of(config.acceptedTopic(), config.rejectedTopic())) {
            if (!found.containsKey(output)) {
                requireCreate(config, output);
                int max = output.equals(config.rejectedTopic()) ? inputMax + REJECTION_HEADROOM_BYTES : inputMax;
                create(admin, new NewTopic(output, Optional.of(partitions), replication(config))
                        .configs(Map.of(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, Integer.toString(max))), timeout);
            } else if (found.get(output).partitions().size() < partitions) {
                throw new IllegalStateException("topic '" + output + "' has " + found.get(output).partitions().size()
                        + " partitions, fewer than the input topic '" + config.inputTopic() + "' (" + partitions
                        + "): add partitions to it");
            }
        }
    }

    private static void warnOfSmallOutputs(FenceEnforcerConfig config, int inputMax, int acceptedMax, int rejectedMax) {
        String input = config.inputTopic();
        if (acceptedMax < inputMax) {
            LOG.warn(
                    "accepted topic '{}' takes records up to {} bytes, the input '{}' up to {}: larger valid records will be "
                            + "rejected TOO_LARGE",
                    config.acceptedTopic(), acceptedMax, input, inputMax);
        }
        if (rejectedMax < inputMax + REJECTION_HEADROOM_BYTES) {
            LOG.warn(
                    "rejected topic '{}' takes records up to {} bytes, the input '{}' up to {}: a rejected record near the "
                            + "input's limit plus its rejection headers would not fit, and its copy would leave out its value "
                            + "(or more). Set {}={} on '{}'.",
                    config.rejectedTopic(), rejectedMax, input, inputMax, TopicConfig.MAX_MESSAGE_BYTES_CONFIG,
                    inputMax + REJECTION_HEADROOM_BYTES,
                    config.rejectedTopic());
        }
    }

    /**
     * The markers topic exists (or is created with the input's partition count) and is not
     * compacted: a marker's value is null, which a compacted topic treats as a tombstone and
     * removes, so a sink replaying the topic would miss fences.
     *
     * @return the markers topic's max.message.bytes
     */
    private static int prepareMarkers(Admin admin, FenceEnforcerConfig config, String markers, int partitions, Duration timeout)
            throws ExecutionException, InterruptedException, TimeoutException {
        if (!describe(admin, List.of(markers), timeout).containsKey(markers)) {
            requireCreate(config, markers);
            create(admin, new NewTopic(markers, Optional.of(partitions), replication(config)), timeout);
            long deadline = System.nanoTime() + timeout.toNanos();
            while (!describe(admin, List.of(markers), timeout).containsKey(markers) && System.nanoTime() - deadline < 0) {
                Thread.sleep(100); // a topic created a moment ago may not be in every broker's metadata yet
            }
        }
        if (compacted(admin, markers, timeout)) {
            throw new IllegalStateException(
                    "markers topic '" + markers + "' is compacted (cleanup.policy=compact): markers have null values, "
                            + "which compaction removes as tombstones; use cleanup.policy=delete, or set "
                            + FenceEnforcerConfig.MARKERS_TOPIC
                            + " empty to publish no markers");
        }
        return maxMessageBytes(admin, markers, timeout).get(markers);
    }

    /**
     * An internal topic's max.message.bytes (the fence store's changelog, the repartition topic): read
     * from the topic when it exists (an operator may have changed it); before Kafka Streams creates it,
     * {@code streams.topic.max.message.bytes} (Streams' setting for its internal topics) or else the
     * broker's message.max.bytes, which a new topic inherits.
     */
    /**
     * Refuses a fence store changelog whose configs do not match the processing guarantee: under {@code at_least_once}, one
     * made before without those {@link FenceEnforcerTopology#changelogConfig} gives a new one (Kafka Streams creates
     * internal topics but never changes an existing one's configs); under {@code exactly_once_v2}, one set up for
     * {@code at_least_once} instances ({@code LogAppendTime}), which may still be running beside this one: instances of one
     * application.id must share one guarantee, as transactions fence only the instances that use them.
     */
    private static void requireChangelogConfig(Admin admin, FenceEnforcerConfig config, String changelog, Duration timeout)
            throws ExecutionException, InterruptedException, TimeoutException {
        if (!describe(admin, List.of(changelog), timeout).containsKey(changelog)) {
            return;
        }
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, changelog);
        Config found = admin.describeConfigs(List.of(resource)).all().get(timeout.toMillis(), TimeUnit.MILLISECONDS)
                .get(resource);
        String type = found.get(TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG).value();
        long lag = Long.parseLong(found.get(TopicConfig.MIN_COMPACTION_LAG_MS_CONFIG).value());
        String command = "kafka-configs.sh --bootstrap-server " + String.join(",",
                config.getList(FenceEnforcerConfig.BOOTSTRAP_SERVERS)) + " --alter --entity-type topics --entity-name "
                + changelog + " ";
        boolean atLeastOnce = !FenceEnforcerTopology.changelogConfig(config).isEmpty();
        if (atLeastOnce && (!"LogAppendTime".equals(type) || lag < FenceEnforcerTopology.CHANGELOG_COMPACTION_LAG_MS)) {
            throw new IllegalStateException("processing.guarantee=at_least_once needs the fence store's changelog '" + changelog
                    + "' to keep each record at least " + FenceEnforcerTopology.CHANGELOG_COMPACTION_LAG_MS + " ms from the "
                    + "cleaner (an instance that lost its task can write older fences after the new owner's, which writes "
                    + "its own again): it has message.timestamp.type=" + type + " and min.compaction.lag.ms=" + lag
                    + ", made before this setting or under exactly_once_v2. Every instance of application.id "
                    + config.getString(FenceEnforcerConfig.APPLICATION_ID) + " must use the same processing.guarantee: stop "
                    + "them all, then set them: " + command + "--add-config message.timestamp.type=LogAppendTime,"
                    + "min.compaction.lag.ms=" + FenceEnforcerTopology.CHANGELOG_COMPACTION_LAG_MS);
        }
        if (!atLeastOnce && "LogAppendTime".equals(type)) {
            throw new IllegalStateException("processing.guarantee=exactly_once_v2 on the fence store's changelog '" + changelog
                    + "', which was set up for at_least_once instances (message.timestamp.type=LogAppendTime): every instance "
                    + "of application.id " + config.getString(FenceEnforcerConfig.APPLICATION_ID) + " must use the same "
                    + "processing.guarantee (transactions fence only the instances that use them). If they all switch to "
                    + "exactly_once_v2, stop them all, then: " + command + "--delete-config message.timestamp.type,"
                    + "min.compaction.lag.ms");
        }
    }

    private static int internalMaxMessageBytes(Admin admin, FenceEnforcerConfig config, String topic, Duration timeout)
            throws ExecutionException, InterruptedException, TimeoutException {
        if (describe(admin, List.of(topic), timeout).containsKey(topic)) {
            return maxMessageBytes(admin, topic, timeout).get(topic);
        }
        Object internal = config.streamsProperties().get(StreamsConfig.topicPrefix(TopicConfig.MAX_MESSAGE_BYTES_CONFIG));
        if (internal != null) {
            return Integer.parseInt(internal.toString().trim());
        }
        return brokerMessageMaxBytes(admin, timeout);
    }

    private static void requireCreate(FenceEnforcerConfig config, String topic) {
        if (!config.getBoolean(FenceEnforcerConfig.TOPICS_CREATE_ENABLE)) {
            throw new IllegalStateException("topic '" + topic
                    + "' does not exist: create it (accepted and rejected with at least the input's partitions; "
                    + "markers with cleanup.policy=delete) "
                    + "or set " + FenceEnforcerConfig.TOPICS_CREATE_ENABLE + "=true");
        }
    }

    private static Optional<Short> replication(FenceEnforcerConfig config) {
        short factor = config.getShort(FenceEnforcerConfig.TOPICS_CREATE_REPLICATION_FACTOR);
        return factor < 0 ? Optional.empty() : Optional.of(factor);
    }
}
