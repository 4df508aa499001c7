package dev.fencedwrites.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The index against a model that replays every change up to T and applies etcd's range read (the live key under
 * {@code <name>/} with the lowest create revision, with its lease at T), over random histories: Mutex keys, waiters,
 * keys put again under another lease, keys named for one lease and attached to another, several changes in one
 * revision, keys under the prefix that belong to no lock and keys deeper under a lock's name. Unit test of the rule;
 * LockHistoryPropertyIT checks the index against etcd itself.
 */
class LockTenuresModelTest {
    private static final String PREFIX = "t/locks/";
    private static final List<String> RESOURCES = List.of("a", "a/x", "b", "a b", "a+b", "zähler");

    /** A key's state in the model. */
    record Key(String key, long created, long leaseId) {
    }

    @Test
    void everyAnswerInRangeIsTheModelsAndNothingOutsideItIsAnswered() {
        for (long seed = 1; seed <= 300; seed++) {
            check(seed, seed % 3 == 0 ? 4 : 100_000);
        }
    }

    private static void check(long seed, int maxEnded) {
        Random random = new Random(seed);
        List<List<LockTenures.Change>> history = history(random, 60 + random.nextInt(120));
        int snapshotAt = random.nextInt(history.size());
        long snapshotRevision = snapshotAt + 1;
        LockTenures index = new LockTenures(null, null, PREFIX, null, maxEnded);
        index.reset(snapshotRevision, snapshot(history, snapshotRevision));
        // The rest in responses of whole revisions, of random sizes.
        List<LockTenures.Change> response = new ArrayList<>();
        for (int i = snapshotAt + 1; i < history.size(); i++) {
            response.addAll(history.get(i));
            if (random.nextInt(3) == 0 || i == history.size() - 1) {
                index.apply(response);
                response = new ArrayList<>();
            }
        }
        long upTo = index.upTo();
        long from = index.from();
        assertThat(from).as("seed %d", seed).isGreaterThanOrEqualTo(snapshotRevision).isLessThanOrEqualTo(upTo);
        if (maxEnded >= 100_000) {
            assertThat(from).as("seed %d: nothing dropped", seed).isEqualTo(snapshotRevision);
        }
        List<Long> leases = new ArrayList<>(List.of(1L, 2L, 3L, 4L, 5L, 0L, 99L));
        int answered = 0;
        for (long t = Math.max(1, snapshotRevision - 3); t <= upTo + 3; t++) {
            Map<String, Key> live = liveAt(history, t);
            for (String resource : RESOURCES) {
                for (long lease : leases) {
                    LockHistory.Verdict verdict = index.answer(resource.getBytes(StandardCharsets.UTF_8), t, lease);
                    String what = "seed " + seed + ": " + resource + " at " + t + " with lease " + lease + " (index " + from
                            + ".." + upTo + ")";
                    if (t < from || t > upTo) {
                        assertThat(verdict).as(what).isNull();
                        continue;
                    }
                    LockHistory.Verdict expected = expected(live, resource, lease, upTo);
                    if (expected == null) {
                        assertThat(verdict).as(what + ": a tie").isNull();
                        continue;
                    }
                    assertThat(verdict).as(what).isEqualTo(expected);
                    answered++;
                }
            }
        }
        assertThat(answered).as("seed %d", seed).isPositive();
        if (maxEnded < 100_000) {
            assertThat(index.periods()).as("seed %d: ended periods kept, and at most one open per lock", seed)
                    .isLessThanOrEqualTo(maxEnded + RESOURCES.size() * 3);
        }
    }

