package dev.fencedwrites.producer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.etcd.LockHistory;
import dev.fencedwrites.etcd.LockHistory.Outcome;
import dev.fencedwrites.etcd.LockKeys;
import dev.fencedwrites.etcd.LockTenures;
import dev.fencedwrites.services.Service;
import dev.fencedwrites.testing.EtcdNodeExtension;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Needs real services: whether a lease held a lock at a past revision is etcd's MVCC history, so the
 * property (every real token verifies, no forged one does) is checked against a real etcd
 * after a random history of real acquisitions by producer-lib's clients and by a raw writer.
 *
 * <p>The history is random from a seed printed on stdout; {@code -Dlockhistory.seed=N} replays its
 * choices (etcd's revisions differ from run to run, the shape does not). An independent model of
 * who held each lock at each revision is rebuilt from a watch on the lock prefix (every lock key's
 * creation and deletion, with its lease), not from range reads, and every verdict of
 * {@link LockHistory} is compared with it. Compaction runs last, as it removes the history.
 */
@Timeout(value = 8, unit = TimeUnit.MINUTES)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class LockHistoryPropertyIT {
    private static final long SEED = Long.getLong("lockhistory.seed", System.nanoTime());
    private static final String PREFIX = "property/locks/";
    /** Includes names whose encodings must stay apart: a and a/x, a space and a plus. */
    private static final List<String> RESOURCES = List.of("account-1", "account-2", "a", "a/x", "a b", "a+b", "zähler");
    private static final Duration TTL = Duration.ofSeconds(30);
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final int STEPS = 48;
    private static final int RANDOM_PAIRS = 1500;

    /** A lock found held by its writer: the token is the revision at which its key was the oldest. */
    record Acquisition(String resource, long token, long leaseId, String how) {
    }

    /** A lock key that waited under another holder and expired without its writer ever finding it held. */
    record Waiter(String resource, long leaseId, long created) {
    }

    /**
     * A hostile lock key: named for lease {@code namedLease} but attached to {@code attachedLease}, put
     * while nobody held the lock, so it was the oldest key from {@code created} until it expired.
     */
    record Mislabelled(String resource, long namedLease, long attachedLease, long created) {
    }

    @RegisterExtension
    static final EtcdNodeExtension etcdNode = new EtcdNodeExtension();
    static Service etcd;
    /** Reads and watches etcd apart from the clients under test. */
    static Client observer;
    static LockHistory history;
    /** The local index of lock holders, started before the history; and one started halfway, from a snapshot of live keys. */
    static LockTenures fromStart;
    static LockTenures fromHalfway;
    static final Model model = new Model();
    static final List<Acquisition> real = new ArrayList<>();
    static final List<Waiter> neverHeld = new ArrayList<>();
    static final List<Mislabelled> mislabelled = new ArrayList<>();
    static final Random random = new Random(SEED);
    /** Per resource, the lock keys of raw writers whose 2 s leases nobody keeps alive and that have not been seen expire yet. */
    static final Map<String, List<ByteSequence>> expiring = new HashMap<>();

    @BeforeAll
    static void runRandomHistory() throws Exception {
        System.out.println(
                "LockHistoryPropertyIT seed " + SEED + " (replay the history's choices with -Dlockhistory.seed=" + SEED + ")");
        etcd = etcdNode.service();
        observer = Client.builder().endpoints(etcd.address()).build();
        history = new LockHistory(observer.getKVClient(), PREFIX, Duration.ofSeconds(10));
        long start = observer.getKVClient().get(bytes("property/start")).get(10, TimeUnit.SECONDS).getHeader().getRevision();
        Watch.Watcher watcher = observer.getWatchClient().watch(bytes(PREFIX),
                WatchOption.builder().isPrefix(true).withRevision(start + 1).build(), model::record);
        fromStart = new LockTenures(observer.getKVClient(), observer.getWatchClient(), PREFIX, Duration.ofSeconds(10), 100_000);
        fromStart.startAt(start);
        fromHalfway = new LockTenures(observer.getKVClient(), observer.getWatchClient(), PREFIX, Duration.ofSeconds(10), 100_000);
        List<FencingLeaseClient> clients = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                clients.add(new FencingLeaseClient(List.of(etcd.address()), PREFIX));
            }
            Map<String, FencingLease> held = new HashMap<>();
            for (int step = 0; step < STEPS; step++) {
                if (step == STEPS / 2) {
                    // A few revisions back, so that the snapshot holds live keys and the watch replays a little history.
                    fromHalfway.startAt(Math.max(start, model.lastRevision() - 3));
                }
                String resource = RESOURCES.get(random.nextInt(RESOURCES.size()));
                FencingLeaseClient client = clients.get(random.nextInt(clients.size()));
                awaitExpiries(resource);
                FencingLease holder = held.get(resource);
                int action = random.nextInt(10);
                if (action < 2) {
                    // Revisions that belong to no lock, so tokens are not consecutive.
                    observer.getKVClient().put(bytes("property/noise"), bytes("step " + step)).get(10, TimeUnit.SECONDS);
                } else if (holder == null && action < 6) {
                    FencingLease lease = client.acquire(resource, TTL, TIMEOUT);
                    real.add(new Acquisition(resource, lease.token(), lease.leaseId(), "uncontended"));
                    held.put(resource, lease);
                } else if (holder == null && action < 8) {
                    rawAcquireAndExpire(resource);
                } else if (holder == null && !real.isEmpty()) {
                    putMislabelledKey(resource, real.get(random.nextInt(real.size())).leaseId());
                } else if (holder == null) {
                    continue;
                } else if (action < 4) {
                    holder.close();
                    held.remove(resource);
                } else if (action < 8) {
                    held.put(resource, takeOver(resource, holder, client));
                } else {
                    rawAcquireAndExpire(resource); // a waiter behind the holder, expiring without ever holding
                }
            }
            // Whatever the seed, every kind of step happens at least once.
            String last = RESOURCES.get(0);
            awaitExpiries(last);
            if (held.get(last) == null) {
                held.put(last, clients.get(0).acquire(last, TTL, TIMEOUT));
                real.add(new Acquisition(last, held.get(last).token(), held.get(last).leaseId(), "uncontended"));
            }
            if (real.stream().noneMatch(a -> a.how().equals("contended"))) {
                held.put(last, takeOver(last, held.get(last), clients.get(1)));
            }
            if (neverHeld.isEmpty()) {
                rawAcquireAndExpire(last);
                awaitExpiries(last);
            }
            for (FencingLease lease : held.values()) {
                lease.close();
            }
            if (real.stream().noneMatch(a -> a.how().equals("raw, expired"))) {
                rawAcquireAndExpire(last);
                awaitExpiries(last);
            }
            if (mislabelled.isEmpty()) {
                putMislabelledKey(last, real.get(0).leaseId());
            }
            for (String resource : RESOURCES) {
                awaitExpiries(resource);
            }
            long end = observer.getKVClient().put(bytes(PREFIX + "~end"), bytes("")).get(10, TimeUnit.SECONDS).getHeader()
                    .getRevision();
            await("the watch reaching revision " + end).atMost(Duration.ofSeconds(60)).until(() -> model.lastRevision() >= end);
            await("the indexes reaching revision " + end).atMost(Duration.ofSeconds(60))
                    .until(() -> fromStart.upTo() >= end && fromHalfway.upTo() >= end);
        } finally {
            watcher.close();
            for (FencingLeaseClient client : clients) {
                client.close();
            }
        }
        System.out.println("LockHistoryPropertyIT seed " + SEED + ": " + real.size() + " acquisitions, " + neverHeld.size()
                + " waiters that never held, " + model.lives().size() + " lock keys; " + real);
    }

    @AfterAll
    static void stopEtcd() {
        for (LockTenures index : new LockTenures[]{fromStart, fromHalfway}) {
            if (index != null) {
                index.close();
            }
        }
        if (observer != null) {
            observer.close();
        }
    }

    /** The holder releases while another client waits, so the waiter's token comes from a contended acquisition. */
    private static FencingLease takeOver(String resource, FencingLease holder, FencingLeaseClient client) throws Exception {
        CompletableFuture<FencingLease> waiting = client.acquireAsync(resource, TTL);
        ByteSequence lockDir = bytes(LockKeys.name(PREFIX, resource) + "/");
        await("a second key under " + lockDir).atMost(TIMEOUT)
                .until(() -> observer.getKVClient().get(lockDir, GetOption.builder().isPrefix(true).withCountOnly(true).build())
                        .get(10, TimeUnit.SECONDS).getCount() >= 2);
        holder.close();
        FencingLease next = waiting.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        real.add(new Acquisition(resource, next.token(), next.leaseId(), "contended"));
        return next;
    }

    /**
     * A writer in another language: grants a 2 s lease that nobody keeps alive and, in one
     * transaction, puts its key under it and reads the oldest key under the lock. If its key is the
     * oldest, the transaction's revision is its token. The lease's expiry is awaited before the next
     * step on the same resource ({@link #awaitExpiries}), not here: steps on other resources overlap its TTL.
     */
    private static void rawAcquireAndExpire(String resource) throws Exception {
        long leaseId = observer.getLeaseClient().grant(2).get(10, TimeUnit.SECONDS).getID();
        ByteSequence key = bytes(LockKeys.key(PREFIX, resource.getBytes(StandardCharsets.UTF_8), leaseId));
        GetOption oldest = GetOption.builder().isPrefix(true).withSortField(GetOption.SortTarget.CREATE)
                .withSortOrder(GetOption.SortOrder.ASCEND).withLimit(1).build();
        TxnResponse response = observer.getKVClient().txn()
                .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
                .Then(Op.put(key, ByteSequence.EMPTY, PutOption.builder().withLeaseId(leaseId).build()),
                        Op.get(bytes(LockKeys.name(PREFIX, resource) + "/"), oldest))
                .commit().get(10, TimeUnit.SECONDS);
        assertThat(response.isSucceeded()).as("seed %d: a fresh lease's key is new", SEED).isTrue();
        KeyValue first = response.getGetResponses().get(0).getKvs().get(0);
        if (first.getKey().equals(key)) {
            real.add(new Acquisition(resource, response.getHeader().getRevision(), leaseId, "raw, expired"));
        } else {
            neverHeld.add(new Waiter(resource, leaseId, response.getHeader().getRevision()));
        }
        expiring.computeIfAbsent(resource, r -> new ArrayList<>()).add(key);
    }

    /**
     * Puts, under a fresh 2 s lease nobody keeps alive, the key {@code <lock>/<hex of namedLease>} on
     * a free lock (so it is the oldest); the lease expires before the next step on the same resource
     * ({@link #awaitExpiries}): neither the lease it names nor the lease it is attached to held the lock.
     */
    private static void putMislabelledKey(String resource, long namedLease) throws Exception {
        long attached = observer.getLeaseClient().grant(2).get(10, TimeUnit.SECONDS).getID();
        ByteSequence key = bytes(LockKeys.key(PREFIX, resource.getBytes(StandardCharsets.UTF_8), namedLease));
        long created = observer.getKVClient().put(key, ByteSequence.EMPTY, PutOption.builder().withLeaseId(attached).build())
                .get(10, TimeUnit.SECONDS).getHeader().getRevision();
        mislabelled.add(new Mislabelled(resource, namedLease, attached, created));
        expiring.computeIfAbsent(resource, r -> new ArrayList<>()).add(key);
    }

    /**
     * Waits until etcd has expired every lease a raw writer left on {@code resource}'s lock, so the
     * next step on it starts from the same lock state as if each step had waited for its own expiry;
     * steps on other resources run meanwhile.
     */
    private static void awaitExpiries(String resource) {
        for (ByteSequence key : expiring.getOrDefault(resource, List.of())) {
            await("the lease of " + key + " expiring").atMost(Duration.ofSeconds(60))
                    .until(() -> observer.getKVClient().get(key).get(10, TimeUnit.SECONDS).getCount() == 0);
        }
        expiring.remove(resource);
    }

    @Test
    @Order(1)
    void theHistoryHasContendedUncontendedAndExpiredAcquisitionsOverSeveralResources() {
        assertThat(real).as("seed %d", SEED).extracting(Acquisition::how).contains("uncontended", "contended", "raw, expired");
        assertThat(real.stream().map(Acquisition::resource).distinct().count()).as("seed %d", SEED).isGreaterThanOrEqualTo(3);
    }

    @Test
    @Order(2)
    void everyRealTokenVerifiesAndTheModelAgrees() throws Exception {
        for (Acquisition a : real) {
            assertThat(model.held(a.resource(), a.token(), a.leaseId())).as("seed %d: the model says %s held", SEED, a).isTrue();
            assertThat(check(a.resource(), a.token(), a.leaseId())).as("seed %d: %s", SEED, a).isEqualTo(Outcome.HELD);
        }
    }

    @Test
    @Order(2)
    void tokensAboveTheCurrentRevisionAreFromTheFuture() throws Exception {
        long current = observer.getKVClient().get(bytes("property/now")).get(10, TimeUnit.SECONDS).getHeader().getRevision();
        for (Acquisition a : real) {
            for (long token : new long[]{current + 1, current + 1 + random.nextInt(1_000_000), Long.MAX_VALUE}) {
                assertThat(check(a.resource(), token, a.leaseId())).as("seed %d: token %d with the lease of %s", SEED, token, a)
                        .isEqualTo(Outcome.FUTURE);
            }
        }
    }

    @Test
    @Order(2)
    void aLeaseIdPresentedAsTheTokenNeverVerifies() throws Exception {
        for (Acquisition a : real) {
            assertThat(check(a.resource(), a.leaseId(), a.leaseId())).as("seed %d: lease id as token, %s", SEED, a)
                    .isEqualTo(Outcome.FUTURE);
        }
    }

    @Test
    @Order(2)
    void aRealTokenPresentedForAnotherResourceWithItsLeaseIsNotHeld() throws Exception {
        for (Acquisition a : real) {
            for (String other : RESOURCES) {
                if (!other.equals(a.resource())) {
                    assertThat(check(other, a.token(), a.leaseId())).as("seed %d: %s presented for %s", SEED, a, other)
                            .isEqualTo(Outcome.NOT_HELD);
                }
            }
        }
    }

    @Test
    @Order(2)
    void aRealTokenWithAnotherAcquisitionsLeaseIsNotHeld() throws Exception {
        for (Acquisition a : real) {
            for (Acquisition b : real) {
                if (b.leaseId() != a.leaseId()) {
                    assertThat(check(a.resource(), a.token(), b.leaseId()))
                            .as("seed %d: the token of %s with the lease of %s", SEED, a, b)
                            .isEqualTo(Outcome.NOT_HELD);
                }
            }
        }
    }

    @Test
    @Order(2)
    void aRevisionBeforeTheLeasesLockKeyExistedIsNotHeld() throws Exception {
        for (Acquisition a : real) {
            long created = model.created(LockKeys.key(PREFIX, a.resource().getBytes(StandardCharsets.UTF_8), a.leaseId()));
            assertThat(created).as("seed %d: %s's key was seen created", SEED, a).isPositive().isLessThanOrEqualTo(a.token());
            assertThat(check(a.resource(), created - 1, a.leaseId()))
                    .as("seed %d: revision %d, before %s's key", SEED, created - 1, a)
                    .isEqualTo(Outcome.NOT_HELD);
        }
    }

    @Test
    @Order(2)
    void aLeaseWhoseKeyOnlyWaitedNeverVerifies() throws Exception {
        for (Waiter w : neverHeld) {
            assertThat(model.held(w.resource(), w.created(), w.leaseId())).as("seed %d: the model says %s waited", SEED, w)
                    .isFalse();
            assertThat(check(w.resource(), w.created(), w.leaseId())).as("seed %d: %s", SEED, w).isEqualTo(Outcome.NOT_HELD);
        }
    }

    @Test
    @Order(2)
    void aLockKeyWhoseNameAndLeaseDisagreeVerifiesNeitherLease() throws Exception {
        assertThat(mislabelled).as("seed %d: the history put mislabelled keys", SEED).isNotEmpty();
        for (Mislabelled m : mislabelled) {
            assertThat(model.held(m.resource(), m.created(), m.namedLease())).as("seed %d: model, %s", SEED, m).isFalse();
            assertThat(check(m.resource(), m.created(), m.namedLease())).as("seed %d: the lease the key names, %s", SEED, m)
                    .isEqualTo(Outcome.NOT_HELD);
            assertThat(check(m.resource(), m.created(), m.attachedLease()))
                    .as("seed %d: the lease the key is attached to, %s", SEED, m)
                    .isEqualTo(Outcome.NOT_HELD);
        }
    }

    @Test
    @Order(3)
    void randomTokenAndLeasePairsVerifyExactlyWhenTheModelSaysTheLeaseHeldTheLockAndAreFutureAboveTheRevision() throws Exception {
        List<Long> leases = new ArrayList<>(real.stream().map(Acquisition::leaseId).toList());
        neverHeld.forEach(w -> leases.add(w.leaseId()));
        mislabelled.forEach(m -> leases.add(m.attachedLease()));
        leases.add(random.nextLong() & Long.MAX_VALUE);
        long last = model.lastRevision();
        long current = observer.getKVClient().get(bytes("property/now")).get(10, TimeUnit.SECONDS).getHeader().getRevision();
        int held = 0;
        int indexedPairs = 0;
        List<LockHistory.Question> asked = new ArrayList<>();
        List<Outcome> expectedOutcomes = new ArrayList<>();
        for (int i = 0; i < RANDOM_PAIRS; i++) {
            String resource;
            long token;
            long lease;
            if (random.nextBoolean()) {
                // Near a real acquisition, so that a good share of the pairs are held.
                Acquisition a = real.get(random.nextInt(real.size()));
                resource = random.nextInt(4) == 0 ? RESOURCES.get(random.nextInt(RESOURCES.size())) : a.resource();
                token = Math.max(1, a.token() + random.nextInt(21) - 10);
                lease = random.nextInt(4) == 0 ? leases.get(random.nextInt(leases.size())) : a.leaseId();
            } else {
                resource = RESOURCES.get(random.nextInt(RESOURCES.size()));
                token = 1 + (long) random.nextInt((int) last);
                lease = leases.get(random.nextInt(leases.size()));
            }
            Outcome expected = token > current
                    ? Outcome.FUTURE
                    : model.held(resource, token, lease) ? Outcome.HELD : Outcome.NOT_HELD;
            held += expected == Outcome.HELD ? 1 : 0;
            assertThat(check(resource, token, lease))
                    .as("seed %d: pair %d, %s at revision %d with lease %d", SEED, i, resource, token, lease)
                    .isEqualTo(expected);
            indexedPairs += compareIndexes(resource, token, lease);
            asked.add(new LockHistory.Question(resource.getBytes(StandardCharsets.UTF_8), token, lease));
            expectedOutcomes.add(expected);
        }
        assertThat(checkAll(asked)).as("seed %d: the same pairs in transactions of random sizes (a future revision fails "
                + "its whole transaction, whose reads are then sent one by one)", SEED).isEqualTo(expectedOutcomes);
        assertThat(held).as("seed %d: pairs the model says were held", SEED).isBetween(RANDOM_PAIRS / 20,
                RANDOM_PAIRS - RANDOM_PAIRS / 20);
        assertThat(indexedPairs).as("seed %d: pairs both indexes answered", SEED).isGreaterThan(RANDOM_PAIRS / 4);
    }

    @Test
    @Order(3)
    void theIndexesAnswerEveryRealAcquisitionTheyCoverAsEtcdDoes() throws Exception {
        assertThat(fromStart.from()).as("seed %d: the first index starts at the history's start", SEED).isPositive();
        assertThat(fromHalfway.from()).as("seed %d: the second starts halfway", SEED).isGreaterThan(fromStart.from());
        int covered = 0;
        for (Acquisition a : real) {
            covered += compareIndexes(a.resource(), a.token(), a.leaseId());
            assertThat(fromStart.answer(a.resource().getBytes(StandardCharsets.UTF_8), a.token(), a.leaseId()).outcome())
                    .as("seed %d: %s", SEED, a).isEqualTo(Outcome.HELD);
        }
        for (Mislabelled m : mislabelled) {
            compareIndexes(m.resource(), m.created(), m.namedLease());
            compareIndexes(m.resource(), m.created(), m.attachedLease());
        }
        for (Waiter w : neverHeld) {
            compareIndexes(w.resource(), w.created(), w.leaseId());
        }
        assertThat(covered).as("seed %d: acquisitions both indexes cover", SEED).isPositive();
    }

    /**
     * Compares each index's answer with etcd's (the range read at the token): outcome, holder, holder lease and tenure
     * start. An index must answer every token in its range (this history has no two keys created in one revision).
     *
     * @return 1 when both indexes answered, else 0
     */
    private static int compareIndexes(String resource, long token, long lease) throws Exception {
        byte[] key = resource.getBytes(StandardCharsets.UTF_8);
        LockHistory.Verdict etcd = history.check(key, token, lease).get(20, TimeUnit.SECONDS);
        int answered = 0;
        for (LockTenures index : new LockTenures[]{fromStart, fromHalfway}) {
            LockHistory.Verdict local = index.answer(key, token, lease);
            String what = String.format("seed %d: %s at revision %d with lease %d, index %d..%d", SEED, resource, token, lease,
                    index.from(), index.upTo());
            if (token < index.from() || token > index.upTo()) {
                assertThat(local).as(what).isNull();
                continue;
            }
            assertThat(local).as(what).isNotNull();
            assertThat(new LockHistory.Verdict(local.outcome(), local.holder(), local.holderLease(), 0, local.tenureStart()))
                    .as(what).isEqualTo(new LockHistory.Verdict(etcd.outcome(), etcd.holder(), etcd.holderLease(), 0,
                            etcd.tenureStart()));
            answered++;
        }
        return answered == 2 ? 1 : 0;
    }

    @Test
    @Order(4)
    void tokensBelowTheCompactedRevisionAreCompactedAndLaterOnesStillVerify() throws Exception {
        List<Long> tokens = real.stream().map(Acquisition::token).sorted().toList();
        long compactAt = tokens.get(tokens.size() / 2);
        observer.getKVClient().compact(compactAt).get(10, TimeUnit.SECONDS);
        for (Acquisition a : real) {
            assertThat(check(a.resource(), a.token(), a.leaseId())).as("seed %d: %s after compaction at %d", SEED, a, compactAt)
                    .isEqualTo(a.token() < compactAt ? Outcome.COMPACTED : Outcome.HELD);
        }
        assertThat(checkAll(real.stream()
                .map(a -> new LockHistory.Question(a.resource().getBytes(StandardCharsets.UTF_8), a.token(), a.leaseId()))
                .toList())).as("seed %d: in transactions, after compaction at %d", SEED, compactAt)
                .isEqualTo(real.stream().map(a -> a.token() < compactAt ? Outcome.COMPACTED : Outcome.HELD).toList());
        // An index asked to start below the compacted revision starts at etcd's current one instead.
        try (LockTenures late = new LockTenures(observer.getKVClient(), observer.getWatchClient(), PREFIX, Duration.ofSeconds(10),
                100)) {
            late.startAt(1);
            await("an index started below the compaction built").atMost(Duration.ofSeconds(30)).until(() -> late.from() > 0);
            assertThat(late.from()).as("seed %d: compacted at %d", SEED, compactAt).isGreaterThanOrEqualTo(compactAt);
            for (Acquisition a : real) {
                assertThat(late.answer(a.resource().getBytes(StandardCharsets.UTF_8), a.token(), a.leaseId()))
                        .as("seed %d: %s is below the late index", SEED, a).isNull();
            }
        }
    }

    /** {@link LockHistory#checkAll} over {@code questions} in consecutive calls of random sizes, 1 to 300; the outcomes. */
    private static List<Outcome> checkAll(List<LockHistory.Question> questions) throws Exception {
        List<CompletableFuture<LockHistory.Verdict>> answers = new ArrayList<>();
        for (int from = 0; from < questions.size();) {
            int to = Math.min(questions.size(), from + 1 + random.nextInt(300));
            answers.addAll(history.checkAll(questions.subList(from, to), false, resent -> {
            }));
            from = to;
        }
        List<Outcome> outcomes = new ArrayList<>();
        for (CompletableFuture<LockHistory.Verdict> answer : answers) {
            outcomes.add(answer.get(20, TimeUnit.SECONDS).outcome());
        }
        return outcomes;
    }

    private static Outcome check(String resource, long token, long leaseId) throws Exception {
        return history.check(resource.getBytes(StandardCharsets.UTF_8), token, leaseId).get(20, TimeUnit.SECONDS).outcome();
    }

    private static ByteSequence bytes(String text) {
        return ByteSequence.from(text, StandardCharsets.UTF_8);
    }

    /**
     * Who held each lock at each revision, replayed from the watch: every lock key's life (create
     * revision to delete revision, with its lease). The holder of a resource's lock at revision t is
     * the live key under {@code <prefix><encoded resource>/} with the lowest create revision.
     */
    static final class Model {
        /** A lock key's life; {@code deleted} is {@link Long#MAX_VALUE} while it lives. */
        record Life(String key, long leaseId, long created, long deleted) {
        }

        private final Map<String, Life> lives = new HashMap<>();
        private final List<Life> ended = new ArrayList<>();
        private long lastRevision;

        synchronized void record(WatchResponse response) {
            for (WatchEvent event : response.getEvents()) {
                KeyValue kv = event.getKeyValue();
                String key = kv.getKey().toString(StandardCharsets.UTF_8);
                if (event.getEventType() == WatchEvent.EventType.PUT) {
                    lives.putIfAbsent(key, new Life(key, kv.getLease(), kv.getCreateRevision(), Long.MAX_VALUE));
                } else if (event.getEventType() == WatchEvent.EventType.DELETE) {
                    Life life = lives.remove(key);
                    if (life != null) {
                        ended.add(new Life(key, life.leaseId(), life.created(), kv.getModRevision()));
                    }
                }
                lastRevision = Math.max(lastRevision, kv.getModRevision());
            }
        }

        synchronized long lastRevision() {
            return lastRevision;
        }

        synchronized List<Life> lives() {
            List<Life> all = new ArrayList<>(ended);
            all.addAll(lives.values());
            return all;
        }

        long created(String key) {
            return lives().stream().filter(l -> l.key().equals(key)).mapToLong(Life::created).min().orElse(0);
        }

        boolean held(String resource, long revision, long leaseId) {
            String under = LockKeys.name(PREFIX, resource) + "/";
            Life holder = null;
            for (Life life : lives()) {
                if (life.key().startsWith(under) && life.created() <= revision && revision < life.deleted()
                        && (holder == null || life.created() < holder.created())) {
                    holder = life;
                }
            }
            return holder != null && holder.leaseId() == leaseId && holder.key().equals(under + Long.toHexString(leaseId));
        }
    }
}
