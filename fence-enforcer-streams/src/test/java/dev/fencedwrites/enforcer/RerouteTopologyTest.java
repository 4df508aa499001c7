package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.enforcer.internal.PartitionRoute;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyDescription;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Re-routing of misrouted records through the repartition topic, with
 * {@link TopologyTestDriver}: it feeds input partition 0 of {@value #PARTITIONS}, so a key murmur2
 * puts elsewhere arrives misrouted, as from a client whose default partitioner is not murmur2
 * (librdkafka's CRC32), and the driver pipes the repartition topic back in.
 */
class RerouteTopologyTest extends TopologyFixture {
    private static final int PARTITIONS = 4;
    private static final String APP = "fence-enforcer-test";

    private void start(String guarantee, FenceEnforcerTopology.Limits limits) {
        start(topology(limits), APP, guarantee);
    }

    private Topology topology(FenceEnforcerTopology.Limits limits) {
        // The driver reads the repartition topic as partition 0, whatever partition owns the key.
        return FenceEnforcerTopology.build(FenceEnforcerTopology.Settings
                .of(INPUT, ACCEPTED, REJECTED, limits.withRerouteOwnerUnchecked()).withMarkers(MARKERS), meters);
    }

    private void start(String guarantee) {
        start(guarantee, FenceEnforcerTopology.Limits.unbounded(PARTITIONS));
    }

    @Test
    void readsTheInputAndTheRepartitionTopicInOneSubTopology() {
        TopologyDescription description = topology(FenceEnforcerTopology.Limits.unbounded(PARTITIONS)).describe();

        assertThat(description.subtopologies()).hasSize(1);
        List<String> sourceTopics = new ArrayList<>();
        for (TopologyDescription.Node node : description.subtopologies().iterator().next().nodes()) {
            if (node instanceof TopologyDescription.Source source) {
                sourceTopics.addAll(source.topicSet());
            }
        }
        assertThat(sourceTopics).containsExactlyInAnyOrder(INPUT, FenceEnforcerTopology.REROUTE + "-repartition");
    }

    @ParameterizedTest
    @ValueSource(strings = {StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE})
    void acceptsMisroutedWritesInTheirOrderAndCountsThemRerouted(String guarantee) {
        start(guarantee);
        String away = key(false, 0);

        for (int seq = 1; seq <= 5; seq++) {
            write(away, "v" + seq, 7, seq);
        }

        assertThat(values(accepted.readRecordsToList())).containsExactly("v1", "v2", "v3", "v4", "v5");
        assertThat(rejected.isEmpty()).isTrue();
        assertThat(counter("fence.enforcer.records.rerouted")).isEqualTo(5.0);
    }

    @Test
    void sendsRecordsOnTheirPartitionStraightToTheFenceProcessor() {
        start(StreamsConfig.EXACTLY_ONCE_V2);

        write(key(true, 0), "home", 7, 1);

        assertThat(values(accepted.readRecordsToList())).containsExactly("home");
        assertThat(counter("fence.enforcer.records.rerouted")).isZero();
    }

    @Test
    void forwardsAReroutedWriteWithItsHeadersByteForByte() {
        start(StreamsConfig.EXACTLY_ONCE_V2);
        // The writer's own header of the internal name is kept and not believed.
        RecordHeaders headers = headers(FenceHeaders.TOKEN, "7", FenceHeaders.SEQ, "1", PartitionRoute.ORIGIN_HEADER, "9:999",
                "app", "x");

        input.pipeInput(new TestRecord<>(utf8(key(false, 0)), utf8("v"), headers));

        List<TestRecord<byte[], byte[]>> out = accepted.readRecordsToList();
        assertThat(out).hasSize(1);
        assertThat(out.get(0).headers().toArray()).containsExactly(headers.toArray());
    }

    @ParameterizedTest
    @ValueSource(strings = {StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE})
    void rejectsAReroutedStaleWriteNamingItsInputOffset(String guarantee) {
        start(guarantee);
        String away = key(false, 0);
        write(key(true, 0), "home-1", 3, 1);
        write(key(true, 0), "home-2", 3, 2);
        write(away, "new", 9, 1);
        write(away, "stale", 5, 1); // input offset 3; its repartition offset is 1

        List<TestRecord<byte[], byte[]>> out = rejected.readRecordsToList();
        assertThat(out).hasSize(1);
        assertThat(header(out.get(0), FenceHeaders.REJECTED_REASON)).isEqualTo("STALE_TOKEN");
        assertThat(header(out.get(0), FenceHeaders.SOURCE_TOPIC)).isEqualTo(INPUT);
        assertThat(header(out.get(0), FenceHeaders.SOURCE_PARTITION)).isEqualTo("0");
        assertThat(header(out.get(0), FenceHeaders.SOURCE_OFFSET)).isEqualTo("3");
        assertThat(names(out.get(0))).doesNotContain(PartitionRoute.ORIGIN_HEADER);
    }

    @Test
    void reroutesAMisroutedMarkerThatRaisesTheFenceAndNamesItsInputOffset() {
        start(StreamsConfig.EXACTLY_ONCE_V2);
        String away = key(false, 0);
        write(key(true, 0), "home", 3, 1);
        write(away, "old holder", 4, 1);
        pipe(away, null, FenceHeaders.TOKEN, "8", FenceHeaders.SEQ, "0", FenceHeaders.OP, "FENCE"); // input offset 2

        write(away, "late", 4, 2);

        List<TestRecord<byte[], byte[]>> published = markers.readRecordsToList();
        assertThat(published).hasSize(1);
        assertThat(header(published.get(0), FenceHeaders.SOURCE_TOPIC)).isEqualTo(INPUT);
        assertThat(header(published.get(0), FenceHeaders.SOURCE_OFFSET)).isEqualTo("2");
        assertThat(names(published.get(0))).doesNotContain(PartitionRoute.ORIGIN_HEADER);
        assertThat(values(accepted.readRecordsToList())).containsExactly("home", "old holder");
        assertThat(header(rejected.readRecord(), FenceHeaders.REJECTED_REASON)).isEqualTo("STALE_TOKEN");
    }

    @Test
    void rejectsAMisroutedRecordTooLargeForTheRepartitionTopicAsTooLarge() {
        int internalMax = 64 * 1024;
        start(StreamsConfig.EXACTLY_ONCE_V2, new FenceEnforcerTopology.Limits(PARTITIONS, Integer.MAX_VALUE, Integer.MAX_VALUE,
                internalMax));
        String away = key(false, 0);

        write(away, "x".repeat(internalMax), 7, 1);
        write(away, "small", 7, 2);

        TestRecord<byte[], byte[]> refused = rejected.readRecord();
        assertThat(header(refused, FenceHeaders.REJECTED_REASON)).isEqualTo("TOO_LARGE");
        assertThat(header(refused, FenceHeaders.SOURCE_OFFSET)).isEqualTo("0");
        assertThat(values(accepted.readRecordsToList())).containsExactly("small");
        assertThat(counter("fence.enforcer.records.rerouted")).isEqualTo(1.0);
    }

    /** The n-th key (from customer-0 on) that murmur2 puts on partition 0, or elsewhere. */
    private static String key(boolean onPartitionZero, int n) {
        int found = 0;
        for (int i = 0;; i++) {
            String key = "customer-" + i;
            if ((PartitionRoute.owner(utf8(key), PARTITIONS) == 0) == onPartitionZero && found++ == n) {
                return key;
            }
        }
    }

    private double counter(String name) {
        return meters.get(name).counter().count();
    }

    private void write(String key, String value, long token, long seq) {
        pipe(key, value, FenceHeaders.TOKEN, Long.toString(token), FenceHeaders.SEQ, Long.toString(seq));
    }

    private void pipe(String key, String value, String... headerNamesAndValues) {
        input.pipeInput(new TestRecord<>(utf8(key), value == null ? null : utf8(value), headers(headerNamesAndValues)));
    }

    private static List<String> values(List<TestRecord<byte[], byte[]>> records) {
        List<String> values = new ArrayList<>();
        for (TestRecord<byte[], byte[]> record : records) {
            values.add(new String(record.value(), StandardCharsets.UTF_8));
        }
        return values;
    }

    private static List<String> names(TestRecord<byte[], byte[]> record) {
        List<String> names = new ArrayList<>();
        for (Header header : record.headers()) {
            names.add(header.key());
        }
        return names;
    }
}
