package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.enforcer.TokenVerifier;
import dev.fencedwrites.etcd.EtcdClients;
import dev.fencedwrites.etcd.EtcdErrors;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.etcd.LockHistory;
import dev.fencedwrites.etcd.LockKeys;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.GetOption;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.EnumMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Verifies fencing tokens against etcd's history with {@link LockHistory}: one range read at
 * revision = token per (key, token, lease) not seen before. Answers about the past never change, so
 * every verdict but "future" is kept in a bounded LRU cache. While etcd does not answer (down,
 * stopped, no quorum, credentials refused) the call waits and retries with exponential backoff,
 * logging every {@value #WAIT_LOG_SECONDS} s; it never lets a token through unverified.
 *
 * <p>Counters: {@code fence_enforcer_token_verifications_total{outcome}} (verified, lock_not_held,
 * future_token, compacted_rejected, compacted_accepted; cache hits included),
 * {@code fence_enforcer_token_verification_cache_hits_total}, {@code fence_enforcer_token_verification_etcd_reads_total},
 * {@code fence_enforcer_token_verification_etcd_errors_total}, the read latency
 * {@code fence_enforcer_token_verification_etcd_read_seconds}, and the gauge
 * {@code fence_enforcer_token_verification_waiting} (stream threads waiting for etcd now).
 */
public final class EtcdTokenVerifier implements TokenVerifier {
    private static final Logger LOG = LoggerFactory.getLogger(EtcdTokenVerifier.class);
    static final int WAIT_LOG_SECONDS = 10;

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
     */
    public record Options(CompactedPolicy compacted, Duration backoff, Duration backoffMax, int cacheEntries) {
    }

    /**
     * A question, as the cache keeps it: the record key by its SHA-256 digest, so that an entry
     * holds a few dozen bytes however long the key (review: kept whole, 10,000 verdicts
     * for keys near the changelog's 1 MB limit would hold tens of GB).
     */
    private record Asked(String keyDigest, long token, long leaseId) {
    }

    /** The longest lock name quoted in a verdict's detail (and so in the log and the cache). */
    static final int DETAIL_NAME_MAX_CHARS = 200;

    /** A verdict with the counter of its outcome. */
    private record Decided(Verdict verdict, Counter outcome) {
    }

    private final Client client;
    private final LockHistory history;
    private final Options options;
    private final Map<Asked, Decided> cache;
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
                .description("Time of each etcd read that answered")
                .register(registry);
        Gauge.builder("fence.enforcer.token.verification.waiting", waiting, AtomicInteger::get)
                .description("Stream threads waiting for etcd to answer a verification now").register(registry);
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

    @Override
    public Verdict verify(byte[] key, long token, long leaseId) {
        String text = abbreviated(new String(key, StandardCharsets.UTF_8));
        Asked asked = new Asked(digest(key), token, leaseId);
        Decided cached;
        synchronized (cache) {
            cached = cache.get(asked);
        }
        if (cached != null) {
            cacheHits.increment();
            cached.outcome().increment();
            return cached.verdict();
        }
        LockHistory.Verdict answer = ask(key, text, token, leaseId);
        String detail = answer.describe(abbreviated(LockKeys.name(history.prefix(), key)), token, leaseId);
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

    private static String digest(byte[] key) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(key));
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
                    LockHistory.Verdict verdict = history
                            .check(key, token, leaseId, options.compacted() == CompactedPolicy.ACCEPT).get();
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

    @Override
    public void close() {
        synchronized (closing) {
            closed = true;
            closing.notifyAll();
        }
        client.close();
    }

    @Override
    public String toString() {
        return "EtcdTokenVerifier{prefix=" + history.prefix() + ", " + options + "}";
    }
}
