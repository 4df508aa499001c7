package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.testing.KafkaBrokerExtension;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Needs a real broker: a stream thread that dies mid-task (here: its token verifier throws once, as a transaction's commit
 * throws when its coordinator's broker dies) is replaced by Kafka Streams only in a running client, whose task is then
 * closed dirty, its transaction aborted and its records decided again.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class StreamThreadReplacementIT {
    @RegisterExtension
    static final KafkaBrokerExtension kafka = new KafkaBrokerExtension();

    @ParameterizedTest
    @ValueSource(strings = {StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE})
    void aTransientFailureReplacesTheThreadAndEveryRecordIsStillDecidedOnce(String guarantee) throws Exception {
        String app = "replace-" + guarantee.replace('_', '-');
        AtomicInteger failuresLeft = new AtomicInteger(1);
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (Pipeline pipeline = new Pipeline(app, guarantee, failuresLeft, streams -> StreamThreadFailures.standard(meters,
                streams))) {
            pipeline.write(List.of(10L, 10L, 12L));

            List<ConsumerRecord<byte[], byte[]>> accepted = pipeline.awaitAccepted(3);

            assertThat(accepted).extracting(r -> new String(r.headers().lastHeader(FenceHeaders.TOKEN).value(),
                    StandardCharsets.UTF_8)).containsExactly("10", "10", "12");
            assertThat(failuresLeft).hasValue(0);
            assertThat(pipeline.streams.state()).isEqualTo(KafkaStreams.State.RUNNING);
            assertThat(meters.get(StreamThreadFailures.METER).tag("exception", "KafkaException").counter().count())
                    .isEqualTo(1.0);
        }
    }

    @Test
    void aFailureThatComesBackAtOnceStopsTheInstanceAfterTheAllowedReplacements() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (Pipeline pipeline = new Pipeline("replace-loop", StreamsConfig.EXACTLY_ONCE_V2, new AtomicInteger(100),
                streams -> new StreamThreadFailures(meters, 2, Duration.ofMinutes(10), 100,
                        StreamThreadFailures.commitTotal(streams), System::nanoTime))) {
            pipeline.write(List.of(20L));

            // The stopping thread ends by throwing: Awaitility would take that for a failure of the wait.
            await().dontCatchUncaughtExceptions().atMost(Duration.ofMinutes(2))
                    .until(() -> pipeline.streams.state() == KafkaStreams.State.ERROR);
            assertThat(meters.get(StreamThreadFailures.METER).counter().count()).isEqualTo(2.0);
        }
    }

    /** An enforcer topology in this JVM whose verifier throws while {@code failuresLeft} is positive, then verifies all. */
    private static final class Pipeline implements AutoCloseable {
        final String input;
        final String accepted;
        final KafkaStreams streams;
        final KafkaProducer<String, byte[]> producer;

        Pipeline(String app, String guarantee, AtomicInteger failuresLeft, Function<KafkaStreams, StreamThreadFailures> policy)
                throws Exception {
            input = app + "-in";
            accepted = app + "-accepted";
            kafka.admin().createTopics(List.of(new NewTopic(input, 1, (short) 1), new NewTopic(accepted, 1, (short) 1),
                    new NewTopic(app + "-rejected", 1, (short) 1))).all().get(1, TimeUnit.MINUTES);
            Map<String, String> settings = new HashMap<>(Map.of("bootstrap.servers", kafka.bootstrapServers(),
                    "application.id", app, "input.topic", input, "accepted.topic", accepted, "rejected.topic",
                    app + "-rejected", "markers.topic", "", "processing.guarantee", guarantee, "state.dir",
                    Files.createTempDirectory(app).toString(), "token.verification.enable", "false"));
            // A replaced thread's consumer is a new group member: a short session lets the group drop the old one soon.
            settings.putAll(Map.of("streams.commit.interval.ms", "100", "streams.session.timeout.ms", "6000",
                    "streams.heartbeat.interval.ms", "1000"));
            FenceEnforcerConfig config = new FenceEnforcerConfig(settings);
            TokenVerifier verifier = new TokenVerifier() {
                @Override
                public Verdict verify(byte[] key, long token, long leaseId) {
                    if (failuresLeft.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                        throw new KafkaException("injected: the transaction coordinator's broker went away");
                    }
                    return Verdict.verified("test");
                }

                @Override
                public void close() {
                }
            };
            streams = new KafkaStreams(FenceEnforcerTopology.build(
                    FenceEnforcerTopology.Settings.from(config, FenceEnforcerTopology.Limits.unbounded(1)).withVerifier(verifier),
                    new SimpleMeterRegistry()), config.streamsProperties());
            streams.setUncaughtExceptionHandler(policy.apply(streams));
            streams.start();
            Properties props = new Properties();
            props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
            producer = new KafkaProducer<>(props, new StringSerializer(), new ByteArraySerializer());
        }

        void write(List<Long> tokens) throws Exception {
            long seq = 1;
            for (long token : tokens) {
                ProducerRecord<String, byte[]> record = new ProducerRecord<>(input, "acct", new byte[]{1});
                record.headers().add(FenceHeaders.TOKEN, Long.toString(token).getBytes(StandardCharsets.UTF_8))
                        .add(FenceHeaders.SEQ, Long.toString(seq++).getBytes(StandardCharsets.UTF_8))
                        .add(FenceHeaders.LEASE, "7".getBytes(StandardCharsets.UTF_8));
                producer.send(record).get(30, TimeUnit.SECONDS);
            }
        }

        /** Waits for {@code count} committed copies on the accepted topic, then a little longer for any extra copy. */
        List<ConsumerRecord<byte[], byte[]>> awaitAccepted(int count) {
            Properties props = new Properties();
            props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
            props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, IsolationLevel.READ_COMMITTED.toString().toLowerCase());
            props.put(ConsumerConfig.GROUP_ID_CONFIG, accepted + "-reader");
            List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                    new ByteArrayDeserializer())) {
                consumer.subscribe(List.of(accepted));
                await().atMost(Duration.ofMinutes(2)).until(() -> {
                    consumer.poll(Duration.ofMillis(200)).forEach(records::add);
                    return records.size() >= count;
                });
                consumer.poll(Duration.ofSeconds(2)).forEach(records::add);
            }
            return records;
        }

        @Override
        public void close() {
            producer.close();
            streams.close(Duration.ofSeconds(30));
        }
    }
}
