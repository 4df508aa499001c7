package dev.fencedwrites.cli;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceTopics;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The enforcer's decisions on the writes {@code fence produce} sent: read from where the accepted and rejected topics
 * ended before the writes (read_committed, no consumer group), matched by key, token and seq.
 */
final class Decisions implements AutoCloseable {
    /** One published write: its fence and where the input topic took it. */
    record Sent(long token, long seq, RecordMetadata where) {
    }

    private final KafkaConsumer<String, byte[]> consumer;
    private final String servers;

    /** A consumer of {@code servers} with the command's {@code client} settings (security, {@code -X}). */
    Decisions(String servers, Map<String, Object> client) {
        this.servers = servers;
        this.consumer = decisionConsumer(servers, client);
    }

    /**
     * Where the accepted and rejected topics end now: decisions on the writes about to be sent come after.
     *
     * @throws IllegalStateException when Kafka cannot be reached within 10 s or a topic does not exist
     */
    Map<TopicPartition, Long> endOffsets() {
        return endOffsets(consumer, servers);
    }

    /**
     * Reads the accepted and rejected topics from where they ended before the writes, until each
     * write (key, token, seq) shows up in one of them or {@code timeout} passes.
     *
     * @return 0 if all were accepted, 3 if any was rejected
     * @throws IllegalStateException if a decision did not arrive in time
     */
    int await(String key, Map<TopicPartition, Long> from, List<Sent> sent, Duration timeout, String wait, PrintWriter out) {
        consumer.assign(from.keySet());
        from.forEach(consumer::seek);
        long token = sent.get(0).token();
        List<Long> pending = new ArrayList<>(sent.stream().map(Sent::seq).toList());
        boolean anyRejected = false;
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!pending.isEmpty() && System.nanoTime() < deadline) {
            for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(250))) {
                if (!key.equals(record.key()) || !Long.toString(token).equals(header(record, FenceHeaders.TOKEN))) {
                    continue;
                }
                String seqText = header(record, FenceHeaders.SEQ);
                Long seq = seqText == null ? null : Long.valueOf(seqText);
                if (seq == null || !pending.remove(seq)) {
                    continue;
                }
                if (FenceTopics.ACCEPTED.equals(record.topic())) {
                    out.printf("accepted %s  token=%d.%d  -> %s-%d@%d%n", key, token, seq, record.topic(), record.partition(),
                            record.offset());
                } else {
                    anyRejected = true;
                    out.printf("rejected %s  token=%d.%d  %s  highest=%s  stage=%s%n", key, token, seq,
                            header(record, FenceHeaders.REJECTED_REASON),
                            header(record, FenceHeaders.REJECTED_HIGHEST), header(record, FenceHeaders.REJECTED_STAGE));
                }
                out.flush();
            }
        }
        if (!pending.isEmpty()) {
            throw new IllegalStateException("no decision from the enforcer within " + wait + " for seq " + pending
                    + " (is the enforcer running? ./fence up starts one; --wait 0s does not wait)");
        }
        return anyRejected ? 3 : 0;
    }

    @Override
    public void close() {
        consumer.close();
    }

    private static KafkaConsumer<String, byte[]> decisionConsumer(String servers, Map<String, Object> client) {
        Properties props = new Properties();
        props.putAll(client);
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
        props.putIfAbsent(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.putIfAbsent(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
        props.putIfAbsent(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        return new KafkaConsumer<>(props, new StringDeserializer(), new ByteArrayDeserializer());
    }

    /** Where the accepted and rejected topics end now: decisions on the writes about to be sent come after. */
    private static Map<TopicPartition, Long> endOffsets(KafkaConsumer<String, byte[]> consumer, String servers) {
        List<TopicPartition> partitions = new ArrayList<>();
        for (String topic : List.of(FenceTopics.ACCEPTED, FenceTopics.REJECTED)) {
            try {
                var infos = consumer.partitionsFor(topic, Duration.ofSeconds(10));
                if (infos == null || infos.isEmpty()) {
                    throw new IllegalStateException("topic " + topic + " does not exist at " + servers);
                }
                infos.forEach(p -> partitions.add(new TopicPartition(topic, p.partition())));
            } catch (TimeoutException e) {
                throw new IllegalStateException("cannot reach Kafka at " + servers + " within 10 s (is ./fence up running? does "
                        + "its listener need security.protocol and credentials in --command-config?)");
            }
        }
        return consumer.endOffsets(partitions);
    }

    private static String header(ConsumerRecord<?, ?> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null || header.value() == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }
}
