package dev.fencedwrites.enforcer;

import dev.fencedwrites.contract.FenceHeaders;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * What every test of the enforcer's topology sets up: the topology under Kafka's {@link TopologyTestDriver} (no broker),
 * its input and output topics with byte-array keys and values, the state directory in a JUnit temporary directory and the
 * meters it counts into. The driver is closed after each test. Tests build their topology on the topic names below.
 */
abstract class TopologyFixture {
    static final String INPUT = "in";
    static final String ACCEPTED = "ok";
    static final String REJECTED = "dlq";
    static final String MARKERS = "marks";

    @TempDir
    Path stateDir;

    final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    TopologyTestDriver driver;
    TestInputTopic<byte[], byte[]> input;
    TestOutputTopic<byte[], byte[]> accepted;
    TestOutputTopic<byte[], byte[]> rejected;
    /** Empty for a topology built without a markers topic. */
    TestOutputTopic<byte[], byte[]> markers;

    /**
     * Starts the driver on {@code topology} as application {@code applicationId}.
     *
     * @param guarantee {@code processing.guarantee}, or {@code null} for Kafka Streams' default (at_least_once)
     */
    void start(Topology topology, String applicationId, String guarantee) {
        start(topology, applicationId, guarantee, Map.of());
    }

    /** {@link #start(Topology, String, String)} with Kafka Streams settings of the test's own. */
    void start(Topology topology, String applicationId, String guarantee, Map<String, Object> settings) {
        Properties props = new Properties();
        props.putAll(settings);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        if (guarantee != null) {
            props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        }
        driver = new TopologyTestDriver(topology, props);
        input = driver.createInputTopic(INPUT, new ByteArraySerializer(), new ByteArraySerializer());
        accepted = driver.createOutputTopic(ACCEPTED, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        rejected = driver.createOutputTopic(REJECTED, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        markers = driver.createOutputTopic(MARKERS, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    @AfterEach
    void closeDriver() {
        if (driver != null) {
            driver.close();
        }
    }

    /** {@code text} as UTF-8 bytes. */
    static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    /** Record headers from {@code name, value, name, value, ...}, each value as UTF-8. */
    static RecordHeaders headers(String... namesAndValues) {
        RecordHeaders headers = new RecordHeaders();
        for (int i = 0; i < namesAndValues.length; i += 2) {
            headers.add(namesAndValues[i], utf8(namesAndValues[i + 1]));
        }
        return headers;
    }

    /** The last header {@code name} of {@code record}, decoded as the contract says, or {@code null} when it has none. */
    static String header(TestRecord<byte[], byte[]> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? null : FenceHeaders.decode(header.value());
    }
}
