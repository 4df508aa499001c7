package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Properties;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;

/** The processor's size bounds: each topic's max.message.bytes capped by the Streams producer's max.request.size. */
class TopicLimitsTest {
    private static final TopicCheck.Topics TOPICS = new TopicCheck.Topics(3, 2_000_000, 3_000_000, 500_000, 200_000);

    @Test
    void producerDefaultMaxRequestSizeCapsEveryTopicLimit() {
        FenceEnforcerTopology.Limits limits = TOPICS.limits(streams());

        assertThat(limits.inputPartitions()).isEqualTo(3);
        assertThat(limits.acceptedMaxBytes()).isEqualTo(1_048_576);
        assertThat(limits.rejectedMaxBytes()).isEqualTo(1_048_576);
        assertThat(limits.storeMaxBytes()).isEqualTo(500_000);
        assertThat(limits.rerouteMaxBytes()).as("the repartition topic's own limit, not the changelog's").isEqualTo(200_000);
    }

    @Test
    void streamsMaxRequestSizePassThroughIsTheProducersLimit() {
        Properties props = streams();
        props.put("max.request.size", "2500000");

        FenceEnforcerTopology.Limits limits = TOPICS.limits(props);

        assertThat(limits.acceptedMaxBytes()).isEqualTo(2_000_000);
        assertThat(limits.rejectedMaxBytes()).isEqualTo(2_500_000);
    }

    @Test
    void producerPrefixedMaxRequestSizeWinsOverThePlainOne() {
        Properties props = streams();
        props.put("max.request.size", "2500000");
        props.put(StreamsConfig.producerPrefix("max.request.size"), "100000");

        assertThat(TOPICS.limits(props).acceptedMaxBytes()).isEqualTo(100_000);
    }

    @Test
    void producerBufferMemoryBelowMaxRequestSizeIsTheLimit() {
        Properties props = streams();
        props.put(StreamsConfig.producerPrefix("max.request.size"), "10000000");
        props.put(StreamsConfig.producerPrefix("buffer.memory"), "1500000");

        assertThat(TOPICS.limits(props).rejectedMaxBytes()).isEqualTo(1_500_000);
    }

    @Test
    void rejectedTopicTooSmallForAReferenceRecordStopsTheEnforcerNamingTheSettings() {
        TopicCheck.Topics tiny = new TopicCheck.Topics(1, 1_000_000, 1_000, 1_000_000, 1_000_000);

        assertThatThrownBy(() -> tiny.limits(streams())).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("max.message.bytes").hasMessageContaining("max.request.size");
    }

    @Test
    void largestOutputIsWhatTheProducersMaxRequestSizeIsRaisedTo() {
        assertThat(TOPICS.largestOutput()).isEqualTo(3_000_000);
    }

    private static Properties streams() {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "limits-test");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        return props;
    }
}