    /** etcd's range read at t: the live key under the name with the lowest create revision; null when two tie. */
    private static LockHistory.Verdict expected(Map<String, Key> live, String resource, long lease, long current) {
        String under = LockKeys.name(PREFIX, resource) + "/";
        Key oldest = null;
        boolean tie = false;
        for (Key key : live.values()) {
            if (!key.key().startsWith(under)) {
                continue;
            }
            if (oldest == null || key.created() < oldest.created()) {
                oldest = key;
                tie = false;
            } else if (key.created() == oldest.created()) {
                tie = true;
            }
        }
        if (tie || under.length() - 1 > LockTenures.NAME_MAX_BYTES
                || oldest != null && oldest.key().getBytes(StandardCharsets.UTF_8).length - under.getBytes(
                        StandardCharsets.UTF_8).length > LockTenures.SUFFIX_MAX_BYTES) {
            return null; // not answered: a tie, a lock name too long to index, a holder key known by its digest only
        }
        if (oldest == null) {
            return new LockHistory.Verdict(LockHistory.Outcome.NOT_HELD, null, 0, current, 0);
        }
        if (oldest.leaseId() == lease && oldest.key().equals(under + Long.toHexString(lease))) {
            return new LockHistory.Verdict(LockHistory.Outcome.HELD, null, 0, current, oldest.created());
        }
        return new LockHistory.Verdict(LockHistory.Outcome.NOT_HELD, oldest.key(), oldest.leaseId(), current, 0);
    }

    private static Map<String, Key> liveAt(List<List<LockTenures.Change>> history, long revision) {
        Map<String, Key> live = new LinkedHashMap<>();
        for (List<LockTenures.Change> changes : history) {
            for (LockTenures.Change change : changes) {
                if (change.revision() > revision) {
                    return live;
                }
                String key = new String(change.key().getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8);
                if (change.put()) {
                    live.put(key, new Key(key, change.createRevision(), change.leaseId()));
                } else {
                    live.remove(key);
                }
            }
        }
        return live;
    }

    private static List<LockTenures.Change> snapshot(List<List<LockTenures.Change>> history, long revision) {
        Map<String, LockTenures.Change> live = new HashMap<>();
        for (List<LockTenures.Change> changes : history) {
            for (LockTenures.Change change : changes) {
                if (change.revision() <= revision) {
                    if (change.put()) {
                        live.put(change.key(), change);
                    } else {
                        live.remove(change.key());
                    }
                }
            }
        }
        List<LockTenures.Change> sorted = new ArrayList<>(live.values());
        sorted.sort((x, y) -> x.key().compareTo(y.key()));
        return sorted;
    }

    /** One list of changes per revision, revision i + 1 at index i, as etcd's transactions make them. */
    private static List<List<LockTenures.Change>> history(Random random, int revisions) {
        List<List<LockTenures.Change>> history = new ArrayList<>();
        Map<String, LockTenures.Change> live = new HashMap<>();
        for (long revision = 1; revision <= revisions; revision++) {
            List<LockTenures.Change> changes = new ArrayList<>();
            int count = random.nextInt(6) == 0 ? 2 : 1;
            for (int c = 0; c < count; c++) {
                String resource = RESOURCES.get(random.nextInt(RESOURCES.size()));
                long lease = 1 + random.nextInt(5);
                int kind = random.nextInt(20);
                byte[] bytes = resource.getBytes(StandardCharsets.UTF_8);
                String key = switch (kind) {
                    case 0 -> PREFIX + LockKeys.encode(bytes); // under no lock
                    case 1 -> LockKeys.key(PREFIX, bytes, lease) + "/deeper";
                    case 2 -> "elsewhere/" + resource;
                    case 3 -> LockKeys.key(PREFIX, bytes, lease) + "-" + "y".repeat(LockTenures.SUFFIX_MAX_BYTES);
                    default -> LockKeys.key(PREFIX, bytes, lease);
                };
                String held = iso(key);
                if (changes.stream().anyMatch(change -> change.key().equals(held))) {
                    continue; // etcd refuses a transaction that changes a key twice
                }
                LockTenures.Change existing = live.get(held);
                LockTenures.Change change;
                if (existing != null && random.nextInt(3) > 0) {
                    change = new LockTenures.Change(false, held, 0, revision, 0);
                    live.remove(held);
                } else {
                    // A new key, or an existing one put again, perhaps under another lease (its create revision stays).
                    long attached = random.nextInt(8) == 0 ? 1 + random.nextInt(5) : lease;
                    change = new LockTenures.Change(true, held, existing == null ? revision : existing.createRevision(), revision,
                            attached);
                    live.put(held, change);
                }
                changes.add(change);
            }
            history.add(changes);
        }
        return history;
    }

    private static String iso(String key) {
        return new String(key.getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1);
    }
}
