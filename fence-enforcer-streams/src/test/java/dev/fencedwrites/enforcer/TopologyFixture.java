package dev.fencedwrites.enforcer;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.util.Properties;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
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
        Properties props = new Properties();
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
}
