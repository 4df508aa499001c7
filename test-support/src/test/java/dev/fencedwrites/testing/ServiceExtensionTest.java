package dev.fencedwrites.testing;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ServiceExtensionTest {
    @Test
    void anExtensionUsedBeforeItStartedSaysHowToRegisterIt() {
        KafkaBrokerExtension kafka = new KafkaBrokerExtension();

        assertThatThrownBy(kafka::bootstrapServers).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("kafka is not running").hasMessageContaining("@RegisterExtension");
    }

    @Test
    void anEtcdClusterNeedsAMember() {
        assertThatThrownBy(() -> EtcdClusterExtension.withMembers(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at least 1 member");
    }

    @Test
    void aConnectorNamedTwiceIsRefused() {
        ConnectWorkerExtension.Builder builder = ConnectWorkerExtension.builder(new KafkaBrokerExtension(), Path.of("plugins"))
                .connector("sink", Map::of);

        assertThatThrownBy(() -> builder.connector("sink", Map::of)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("connector sink added twice");
    }
}
