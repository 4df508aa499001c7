package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.enforcer.ReferenceModel.Kind;
import dev.fencedwrites.enforcer.ReferenceModel.Outcome;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Random interleavings of writes from several lease holders (tokens, seqs, redeliveries, markers,
 * deletes, writes without seq, bad records) against {@link ReferenceModel}: for every generated
 * history, every input record's outcome and the order of the accepted topic equal the model's.
 */
class FenceEnforcerPropertyTest extends TopologyFixture {
    private static final int HISTORIES = 1_000;
    private static final long SEED = 20261129L;
    private static final String ID = "test.id";

    /** One generated input record and what the generator made wrong with it, if anything. */
    private record Event(int id, byte[] key, RejectionReason invalid, long token, Long seq, boolean marker, byte[] value,
            RecordHeaders headers) {
    }

    /**
     * With the fence store behind Kafka Streams' record cache (its default size) and without one: at {@code
     * statestore.cache.max.bytes=0} Kafka Streams builds every store without its caching layer.
     */
    @ParameterizedTest(name = "statestore.cache.max.bytes={0}")
    @ValueSource(strings = {"default", "0"})
    void enforcerMatchesReferenceModelOnGeneratedHistories(String cacheBytes) {
        start(FenceEnforcerTopology.build(FenceEnforcerTopology.Settings.of(INPUT, ACCEPTED, REJECTED,
                FenceEnforcerTopology.Limits.unbounded(1)), meters), "fence-property-test", null,
                cacheBytes.equals("default") ? Map.of() : Map.of(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, cacheBytes));
        Random random = new Random(SEED);
        int records = 0;
        for (int history = 0; history < HISTORIES; history++) {
            List<Event> events = generate(history, random);
            records += events.size();
            ReferenceModel model = new ReferenceModel();
            Map<Integer, Outcome> expected = new LinkedHashMap<>();
            List<Integer> expectedAccepted = new ArrayList<>();
            for (Event e : events) {
                Outcome outcome = model.apply(new String(e.key() == null ? new byte[0] : e.key(), StandardCharsets.UTF_8),
                        e.invalid(), e.token(), e.seq(), e.marker(), e.value() != null);
                expected.put(e.id(), outcome);
                if (outcome.kind() == Kind.ACCEPTED) {
                    expectedAccepted.add(e.id());
                }
                input.pipeInput(new TestRecord<>(e.key(), e.value(), e.headers()));
            }
            Map<Integer, Outcome> actual = new LinkedHashMap<>();
            List<Integer> actualAccepted = new ArrayList<>();
            for (TestRecord<byte[], byte[]> out : accepted.readRecordsToList()) {
                int id = id(out);
                actualAccepted.add(id);
                assertThat(actual.put(id, Outcome.accepted())).as("history %d: record %d output twice", history, id).isNull();
            }
            for (TestRecord<byte[], byte[]> out : rejected.readRecordsToList()) {
                RejectionReason reason = RejectionReason.valueOf(text(out, FenceHeaders.REJECTED_REASON));
                assertThat(actual.put(id(out), Outcome.rejected(reason)))
                        .as("history %d: record %d output twice", history, id(out)).isNull();
            }
            for (Map.Entry<Integer, Outcome> entry : expected.entrySet()) {
                int id = entry.getKey();
                if (entry.getValue().kind() == Kind.MARKER_ACCEPTED) {
                    assertThat(actual).as("history %d: winning marker %d must not be forwarded", history, id)
                            .doesNotContainKey(id);
                } else {
                    assertThat(actual.get(id)).as("history %d, record %d", history, id).isEqualTo(entry.getValue());
                }
            }
            assertThat(actualAccepted).as("history %d: accepted order", history).isEqualTo(expectedAccepted);
        }
        assertThat(records).isGreaterThan(HISTORIES * 10);
    }

    /** One key per history; 2-4 lease holders with increasing tokens whose writes interleave. */
    private static List<Event> generate(int history, Random random) {
        byte[] key = ("history-" + history).getBytes(StandardCharsets.UTF_8);
        int holders = 2 + random.nextInt(3);
        long[] tokens = new long[holders];
        long token = 1 + random.nextInt(5);
        for (int h = 0; h < holders; h++) {
            token += 1 + random.nextInt(4);
            tokens[h] = token;
        }
        int[] nextSeq = new int[holders];
        List<Event> events = new ArrayList<>();
        int count = 10 + random.nextInt(30);
        for (int i = 0; i < count; i++) {
            int id = history * 1_000 + i;
            int h = random.nextInt(holders);
            int kind = random.nextInt(100);
            if (kind < 8) {
                events.add(invalid(id, key, random));
                continue;
            }
            Long seq;
            boolean marker = false;
            byte[] value = ("v" + id).getBytes(StandardCharsets.UTF_8);
            if (kind < 16) {
                marker = true;
                seq = 0L;
                value = random.nextInt(10) == 0 ? value : null;
            } else if (kind < 24) {
                seq = (long) random.nextInt(nextSeq[h] + 1); // redelivery or out of order
            } else if (kind < 30) {
                seq = null; // a writer without seq
            } else {
                seq = (long) ++nextSeq[h];
            }
            if (!marker && kind % 10 == 0) {
                value = null; // a delete
            }
            events.add(valid(id, key, tokens[h], seq, marker, value));
        }
        return events;
    }

    private static Event valid(int id, byte[] key, long token, Long seq, boolean marker, byte[] value) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(ID, utf8(Integer.toString(id)));
        headers.add(FenceHeaders.TOKEN, utf8(Long.toString(token)));
        if (seq != null) {
            headers.add(FenceHeaders.SEQ, utf8(Long.toString(seq)));
        }
        if (marker) {
            headers.add(FenceHeaders.OP, utf8("FENCE"));
        }
        return new Event(id, key, null, token, seq, marker, value, headers);
    }

    private static Event invalid(int id, byte[] key, Random random) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(ID, utf8(Integer.toString(id)));
        byte[] value = ("bad" + id).getBytes(StandardCharsets.UTF_8);
        switch (random.nextInt(6)) {
            case 0 :
                headers.add(FenceHeaders.TOKEN, utf8("7"));
                return new Event(id, null, RejectionReason.MISSING_KEY, 0, null, false, value, headers);
            case 1 :
                headers.add(FenceHeaders.TOKEN, utf8("7"));
                return new Event(id, new byte[0], RejectionReason.MISSING_KEY, 0, null, false, value, headers);
            case 2 :
                return new Event(id, key, RejectionReason.MISSING_TOKEN, 0, null, false, value, headers);
            case 3 :
                headers.add(FenceHeaders.TOKEN, utf8(random.nextBoolean() ? "-3" : "x1"));
                return new Event(id, key, RejectionReason.MALFORMED_TOKEN, 0, null, false, value, headers);
            case 4 :
                headers.add(FenceHeaders.TOKEN, utf8("7"));
                headers.add(FenceHeaders.SEQ, utf8("one"));
                return new Event(id, key, RejectionReason.MALFORMED_SEQ, 0, null, false, value, headers);
            default :
                headers.add(FenceHeaders.TOKEN, utf8("7"));
                headers.add(FenceHeaders.OP, utf8("UPSERT"));
                return new Event(id, key, RejectionReason.UNKNOWN_OP, 0, null, false, value, headers);
        }
    }

    private static int id(TestRecord<byte[], byte[]> record) {
        return Integer.parseInt(text(record, ID));
    }

    private static String text(TestRecord<byte[], byte[]> record, String header) {
        return new String(record.headers().lastHeader(header).value(), StandardCharsets.UTF_8);
    }
}
