package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.enforcer.TokenVerifier;
import dev.fencedwrites.etcd.EtcdClients;
import dev.fencedwrites.etcd.EtcdErrors;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.etcd.LockHistory;
import dev.fencedwrites.etcd.LockKeys;
import dev.fencedwrites.etcd.LockTenures;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.GetOption;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.utils.Bytes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Verifies fencing tokens against etcd's history: from the local index of lock holders
 * ({@link LockTenures}, fed by a watch on the lock prefix) when it holds the token's revision, else
 * with {@link LockHistory}: one range read at revision = token per (key, token, lease) not seen
 * before, read ahead when its record is polled ({@link #readAhead}, in transactions of reads) or at
 * the decision. Answers about the past never
 * change, so every verdict but "future" is kept in a bounded LRU cache. While etcd does not answer
 * (down, stopped, no quorum, credentials refused) the call waits and retries with exponential
 * backoff, logging every {@value #WAIT_LOG_SECONDS} s; it never lets a token through unverified.
 *
 * <p>Meters (docs/reference/metrics.md): {@code fence_enforcer_token_verifications_total{outcome}} (verified,
 * lock_not_held, future_token, compacted_rejected, compacted_accepted; cache hits included),
 * {@code fence_enforcer_token_verification_cache_hits_total}, {@code fence_enforcer_token_verification_etcd_reads_total},
 * {@code fence_enforcer_token_verification_etcd_errors_total}, the read latency
 * {@code fence_enforcer_token_verification_etcd_read_seconds}, the gauges
 * {@code fence_enforcer_token_verification_waiting} (stream threads waiting for etcd now) and
 * {@code fence_enforcer_token_verification_etcd_reads_in_flight}, and
 * {@code fence_enforcer_token_verification_read_ahead_total{event}}; for the index,
 * {@code fence_enforcer_token_verification_index_lookups_total{result}} and the gauges
 * {@code fence_enforcer_token_verification_index_periods} and {@code ..._index_revision{bound}}, and the counter
 * {@code ..._index_rebuilds_total}.
 */
public final class EtcdTokenVerifier implements TokenVerifier {
    private static final Logger LOG = LoggerFactory.getLogger(EtcdTokenVerifier.class);
    static final int WAIT_LOG_SECONDS = 10;
    /** How often a decision waiting for a read sent ahead looks whether the verifier was closed. */
    private static final long CLOSED_CHECK_MILLIS = 100;

    /** What to do with a token whose revision etcd has compacted away. */
    public enum CompactedPolicy {
        /** Reject it {@code UNVERIFIABLE_TOKEN}: nothing raises a fence unverified (the default). */
        REJECT,
        /**
         * Let it raise the fence, counted as {@code compacted_accepted}, when the lease holds the lock now in a tenure that
         * began at or before the token (one read at etcd's current revision); otherwise reject it {@code UNVERIFIABLE_TOKEN}.
         */
        ACCEPT
    }

    /**
     * How the verifier behaves.
     *
     * @param compacted    the policy for compacted revisions
     * @param backoff      the first wait after etcd did not answer, positive
     * @param backoffMax   the longest wait between attempts, at least {@code backoff}
     * @param cacheEntries the most verdicts kept, at least 0
     * @param readAhead    the most questions read ahead of their decision ({@link #readAhead}), answered or not yet, at
     *                     least 0; 0 turns reading ahead off
     * @param index        the most ended lock tenures the local index keeps ({@link LockTenures}), at least 0; 0 turns the
     *                     index off
     */
    public record Options(CompactedPolicy compacted, Duration backoff, Duration backoffMax, int cacheEntries, int readAhead,
            int index) {
        /** Options without reading ahead and without the index. */
        public Options(CompactedPolicy compacted, Duration backoff, Duration backoffMax, int cacheEntries) {
            this(compacted, backoff, backoffMax, cacheEntries, 0, 0);
        }

        /** Options without the index. */
        public Options(CompactedPolicy compacted, Duration backoff, Duration backoffMax, int cacheEntries, int readAhead) {
            this(compacted, backoff, backoffMax, cacheEntries, readAhead, 0);
        }
    }

    /**
     * A question, as the cache keeps it: a record key of up to {@value #KEPT_KEY_MAX_BYTES} bytes as it is, a longer one by
     * its SHA-256 digest ({@code digested}, so that no key can pass for another's digest), so that an entry holds a few
     * hundred bytes however long the key (review: kept whole, 10,000 verdicts for keys near the changelog's 1 MB limit
     * would hold tens of GB).
     */
    private record Asked(boolean digested, Bytes key, long token, long leaseId) {
        static Asked of(byte[] key, long token, long leaseId) {
            return key.length <= KEPT_KEY_MAX_BYTES
                    ? new Asked(false, Bytes.wrap(key.clone()), token, leaseId)
                    : new Asked(true, Bytes.wrap(sha256(key)), token, leaseId);
        }
    }

    /** Slots of the table of questions recently read ahead or decided: 2^20 fingerprints, 8 MiB. */
    static final int RECENT_SLOTS = 1 << 20;
    /** The longest record key a cached question keeps as it is. */
    static final int KEPT_KEY_MAX_BYTES = 128;
    /**
     * The longest record key read ahead: an answer waiting for its decision holds the lock's holder key, as long as the
     * record key's lock name, so this bounds the memory of {@link Options#readAhead()} answers (a few KB each at most).
     */
    static final int READ_AHEAD_KEY_MAX_BYTES = 1024;

    /** The longest lock name quoted in a verdict's detail (and so in the log and the cache). */
    static final int DETAIL_NAME_MAX_CHARS = 200;

    /** A verdict with the counter of its outcome. */
    private record Decided(Verdict verdict, Counter outcome) {
    }

    private final Client client;
    private final LockHistory history;
    /** The local index of lock holders; null when {@link Options#index()} is 0. */
    private final LockTenures tenures;
    private final Counter indexAnswered;
    private final Counter indexOutside;
    private final Options options;
    private final Map<Asked, Decided> cache;
    /**
     * Reads started ahead of their decision, oldest first, until a decision takes the answer or a newer read pushes an
     * answered one out; at most {@link Options#readAhead()} entries. Guarded by itself.
     */
    private final LinkedHashMap<Asked, CompletableFuture<LockHistory.Verdict>> ahead = new LinkedHashMap<>();
    private final Counter aheadSent;
    private final Counter aheadUsed;
    private final Counter aheadFull;
    private final Counter aheadDropped;
    private final Counter aheadResent;
    /** Fingerprints of questions read ahead or decided ({@link #recentlyAsked}); empty when reading ahead is off. */
    private final long[] recent;
    private final Duration requestTimeout;
    private final AtomicInteger inFlight = new AtomicInteger();
    private final Map<LockHistory.Outcome, Counter> outcomes = new EnumMap<>(LockHistory.Outcome.class);
    private final Counter compactedAccepted;
    private final Counter cacheHits;
    private final Counter reads;
    private final Counter errors;
    private final Timer readTime;
    private final AtomicInteger waiting = new AtomicInteger();
    private final Object closing = new Object();
    private volatile boolean closed;

    /**
     * @param settings how to reach etcd, and the lock prefix
     * @param options  policy, backoff and cache size
     * @param registry where the counters go
     * @throws IllegalArgumentException if a TLS file cannot be used
     */
    public EtcdTokenVerifier(EtcdSettings settings, Options options, MeterRegistry registry) {
        this.client = EtcdClients.connect(settings);
        this.history = new LockHistory(client.getKVClient(), settings.lockPrefix(), settings.requestTimeout());
        this.tenures = options.index() > 0
                ? new LockTenures(client.getKVClient(), client.getWatchClient(), settings.lockPrefix(), settings.requestTimeout(),
                        options.index())
                : null;
        if (tenures != null) {
            // At etcd's current revision: every acquisition from now on is answered locally; older tokens (a backlog from
            // before the start) are read. Replaying history costs etcd a range read per 1,000 revisions delivered.
            tenures.startAt(Long.MAX_VALUE);
        }
        this.options = options;
        int entries = options.cacheEntries();
        this.cache = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Asked, Decided> eldest) {
                return size() > entries;
            }
        };
        for (LockHistory.Outcome outcome : LockHistory.Outcome.values()) {
            String tag = switch (outcome) {
                case HELD -> "verified";
                case NOT_HELD -> "lock_not_held";
                case FUTURE -> "future_token";
                case COMPACTED -> "compacted_rejected";
            };
            outcomes.put(outcome, counter(registry, tag));
        }
        compactedAccepted = counter(registry, "compacted_accepted");
        cacheHits = Counter.builder("fence.enforcer.token.verification.cache.hits")
                .description("Token verifications answered from the cache").register(registry);
        reads = Counter.builder("fence.enforcer.token.verification.etcd.reads")
                .description("Range reads sent to etcd to verify tokens")
                .register(registry);
        errors = Counter.builder("fence.enforcer.token.verification.etcd.errors")
                .description("etcd reads that got no answer (unreachable, timed out, refused); each is retried")
                .register(registry);
        readTime = Timer.builder("fence.enforcer.token.verification.etcd.read")
                .description("Time from sending each etcd read (alone or in a transaction of reads) to its answer")
                .register(registry);
        Gauge.builder("fence.enforcer.token.verification.waiting", waiting, AtomicInteger::get)
                .description("Stream threads waiting for etcd to answer a verification now").register(registry);
        Gauge.builder("fence.enforcer.token.verification.etcd.reads.in.flight", inFlight, AtomicInteger::get)
                .description("etcd reads sent to verify tokens and not answered yet (read ahead or by a decision)")
                .register(registry);
        aheadSent = readAheadCounter(registry, "sent");
        aheadUsed = readAheadCounter(registry, "used");
        aheadFull = readAheadCounter(registry, "full");
        aheadDropped = readAheadCounter(registry, "dropped");
        aheadResent = readAheadCounter(registry, "resent");
        this.recent = new long[options.readAhead() > 0 ? RECENT_SLOTS : 0];
        indexAnswered = indexCounter(registry, "answered");
        indexOutside = indexCounter(registry, "outside");
        if (tenures != null) {
            indexGauges(registry, tenures);
        }
        this.requestTimeout = settings.requestTimeout();
    }

    private static void indexGauges(MeterRegistry registry, LockTenures tenures) {
        Gauge.builder("fence.enforcer.token.verification.index.periods", tenures, LockTenures::periods)
                .description("Lock tenures (a key's time as its lock's holder) the local index keeps, ended or not")
                .register(registry);
        Gauge.builder("fence.enforcer.token.verification.index.revision", tenures, LockTenures::from).tag("bound", "first")
                .description("The range of etcd revisions the local index of lock holders answers: first and last; 0 "
                        + "while it is being built")
                .register(registry);
        Gauge.builder("fence.enforcer.token.verification.index.revision", tenures, LockTenures::upTo).tag("bound", "last")
                .description("The range of etcd revisions the local index of lock holders answers: first and last; 0 "
                        + "while it is being built")
                .register(registry);
        FunctionCounter.builder("fence.enforcer.token.verification.index.rebuilds", tenures, LockTenures::rebuilds)
                .description("Times the local index of lock holders was built again at etcd's current revision: its "
                        + "watch's revision compacted away, etcd showing another history than the one indexed (a restore), or "
                        + "a watch that kept failing from one revision")
                .register(registry);
    }

    private static Counter indexCounter(MeterRegistry registry, String result) {
        return Counter.builder("fence.enforcer.token.verification.index.lookups").tag("result", result)
                .description("Token verifications looked up in the local index of lock holders, by result: answered "
                        + "without etcd, or outside what it answers (then read from etcd): a revision outside its range, a "
                        + "lock name over 256 bytes, two keys tying for the holder, a holder key kept by its digest")
                .register(registry);
    }

    private static Counter readAheadCounter(MeterRegistry registry, String event) {
        return Counter.builder("fence.enforcer.token.verification.read.ahead").tag("event", event)
                .description("Token verification reads ahead of the decision, by event: sent when a record was polled; "
                        + "used by its decision; full: not sent, token.verification.read.ahead.max reads being out; dropped: "
                        + "an answer no decision took, pushed out by a newer read; resent: sent again alone after etcd "
                        + "failed their transaction")
                .register(registry);
    }

    private static Counter counter(MeterRegistry registry, String outcome) {
        return Counter.builder("fence.enforcer.token.verifications")
                .description("Fencing tokens checked against etcd before raising a fence, by outcome")
                .tag("outcome", outcome).register(registry);
    }

    /**
     * One read of etcd's current revision, for the start-up log: the revision, or a description of
     * why etcd did not answer (naming the setting to check).
     */
    public String probe(EtcdSettings settings) {
        try {
            long revision = client.getKVClient().get(ByteSequence.from(history.prefix(), StandardCharsets.UTF_8),
                    GetOption.builder().isPrefix(true).withCountOnly(true).build())
                    .get(settings.requestTimeout().toMillis(), TimeUnit.MILLISECONDS).getHeader().getRevision();
            return "etcd answers at revision " + revision;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        } catch (Exception e) {
            return "etcd did not answer yet (records that raise a fence will wait for it): " + EtcdErrors.describe(e, settings);
        }
    }

    /**
     * The oldest live key under the lock prefix, from one linearizable range read (sorted by create revision, limit 1, keys
     * only): what {@link FenceExpiry} bounds the floor with.
     *
     * @throws ExecutionException   when etcd refuses the read
     * @throws TimeoutException     after {@code etcd.request.timeout.ms}
     * @throws InterruptedException when interrupted while waiting
     */
    public FenceExpiry.OldestLock oldestLiveLock() throws ExecutionException, TimeoutException, InterruptedException {
        var response = client.getKVClient().get(ByteSequence.from(history.prefix(), StandardCharsets.UTF_8),
                GetOption.builder().isPrefix(true).withSortField(GetOption.SortTarget.CREATE)
                        .withSortOrder(GetOption.SortOrder.ASCEND).withLimit(1).withKeysOnly(true).build())
                .get(requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
        long revision = response.getHeader().getRevision();
        if (response.getKvs().isEmpty()) {
            return new FenceExpiry.OldestLock(revision, null, revision + 1);
        }
        var oldest = response.getKvs().get(0);
        return new FenceExpiry.OldestLock(revision, oldest.getKey().toString(StandardCharsets.UTF_8), oldest.getCreateRevision());
    }

    @Override
    public Verdict verify(byte[] key, long token, long leaseId) {
        Asked asked = Asked.of(key, token, leaseId);
        Decided cached;
        synchronized (cache) {
            cached = cache.get(asked);
        }
        if (cached != null) {
            cacheHits.increment();
            cached.outcome().increment();
            return cached.verdict();
        }
        LockHistory.Verdict answer = fromIndex(key, token, leaseId);
        if (answer != null) {
            if (options.readAhead() > 0) {
                synchronized (ahead) {
                    ahead.remove(asked);
                }
            }
        } else {
            answer = takeReadAhead(asked);
        }
        if (answer == null) {
            answer = ask(key, abbreviated(new String(key, StandardCharsets.UTF_8)), token, leaseId);
        }
        rememberAsked(key, token, leaseId);
        // A verified token's detail is never shown (only a rejection's is), so it spares the lock name's encoding.
        String detail = answer.describe(answer.outcome() == LockHistory.Outcome.HELD
                ? "its lock"
                : abbreviated(LockKeys.name(history.prefix(), key)), token, leaseId);
        boolean accept = options.compacted() == CompactedPolicy.ACCEPT;
        Decided decided = switch (answer.outcome()) {
            case HELD -> new Decided(Verdict.verified(detail, answer.tenureStart()), outcomes.get(answer.outcome()));
            case NOT_HELD -> new Decided(new Verdict(RejectionReason.LOCK_NOT_HELD, detail), outcomes.get(answer.outcome()));
            case FUTURE -> new Decided(new Verdict(RejectionReason.FUTURE_TOKEN, detail), outcomes.get(answer.outcome()));
            case COMPACTED -> compacted(answer, detail, token, accept);
        };
        if (answer.outcome() != LockHistory.Outcome.FUTURE && !(answer.outcome() == LockHistory.Outcome.COMPACTED && accept)) {
            // etcd's answer about a past revision never changes; a future one will, and so will whether a lease holds a lock
            // now, which decides a compacted token under the accept policy.
            synchronized (cache) {
                cache.put(asked, decided);
            }
        }
        decided.outcome().increment();
        return decided.verdict();
    }

    /**
     * Starts the reads that will verify {@code questions}, in read-only transactions of up to
     * {@value LockHistory#BATCH_MAX_OPS} reads ({@link LockHistory#checkAll}), skipping a question whose verdict is cached,
     * whose read is already out, whose token or lease is not positive, whose key is longer than
     * {@value #READ_AHEAD_KEY_MAX_BYTES} bytes, or that finds {@link Options#readAhead()} reads outstanding. Never waits for
     * etcd; a read that fails is retried by the decision itself. A record may never need its answer (the decision rule may
     * reject it first): such an answer is pushed out by newer reads.
     */
    @Override
    public void readAhead(List<Question> questions) {
        int max = options.readAhead();
        if (max <= 0 || closed) {
            return;
        }
        List<LockHistory.Question> send = new ArrayList<>();
        List<CompletableFuture<LockHistory.Verdict>> pending = new ArrayList<>();
        for (Question question : questions) {
            // The index first: two volatile reads, where the fingerprint table (8 MiB) costs a cache miss per record (a
            // profile of writes under long leases put a quarter of the read ahead's time there).
            if (question.token() <= 0 || question.leaseId() <= 0 || question.key().length > READ_AHEAD_KEY_MAX_BYTES
                    || tenures != null && tenures.covers(question.key(), question.token())
                    || recentlyAsked(question.key(), question.token(), question.leaseId())) {
                continue;
            }
            Asked asked = Asked.of(question.key(), question.token(), question.leaseId());
            synchronized (cache) {
                if (cache.containsKey(asked)) {
                    continue;
                }
            }
            CompletableFuture<LockHistory.Verdict> read = new CompletableFuture<>();
            synchronized (ahead) {
                if (ahead.containsKey(asked)) {
                    continue;
                }
                if (ahead.size() >= max) {
                    Map.Entry<Asked, CompletableFuture<LockHistory.Verdict>> eldest = ahead.entrySet().iterator().next();
                    if (!eldest.getValue().isDone()) {
                        aheadFull.increment();
                        continue;
                    }
                    ahead.remove(eldest.getKey());
                    aheadDropped.increment();
                }
                ahead.put(asked, read);
            }
            send.add(new LockHistory.Question(question.key(), question.token(), question.leaseId()));
            pending.add(read);
        }
        if (!send.isEmpty()) {
            send(send, pending);
        }
    }

    /** Whether the index of lock holders answers {@code key} at {@code token} now ({@link LockTenures#covers}). */
    @Override
    public boolean answersLocally(byte[] key, long token) {
        return tenures != null && tenures.covers(key, token);
    }

    /**
     * The index's answer for (key, token, lease); {@code null} when the index is off, the token is outside its revisions or
     * the lock key would not fit a read.
     */
    private LockHistory.Verdict fromIndex(byte[] key, long token, long leaseId) {
        if (tenures == null || token <= 0) {
            return null; // every lock name the index answers for fits a read (LockTenures.NAME_MAX_BYTES)
        }
        LockHistory.Verdict verdict = tenures.answer(key, token, leaseId);
        (verdict == null ? indexOutside : indexAnswered).increment();
        return verdict;
    }

    /** Sends the reads of {@code send}, completing {@code pending} (one per question, in order) with their answers. */
    private void send(List<LockHistory.Question> send, List<CompletableFuture<LockHistory.Verdict>> pending) {
        aheadSent.increment(send.size());
        reads.increment(send.size());
        inFlight.addAndGet(send.size());
        long readStart = System.nanoTime();
        List<CompletableFuture<LockHistory.Verdict>> answers;
        try {
            // A compacted answer is not read again now: under the accept policy the decision asks whether the lease holds
            // the lock at its own time.
            answers = history.checkAll(send, false, resent -> {
                reads.increment(resent);
                aheadResent.increment(resent);
            });
        } catch (RuntimeException e) {
            inFlight.addAndGet(-send.size());
            errors.increment();
            pending.forEach(read -> read.completeExceptionally(e));
            return;
        }
        for (int i = 0; i < answers.size(); i++) {
            CompletableFuture<LockHistory.Verdict> read = pending.get(i);
            answers.get(i).whenComplete((verdict, error) -> {
                inFlight.decrementAndGet();
                if (error == null) {
                    readTime.record(System.nanoTime() - readStart, TimeUnit.NANOSECONDS);
                    read.complete(verdict);
                } else {
                    errors.increment();
                    read.completeExceptionally(error);
                }
            });
        }
    }

    /**
     * Whether (key, token, lease) was read ahead or decided recently, by a 64-bit fingerprint in a direct-mapped table of
     * {@value #RECENT_SLOTS} slots; records it if not. A write at a verified fence is decided against the fence store, never
     * by {@link #verify}, so without this every such write whose verdict left the cache would be read again. A false answer
     * either way costs a read or leaves one to the decision; it never changes a verdict.
     */
    private boolean recentlyAsked(byte[] key, long token, long leaseId) {
        long fingerprint = fingerprint(key, token, leaseId);
        int slot = (int) (fingerprint >>> 40) & (RECENT_SLOTS - 1);
        if (recent[slot] == fingerprint) {
            return true;
        }
        recent[slot] = fingerprint;
        return false;
    }

    private void rememberAsked(byte[] key, long token, long leaseId) {
        if (recent.length > 0) {
            long fingerprint = fingerprint(key, token, leaseId);
            recent[(int) (fingerprint >>> 40) & (RECENT_SLOTS - 1)] = fingerprint;
        }
    }

    /** FNV-1a over the key, then the token and the lease mixed in (SplitMix64's finalizer); never 0. */
    private static long fingerprint(byte[] key, long token, long leaseId) {
        long hash = 0xcbf29ce484222325L;
        for (byte b : key) {
            hash = (hash ^ (b & 0xff)) * 0x100000001b3L;
        }
        hash = mix(hash ^ mix(token) ^ Long.rotateLeft(mix(leaseId), 17));
        return hash == 0 ? 1 : hash;
    }

    private static long mix(long value) {
        long z = value + 0x9e3779b97f4a7c15L;
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    /**
     * The answer of a read sent ahead for {@code asked}, waiting for it if it is still out (at most the request timeout);
     * {@code null} when none was sent, it failed or did not come back in time, or its answer may be different now (a future
     * revision; a compacted one under the accept policy, which depends on the lock's holder now), so the decision reads
     * again.
     */
    private LockHistory.Verdict takeReadAhead(Asked asked) {
        CompletableFuture<LockHistory.Verdict> read;
        synchronized (ahead) {
            read = ahead.remove(asked);
        }
        if (read == null) {
            return null;
        }
        LockHistory.Verdict verdict = null;
        // At most one request timeout: a read not back by then (etcd stopped, say) is left, and the decision reads on its
        // own, with the retries, the waiting gauge and the logs of a decision that waits for etcd.
        long giveUp = System.nanoTime() + requestTimeout.toNanos();
        try {
            while (verdict == null) {
                if (closed) {
                    throw new IllegalStateException("the token verifier was closed while waiting for etcd to verify token "
                            + asked.token());
                }
                if (System.nanoTime() - giveUp > 0) {
                    return null;
                }
                try {
                    verdict = read.get(CLOSED_CHECK_MILLIS, TimeUnit.MILLISECONDS);
                } catch (TimeoutException e) {
                    // Still out: look at closed and the time again.
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for etcd to verify token " + asked.token(), e);
        } catch (ExecutionException e) {
            return null;
        }
        if (verdict.outcome() == LockHistory.Outcome.FUTURE
                || verdict.outcome() == LockHistory.Outcome.COMPACTED && options.compacted() == CompactedPolicy.ACCEPT) {
            return null;
        }
        aheadUsed.increment();
        return verdict;
    }

    /**
     * A compacted token: under {@code reject}, rejected {@code UNVERIFIABLE_TOKEN}; under {@code accept}, accepted only when the
     * lease holds the lock now in a tenure that began at or before the token (a key created after the token cannot have been
     * held at it), so a revision borrowed from another resource or lease raises nothing.
     */
    private Decided compacted(LockHistory.Verdict answer, String detail, long token, boolean accept) {
        if (!accept) {
            return new Decided(new Verdict(RejectionReason.UNVERIFIABLE_TOKEN,
                    detail + " (token.verification.compacted.policy=reject)"), outcomes.get(answer.outcome()));
        }
        if (answer.tenureStart() > 0 && answer.tenureStart() <= token) {
            return new Decided(Verdict.verified(detail + "; accepted by token.verification.compacted.policy=accept",
                    answer.tenureStart()), compactedAccepted);
        }
        return new Decided(new Verdict(RejectionReason.UNVERIFIABLE_TOKEN, detail
                + (answer.tenureStart() > token ? " (its lock key was created after the token)" : "")
                + "; token.verification.compacted.policy=accept takes a compacted token only from a lease that holds the lock "
                + "now, since at or before the token"), outcomes.get(answer.outcome()));
    }

    private static byte[] sha256(byte[] key) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(key);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
    }

    /** {@code text} cut to {@link #DETAIL_NAME_MAX_CHARS} characters, saying how long it was. */
    static String abbreviated(String text) {
        return text.length() <= DETAIL_NAME_MAX_CHARS
                ? text
                : text.substring(0, DETAIL_NAME_MAX_CHARS) + "... (" + text.length() + " chars)";
    }

    /** Reads etcd until it answers; waits with backoff in between. */
    private LockHistory.Verdict ask(byte[] key, String text, long token, long leaseId) {
        if (!history.fits(key, leaseId)) {
            return history.check(key, token, leaseId).join(); // answered without a read
        }
        long backoffMillis = options.backoff().toMillis();
        long started = System.nanoTime();
        long nextLog = 0;
        int attempts = 0;
        boolean counted = false;
        try {
            while (true) {
                if (closed) {
                    throw new IllegalStateException(
                            "the token verifier was closed while waiting for etcd to verify token " + token + " of key " + text);
                }
                attempts++;
                reads.increment();
                long readStart = System.nanoTime();
                try {
                    LockHistory.Verdict verdict = awaitRead(key, token, leaseId);
                    readTime.record(System.nanoTime() - readStart, TimeUnit.NANOSECONDS);
                    if (attempts > 1) {
                        LOG.info("etcd answered after {} attempts in {} s: token {} of key {}: {}", attempts,
                                TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started), token, text, verdict.outcome());
                    }
                    return verdict;
                } catch (ExecutionException e) {
                    errors.increment();
                    if (!counted) {
                        counted = true;
                        waiting.incrementAndGet();
                    }
                    long waited = System.nanoTime() - started;
                    if (waited >= nextLog) {
                        LOG.warn(
                                "cannot verify token {} of key {} yet ({} attempts, {} s): {}; this stream thread waits for "
                                        + "etcd and decides nothing unverified",
                                token, text, attempts, TimeUnit.NANOSECONDS.toSeconds(waited),
                                e.getCause() == null ? e : e.getCause().toString());
                        nextLog = waited + TimeUnit.SECONDS.toNanos(WAIT_LOG_SECONDS);
                    }
                    long jittered = (long) (backoffMillis * (0.8 + 0.4 * ThreadLocalRandom.current().nextDouble()));
                    synchronized (closing) {
                        if (!closed) {
                            closing.wait(Math.max(1, jittered));
                        }
                    }
                    backoffMillis = Math.min(options.backoffMax().toMillis(), backoffMillis * 2);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for etcd to verify token " + token + " of key " + text, e);
        } finally {
            if (counted) {
                waiting.decrementAndGet();
            }
        }
    }

    /** One read, counted in flight until it answers or fails. */
    private LockHistory.Verdict awaitRead(byte[] key, long token, long leaseId)
            throws InterruptedException, ExecutionException {
        inFlight.incrementAndGet();
        try {
            return history.check(key, token, leaseId, options.compacted() == CompactedPolicy.ACCEPT).get();
        } finally {
            inFlight.decrementAndGet();
        }
    }

    @Override
    public void close() {
        synchronized (closing) {
            closed = true;
            closing.notifyAll();
        }
        if (tenures != null) {
            tenures.close();
        }
        client.close();
    }

    @Override
    public String toString() {
        return "EtcdTokenVerifier{prefix=" + history.prefix() + ", " + options + "}";
    }
}
