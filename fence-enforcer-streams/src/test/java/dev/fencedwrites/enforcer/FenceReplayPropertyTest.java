package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.enforcer.ReferenceModel.Outcome;
import dev.fencedwrites.enforcer.TaskSimulation.Output;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;

/**
 * Random histories of several keys on one input partition, processed under at_least_once through
 * random evictions, commits and kill -9 crashes that lose the tail of each output partition's
 * unacknowledged records ({@link TaskSimulation}), against {@link ReferenceModel}: no write the model accepts is missing
 * from the accepted topic, none it rejects is ever on it, every rejected copy carries the model's
 * reason, the first copies of each key's accepts keep the model's order, and the fence ends where
 * the model's does. Duplicates are allowed.
 */
class FenceReplayPropertyTest {
    private static final int HISTORIES = 400;
    private static final long SEED = 20261201L;
    private static final int MAX_CRASHES = 6;

    @Test
    void atLeastOnceLosesNoAcceptedWriteAndAcceptsNoRejectedOneAcrossRandomCrashes() {
        Random random = new Random(SEED);
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        int crashes = 0;
        for (int history = 0; history < HISTORIES; history++) {
            crashes += runHistory(history, random, meters);
        }
        double replayedAccepts = meters.get("fence.enforcer.records.replayed").tag("outcome", "accepted").counter().count();
        assertThat(crashes).as("crashes simulated").isGreaterThan(HISTORIES);
        assertThat(replayedAccepts).as("accepted writes forwarded again by replays").isGreaterThan(HISTORIES);
    }

    private static int runHistory(int history, Random random, SimpleMeterRegistry meters) {
        TaskSimulation task = new TaskSimulation(StreamsConfig.AT_LEAST_ONCE, meters);
        ReferenceModel model = new ReferenceModel();
        Map<Integer, Outcome> expected = new LinkedHashMap<>();
        Map<Integer, String> keyOf = new HashMap<>();
        List<String> keys = new ArrayList<>();
        int keyCount = 2 + random.nextInt(4);
        for (int k = 0; k < keyCount; k++) {
            keys.add("h" + history + "-k" + k);
        }
        long[] token = new long[keyCount];
        long[] seq = new long[keyCount];
        int records = 60 + random.nextInt(200);
        for (int i = 0; i < records; i++) {
            int k = random.nextInt(keyCount);
            append(task, model, expected, keyOf, keys.get(k), k, token, seq, random);
        }
        int crashes = 0;
        while (task.processNext()) {
            int roll = random.nextInt(100);
            if (roll < 15) {
                task.evict(keys.get(random.nextInt(keyCount)));
            } else if (roll < 20) {
                task.commit();
            } else if (roll < 24 && crashes < MAX_CRASHES) {
                crashes++;
                task.crashKeepingPrefixes(random);
            }
        }
        task.commit();
        check(history, task, model, expected, keyOf, keys);
        return crashes;
    }

    /**
     * One record of key {@code k}: a new lease, the next write, a stale or repeated write, a marker, a write without seq, or a
     * bad record.
     */
    private static void append(TaskSimulation task, ReferenceModel model, Map<Integer, Outcome> expected,
            Map<Integer, String> keyOf, String key,
            int k, long[] token, long[] seq, Random random) {
        RecordHeaders headers = new RecordHeaders();
        int roll = random.nextInt(100);
        byte[] value = "v".getBytes(StandardCharsets.UTF_8);
        Outcome outcome;
        if (roll < 4) {
            headers.add(FenceHeaders.TOKEN, utf8("x"));
            outcome = model.apply(key, RejectionReason.MALFORMED_TOKEN, 0, null, false, true);
        } else if (roll < 14) {
            token[k] += 1 + random.nextInt(3);
            seq[k] = 0;
            stamp(headers, token[k], 0L, true);
            outcome = model.apply(key, null, token[k], 0L, true, false);
            value = null;
        } else if (roll < 24) {
            token[k] += 1 + random.nextInt(3);
            seq[k] = 1;
            stamp(headers, token[k], 1L, false);
            outcome = model.apply(key, null, token[k], 1L, false, true);
        } else if (roll < 36 && token[k] > 1) {
            long stale = 1 + random.nextInt((int) token[k] - 1);
            long staleSeq = 1 + random.nextInt(4);
            stamp(headers, stale, staleSeq, false);
            outcome = model.apply(key, null, stale, staleSeq, false, true);
        } else if (roll < 46 && seq[k] > 0) {
            long again = 1 + random.nextInt((int) seq[k]);
            stamp(headers, token[k], again, false);
            outcome = model.apply(key, null, token[k], again, false, true);
        } else if (roll < 50 && token[k] > 0) {
            stamp(headers, token[k], null, false);
            outcome = model.apply(key, null, token[k], null, false, true);
        } else {
            token[k] = Math.max(token[k], 1);
            seq[k]++;
            stamp(headers, token[k], seq[k], false);
            outcome = model.apply(key, null, token[k], seq[k], false, roll % 10 != 0);
            value = roll % 10 == 0 ? null : value;
        }
        int id = task.append(key, value, headers);
        expected.put(id, outcome);
        keyOf.put(id, key);
    }

    private static void check(int history, TaskSimulation task, ReferenceModel model, Map<Integer, Outcome> expected,
            Map<Integer, String> keyOf,
            List<String> keys) {
        Map<Integer, List<Output>> seen = new HashMap<>();
        Map<String, Set<Integer>> firstAccepted = new HashMap<>();
        for (Output output : task.delivered()) {
            seen.computeIfAbsent(output.id(), id -> new ArrayList<>()).add(output);
            if (output.accepted()) {
                firstAccepted.computeIfAbsent(keyOf.get(output.id()), key -> new LinkedHashSet<>()).add(output.id());
            }
        }
        Map<String, List<Integer>> expectedAccepted = new HashMap<>();
        for (Map.Entry<Integer, Outcome> entry : expected.entrySet()) {
            int id = entry.getKey();
            Outcome outcome = entry.getValue();
            List<Output> copies = seen.getOrDefault(id, List.of());
            switch (outcome.kind()) {
                case ACCEPTED -> {
                    assertThat(copies).as("history %d: accepted record %d", history, id).isNotEmpty().allMatch(Output::accepted);
                    expectedAccepted.computeIfAbsent(keyOf.get(id), key -> new ArrayList<>()).add(id);
                }
                case MARKER_ACCEPTED -> assertThat(copies).as("history %d: winning marker %d", history, id).isEmpty();
                default -> assertThat(copies).as("history %d: rejected record %d", history, id).isNotEmpty()
                        .allMatch(copy -> !copy.accepted() && copy.reason() == outcome.reason());
            }
        }
        for (String key : keys) {
            assertThat(List.copyOf(firstAccepted.getOrDefault(key, Set.of())))
                    .as("history %d: first copies of %s's accepts in order", history, key)
                    .isEqualTo(expectedAccepted.getOrDefault(key, List.of()));
            String fence = task.live(key) == null ? null : task.live(key).fence().toString();
            assertThat(fence).as("history %d: fence of %s", history, key).isEqualTo(model.fence(key));
        }
    }

    private static void stamp(RecordHeaders headers, long token, Long seq, boolean marker) {
        headers.add(FenceHeaders.TOKEN, utf8(Long.toString(token)));
        if (seq != null) {
            headers.add(FenceHeaders.SEQ, utf8(Long.toString(seq)));
        }
        if (marker) {
            headers.add(FenceHeaders.OP, utf8("FENCE"));
        }
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
