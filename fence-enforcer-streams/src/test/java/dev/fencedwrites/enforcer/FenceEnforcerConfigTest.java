package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Loading the enforcer's configuration from a file and the environment. */
class FenceEnforcerConfigTest {
    @TempDir
    Path dir;

    @Test
    void environmentOverridesTheFileAndDoubleUnderscoreIsALiteralUnderscore() throws Exception {
        Path file = Files.writeString(dir.resolve("enforcer.properties"), "bootstrap.servers=file:9092\napplication.id=from-file\n");

        FenceEnforcerConfig config = FenceEnforcerConfig.load(file, Map.of(
                "FENCE_ENFORCER_APPLICATION_ID", "from-env",
                "FENCE_ENFORCER_STREAMS_RACK_AWARE_ASSIGNMENT_TRAFFIC__COST", "7",
                "FENCE_ENFORCER_STREAMS_SECURITY_PROTOCOL", "SSL",
                "UNRELATED", "x"));

        assertThat(config.streamsProperties())
                .containsEntry(StreamsConfig.APPLICATION_ID_CONFIG, "from-env")
                .containsEntry(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "file:9092")
                .containsEntry("rack.aware.assignment.traffic_cost", "7")
                .containsEntry("security.protocol", "SSL");
    }

    @Test
    void anOutputTopicEqualToTheInputIsRefused() {
        assertThatThrownBy(() -> FenceEnforcerConfig.load(null, Map.of("FENCE_ENFORCER_BOOTSTRAP_SERVERS", "k:9092",
                "FENCE_ENFORCER_REJECTED_TOPIC", "fenced-writes")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("three different topics");
    }

    @Test
    void invalidKafkaStreamsSettingIsRefusedAtLoad() {
        assertThatThrownBy(() -> FenceEnforcerConfig.load(null, Map.of("FENCE_ENFORCER_BOOTSTRAP_SERVERS", "k:9092",
                "FENCE_ENFORCER_STREAMS_NUM_STREAM_THREADS", "many")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("num.stream.threads");
    }

    @Test
    void missingBootstrapServersIsRefused() {
        assertThatThrownBy(() -> FenceEnforcerConfig.load(null, Map.of())).isInstanceOf(ConfigException.class).hasMessageContaining("bootstrap.servers");
    }
}
