package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.enforcer.internal.LenientTimestampExtractor;
import dev.fencedwrites.schemas.FenceHeaders;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Inputs that must be routed, never allowed to stop the enforcer: invalid timestamps and records too large for an output topic. */
class FenceEnforcerRobustnessTest {
    private static final int ACCEPTED_MAX = 1_000;
    private static final int REJECTED_MAX = 3_000;

    @TempDir
    Path stateDir;
    private TopologyTestDriver driver;
    private TestInputTopic<byte[], byte[]> input;
    private TestOutputTopic<byte[], byte[]> accepted;
    private TestOutputTopic<byte[], byte[]> rejected;

    @BeforeEach
    void start() {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "robustness-test");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        driver = new TopologyTestDriver(FenceEnforcerTopology.build("in", "ok", "dlq",
                new FenceEnforcerTopology.Limits(1, ACCEPTED_MAX, REJECTED_MAX), new SimpleMeterRegistry()), props);
        input = driver.createInputTopic("in", new ByteArraySerializer(), new ByteArraySerializer());
        accepted = driver.createOutputTopic("ok", new ByteArrayDeserializer(), new ByteArrayDeserializer());
        rejected = driver.createOutputTopic("dlq", new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    @AfterEach
    void stop() {
        driver.close();
    }

    /** TestRecord refuses negative timestamps, so the source's extractor is checked directly; the broker accepts such records from non-Java clients. */
    @Test
    void recordWithNegativeTimestampGetsThePartitionTimeOrTheClock() {
        LenientTimestampExtractor extractor = new LenientTimestampExtractor();
        ConsumerRecord<Object, Object> negative = new ConsumerRecord<>("in", 0, 0L, -1L, TimestampType.CREATE_TIME, 1, 1, "k", "v",
                new RecordHeaders(), Optional.empty());
        long before = System.currentTimeMillis();

        assertThat(extractor.extract(negative, 1_234L)).isEqualTo(1_234L);
        assertThat(extractor.extract(negative, -1L)).isGreaterThanOrEqualTo(before);
    }

    @Test
    void validRecordTooLargeForTheAcceptedTopicIsRejectedTooLargeAndDoesNotRaiseTheFence() {
        byte[] big = new byte[2_000];
        input.pipeInput(new TestRecord<>(utf8("k"), big, headers("9")));
        input.pipeInput(new TestRecord<>(utf8("k"), utf8("small"), headers("5")));

        TestRecord<byte[], byte[]> tooLarge = rejected.readRecord();
        assertThat(header(tooLarge, FenceHeaders.REJECTED_REASON)).isEqualTo("TOO_LARGE");
        assertThat(tooLarge.value()).isEqualTo(big);
        assertThat(accepted.readValuesToList()).extracting(v -> new String(v, StandardCharsets.UTF_8)).containsExactly("small");
    }

    @Test
    void rejectedCopyTooLargeForTheRejectedTopicOmitsItsValueAndSaysSo() {
        input.pipeInput(new TestRecord<>(utf8("k"), new byte[5_000], headers("not-a-token")));

        TestRecord<byte[], byte[]> copy = rejected.readRecord();
        assertThat(header(copy, FenceHeaders.REJECTED_REASON)).isEqualTo("MALFORMED_TOKEN");
        assertThat(header(copy, FenceHeaders.REJECTED_VALUE_OMITTED)).isEqualTo("true");
        assertThat(header(copy, FenceHeaders.SOURCE_OFFSET)).isEqualTo("0");
        assertThat(copy.value()).isNull();
    }

    private static RecordHeaders headers(String token) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, utf8(token));
        return headers;
    }

    private static String header(TestRecord<byte[], byte[]> record, String name) {
        return new String(record.headers().lastHeader(name).value(), StandardCharsets.UTF_8);
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
