package dev.fencedwrites.bench;

import dev.fencedwrites.bench.EnforcerBench.Kind;
import dev.fencedwrites.bench.EnforcerBench.Throughput;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.enforcer.FenceEnforcerConfig;
import dev.fencedwrites.enforcer.TokenVerifier;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.etcd.LockKeys;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.StreamsConfig;

/**
 * The cost of token verification: the enforcer with and without it over the same input,
 * whose tokens are all real (each key's lock taken in etcd before the timed part), and the etcd range
 * reads per second the verifying enforcer made.
 *
 * <p>Two shapes: writes under long leases (few acquisitions, many writes per token: each key's token
 * is read from etcd once, then every write at the fence is compared with the stored lease), and one acquisition per key (one
 * write per key, each key's first token: one etcd read each). Each lock is taken the way a writer in
 * any language can ({@link LockKeys}' layout): one transaction puts the key under the lease and reads
 * the oldest key under the lock; the transaction's revision is the token. All keys share one lease
 * with a TTL longer than the run (a lease may hold many locks; each key still has its own lock key
 * and token, so the verifier's cache never answers for another key). The run fails unless the
 * enforcer accepted every record and read etcd exactly once per key (writes at a verified fence are
 * compared with the lease the fence store keeps).
 */
final class VerificationBench {
    private static final long LEASE_TTL_SECONDS = 3600;
    private static final int IN_FLIGHT = 128;
    private static final String GUARANTEE = StreamsConfig.EXACTLY_ONCE_V2;
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private static final Pattern CPU_SECONDS = Pattern.compile("(?m)^process_cpu_seconds_total (\\S+)$");

    private final EnforcerBench enforcer;
    private final Client etcd;
    private final Consumer<String> progress;
    private final String etcdEndpoint;

    /**
     * @param etcdEndpoint the endpoint of the etcd {@code etcd} talks to (its {@code /metrics} gives etcd's CPU time)
     */
    VerificationBench(EnforcerBench enforcer, Client etcd, String etcdEndpoint, Consumer<String> progress) {
        this.enforcer = enforcer;
        this.etcd = etcd;
        this.etcdEndpoint = etcdEndpoint;
        this.progress = progress;
    }

    /** A key's real lock: its token (the transaction's revision) under {@code leaseId}. */
    private record Lock(byte[] key, long token, long leaseId) {
    }

    /**
     * @param longLeaseKeys  keys of the long-lease shape
     * @param writesPerToken writes per key (and per token) in the long-lease shape
     * @param acquiredKeys   keys of the one-acquisition-per-key shape (one write each)
     * @param latencyRate     records/s of the latency runs (one acquisition per key, a key each)
     * @param latencyDuration how long each latency run produces
     */
    List<Figure> measure(int longLeaseKeys, int writesPerToken, int acquiredKeys, int latencyRate, Duration latencyDuration)
            throws Exception {
        List<Figure> figures = new ArrayList<>();
        String longLeases = String.format(Locale.ROOT, "writes under long leases (%s keys, %d writes per token)",
                EnforcerBench.count(longLeaseKeys),
                writesPerToken);
        String perKey = String.format(Locale.ROOT, "one acquisition per key (%s keys, one write each)",
                EnforcerBench.count(acquiredKeys));
        try (Admin admin = enforcer.admin()) {
            figures.addAll(shape(admin, longLeases, "bench-long-", longLeaseKeys, writesPerToken, ">= 0.95"));
            figures.addAll(shape(admin, perKey, "bench-acquired-", acquiredKeys, 1, ">= 0.8"));
        }
        figures.add(watchCost(acquiredKeys));
        int latencyKeys = (int) (latencyRate * latencyDuration.toSeconds());
        progress.accept(String.format(Locale.ROOT, "verification: taking %,d locks in etcd for the latency runs", latencyKeys));
        // The verifying run's verifier runs while the locks are taken, as an enforcer does while its writers acquire.
        Running running = runningVerifiers(1);
        List<Lock> locks = takeLocks("bench-latency-", latencyKeys);
        byte[] value = new byte[100];
        enforcer.useVerifiers(running.verifiers().iterator()::next);
        try {
            figures.addAll(enforcer.verifiedLatency("one acquisition per key", latencyRate, latencyDuration,
                    (topic, i) -> record(topic, locks.get(i), 1, value)));
        } finally {
            enforcer.useVerifiers(null);
        }
        return figures;
    }

    private List<Figure> shape(Admin admin, String name, String keyPrefix, int keys, int writesPerKey, String goal)
            throws Exception {
        progress.accept(
                String.format(Locale.ROOT, "verification: taking %,d locks in etcd (one transaction each) for %s", keys, name));
        Running running = runningVerifiers(3);
        double cpuBefore = etcdCpuSeconds();
        List<Lock> locks = takeLocks(keyPrefix, keys);
        double lockCpu = etcdCpuSeconds() - cpuBefore;
        int records = keys * writesPerKey;
        String input = inputWarmedUp(admin, keyPrefix, locks, writesPerKey);
        // Three rounds of off, started after and running, whose order rotates, so that drift on a busy machine favours none.
        Map<Boolean, List<Double>> rates = new HashMap<>();
        List<Double> readRates = new ArrayList<>();
        List<Double> readsPerKey = new ArrayList<>();
        List<Double> indexShare = new ArrayList<>();
        Map<Boolean, List<Double>> etcdCpu = new HashMap<>();
        List<Double> runningRates = new ArrayList<>();
        Iterator<TokenVerifier> nextRunning = running.verifiers().iterator();
        for (int arm : new int[]{0, 1, 2, 2, 0, 1, 1, 2, 0}) {
            if (arm == 2) {
                runningRates.add(runningRun(admin, input, records, nextRunning));
                continue;
            }
            boolean verify = arm == 1;
            double cpuStart = etcdCpuSeconds();
            Throughput run = enforcer.runToEnd(admin, Kind.ENFORCER, input, records, true, 0, GUARANTEE, verify);
            double cpu = etcdCpuSeconds() - cpuStart;
            rates.computeIfAbsent(verify, v -> new ArrayList<>()).add(run.recordsPerSecond());
            etcdCpu.computeIfAbsent(verify, v -> new ArrayList<>()).add(cpu);
            if (verify) {
                startedAfter(run, keys, input, readRates, readsPerKey, indexShare);
            }
            progress.accept(String.format(Locale.ROOT, "verification:   enforcer, verification %s, %s: %,.0f records/s%s, etcd "
                    + "CPU %.2f s", verify ? "on, started after" : "off", GUARANTEE, run.recordsPerSecond(),
                    verify ? String.format(Locale.ROOT, ", %,.0f etcd reads/s", run.etcdReadsPerSecond()) : "", cpu));
        }
        double off = median(rates.get(false));
        double offSpread = Figure.halfRange(rates.get(false));
        List<Figure> others = alternatives(admin, name, input, locks, writesPerKey, off, offSpread, running, goal, runningRates);
        admin.deleteTopics(List.of(input)).all().get(60, TimeUnit.SECONDS);
        double on = median(rates.get(true));
        progress.accept(String.format(Locale.ROOT, "verification:   %s: on %,.0f (spread %s), off %,.0f (spread %s) records/s",
                name, on, spread(rates.get(true)), off, spread(rates.get(false))));
        List<Figure> figures = new ArrayList<>(List.of(
                new Figure("enforcer with vs without token verification, its verifier started after the writers acquired "
                        + "(a backlog: tokens older than its index are read from etcd, ahead), " + name + ", " + GUARANTEE
                        + ", medians of 3", on, off, "records/s", "", true, Figure.halfRange(rates.get(true)) + offSpread),
                new Figure("etcd reads/s of token verification, " + name + ", " + GUARANTEE, median(readRates), Double.NaN,
                        "reads/s", "", false),
                new Figure("etcd reads per acquisition (per key's first token), " + name, median(readsPerKey), Double.NaN,
                        "reads", "", false),
                new Figure("acquisitions verified from the index of lock holders (share), " + name, median(indexShare),
                        Double.NaN, "", "", false),
                new Figure("etcd CPU per 1,000 acquisitions: verification reads (its CPU in a verifying run less in one "
                        + "without), " + name, (median(etcdCpu.get(true)) - median(etcdCpu.get(false))) * 1e6 / keys,
                        Double.NaN, "ms", "", false),
                new Figure("etcd CPU per 1,000 acquisitions: lock transactions (put + oldest key; three verifiers' watches "
                        + "open), " + name,
                        lockCpu * 1e6 / keys, Double.NaN, "ms", "", false)));
        figures.addAll(others);
        return figures;
    }

    /** A new input topic with {@code writesPerKey} writes under each lock, round robin; one enforcer run over it to warm up. */
    private String inputWarmedUp(Admin admin, String keyPrefix, List<Lock> locks, int writesPerKey) throws Exception {
        int keys = locks.size();
        int records = keys * writesPerKey;
        String input = "bench.verify." + keyPrefix + keys + "." + EnforcerBench.shortId();
        EnforcerBench.createTopics(admin, input);
        progress.accept(
                String.format(Locale.ROOT, "verification: producing %,d records over %,d keys to %s", records, keys, input));
        byte[] value = new byte[100];
        enforcer.produce(admin, input, records, i -> record(input, locks.get(i % keys), i / keys + 1L, value));
        Throughput warmUp = enforcer.runToEnd(admin, Kind.ENFORCER, input, records, true, 0, GUARANTEE, false);
        progress.accept(String.format(Locale.ROOT, "verification:   warm-up, verification off: %,.0f records/s (not counted)",
                warmUp.recordsPerSecond()));
        return input;
    }

    /** Checks a started-after run ({@link #verifiedOnce}) and adds its etcd reads/s, reads per key and index share. */
    private static void startedAfter(Throughput run, int keys, String input, List<Double> readRates, List<Double> readsPerKey,
            List<Double> indexShare) {
        verifiedOnce(run, keys, input);
        readRates.add(run.etcdReadsPerSecond());
        readsPerKey.add(run.etcdReads() / keys);
        indexShare.add(run.indexAnswered() / keys);
    }

    /** Fails unless the run verified each key's one real token once. */
    private static void verifiedOnce(Throughput run, int keys, String input) {
        if (run.verified() != keys || run.etcdReads() + run.indexAnswered() < keys) {
            throw new IllegalStateException(String.format(Locale.ROOT,
                    "the enforcer verified %,.0f tokens (%,.0f etcd reads, %,.0f from its index) over %,d keys of %s; each key's "
                            + "one real token should be verified once, every other write at its fence compared with the stored "
                            + "lease",
                    run.verified(), run.etcdReads(), run.indexAnswered(), keys, input));
        }
    }

    /**
     * {@code count} verifiers with the enforcer's defaults, each with its index of lock holders built (at etcd's current
     * revision) before the shape's locks are taken: what an enforcer that was running while the writers acquired has.
     */
    private Running runningVerifiers(int count) throws Exception {
        FenceEnforcerConfig config = enforcer.enforcerConfig("bench-running", GUARANTEE, true, true);
        EtcdSettings etcd = config.tokenVerification().orElseThrow();
        Running running = new Running(new ArrayList<>(), new ArrayList<>());
        for (int i = 0; i < count; i++) {
            SimpleMeterRegistry meters = new SimpleMeterRegistry();
            running.verifiers().add(TokenVerifier.etcd(etcd, config, meters));
            running.meters().add(meters);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (meters.get("fence.enforcer.token.verification.index.revision").tag("bound", "first").gauge().value() == 0) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("a verifier's index of lock holders was not built within 60 s");
                }
                Thread.sleep(50);
            }
        }
        return running;
    }

    /** Verifiers started before the locks were taken, with their meters. */
    private record Running(List<TokenVerifier> verifiers, List<SimpleMeterRegistry> meters) {
        /** The share of {@code keys} acquisitions each verifier answered from its index; the median. */
        double indexShare(int keys) {
            List<Double> shares = new ArrayList<>();
            for (SimpleMeterRegistry registry : meters) {
                shares.add(registry.get("fence.enforcer.token.verification.index.lookups").tag("result", "answered").counter()
                        .count() / keys);
            }
            return median(shares);
        }

        /** Fails unless each verifier verified each of the {@code keys} keys' one real token once. */
        void verifiedOnce(int keys) {
            for (SimpleMeterRegistry registry : meters) {
                double verified = registry.get("fence.enforcer.token.verifications").tag("outcome", "verified").counter().count();
                if (verified != keys) {
                    throw new IllegalStateException(String.format(Locale.ROOT, "a running verifier verified %,.0f tokens over "
                            + "%,d keys; each key's one real token should be verified once", verified, keys));
                }
            }
        }
    }

    /**
     * The enforcer whose verifier was running while the locks were taken ({@code running}, one per run; its index answers
     * every acquisition), on every shape; and a verifier answering from memory on the one-acquisition-per-key shape
     * ({@code writesPerKey} 1). Each against the median without verification {@code off}; {@code goal} is the running
     * verifier's.
     */
    private List<Figure> alternatives(Admin admin, String name, String input, List<Lock> locks, int writesPerKey, double off,
            double offSpread, Running running, String goal, List<Double> runningRates) throws Exception {
        List<Figure> figures = new ArrayList<>();
        progress.accept(String.format(Locale.ROOT, "verification:   %s: running %,.0f (spread %s) records/s", name,
                median(runningRates), spread(runningRates)));
        figures.add(new Figure("enforcer with token verification, its verifier running while the writers acquired (the index "
                + "of lock holders answers each acquisition) vs without verification, " + name + ", " + GUARANTEE
                + ", medians of 3", median(runningRates), off, "records/s", goal, true,
                Figure.halfRange(runningRates) + offSpread));
        running.verifiedOnce(locks.size());
        figures.add(new Figure("acquisitions verified from the index of lock holders (share), its verifier running while the "
                + "writers acquired, " + name, running.indexShare(locks.size()), Double.NaN, "", "", false));
        if (writesPerKey == 1) {
            figures.add(localCeiling(admin, name, input, locks.size(), locks, off, offSpread));
        }
        return figures;
    }

    /**
     * The enforcer with a verifier that answers every question from memory (each key's lock, known to the bench) against the
     * median without verification: the most any local index of lock tenures could win, its own upkeep left out.
     */
    private Figure localCeiling(Admin admin, String name, String input, int records, List<Lock> locks, double off,
            double offSpread)
            throws Exception {
        Map<String, Long> tokens = new HashMap<>();
        locks.forEach(lock -> tokens.put(new String(lock.key(), StandardCharsets.UTF_8) + "/" + lock.leaseId(), lock.token()));
        return alternative(admin, input, records, () -> new TokenVerifier() {
            @Override
            public Verdict verify(byte[] key, long token, long leaseId) {
                Long held = tokens.get(new String(key, StandardCharsets.UTF_8) + "/" + leaseId);
                return held != null && held == token
                        ? Verdict.verified("held, from memory", token)
                        : new Verdict(RejectionReason.LOCK_NOT_HELD, "not held, from memory");
            }

            @Override
            public void close() {
            }
        }, "verifier answering from memory", new Figure("enforcer with a verifier answering from memory (the ceiling of a "
                + "local index) vs without verification, " + name + ", " + GUARANTEE + ", medians of 3", 0, off, "records/s",
                "", true, offSpread));
    }

    /** One timed run whose verifier is the next of {@code running} (started before the locks); its records/s. */
    private double runningRun(Admin admin, String input, int records, Iterator<TokenVerifier> running) throws Exception {
        enforcer.useVerifiers(running::next);
        try {
            double rate = enforcer.runToEnd(admin, Kind.ENFORCER, input, records, true, 0, GUARANTEE, true).recordsPerSecond();
            progress.accept(String.format(Locale.ROOT, "verification:   enforcer, verification on, running while the locks "
                    + "were taken, %s: %,.0f records/s", GUARANTEE, rate));
            return rate;
        } finally {
            enforcer.useVerifiers(null);
        }
    }

    /** Three runs with verifiers from {@code verifiers}; {@code figure} with their median as its value. */
    private Figure alternative(Admin admin, String input, int records, Supplier<TokenVerifier> verifiers, String label,
            Figure figure) throws Exception {
        enforcer.useVerifiers(verifiers);
        List<Double> rates = new ArrayList<>();
        try {
            for (int run = 0; run < 3; run++) {
                Throughput result = enforcer.runToEnd(admin, Kind.ENFORCER, input, records, true, 0, GUARANTEE, true);
                rates.add(result.recordsPerSecond());
                progress.accept(String.format(Locale.ROOT, "verification:   enforcer, %s, %s: %,.0f records/s", label, GUARANTEE,
                        result.recordsPerSecond()));
            }
        } finally {
            enforcer.useVerifiers(null);
        }
        return new Figure(figure.measure(), median(rates), figure.baseline(), figure.unit(), figure.goal(),
                figure.higherIsBetter(), figure.spread() + Figure.halfRange(rates));
    }

    /**
     * etcd's CPU per 1,000 lock transactions with a watch open on the lock prefix against without one: what a verifier that
     * learns each acquisition from a watch (an index of lock tenures) would cost etcd, beside the read per acquisition.
     */
    private Figure watchCost(int keys) throws Exception {
        progress.accept(String.format(Locale.ROOT,
                "verification: taking %,d locks in etcd without, then %,d with a watch on the lock prefix", keys, keys));
        double start = etcdCpuSeconds();
        takeLocks("bench-unwatched-", keys);
        double unwatched = etcdCpuSeconds() - start;
        AtomicLong events = new AtomicLong();
        ByteSequence prefix = ByteSequence.from(LockKeys.DEFAULT_PREFIX, StandardCharsets.UTF_8);
        try (Watch.Watcher watcher = etcd.getWatchClient().watch(prefix, WatchOption.builder().isPrefix(true).build(),
                response -> events.addAndGet(response.getEvents().size()))) {
            etcd.getKVClient().put(ByteSequence.from(LockKeys.DEFAULT_PREFIX + "bench-watch-ready", StandardCharsets.UTF_8),
                    ByteSequence.EMPTY).get(30, TimeUnit.SECONDS);
            awaitEvents(events, 1);
            long before = events.get();
            start = etcdCpuSeconds();
            takeLocks("bench-watched-", keys);
            awaitEvents(events, before + keys);
            double watched = etcdCpuSeconds() - start;
            progress.accept(String.format(Locale.ROOT, "verification:   etcd CPU for %,d lock transactions: %.2f s without a "
                    + "watch, %.2f s with one (%,d events)", keys, unwatched, watched, events.get() - before));
            return new Figure("etcd CPU per 1,000 lock transactions, with vs without a watch on the lock prefix",
                    watched * 1e6 / keys,
                    unwatched * 1e6 / keys, "ms", "", false);
        }
    }

    private static void awaitEvents(AtomicLong events, long count) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (events.get() < count) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the watch on the lock prefix saw " + events.get() + " events, not " + count);
            }
            Thread.sleep(10);
        }
    }

    private static double median(List<Double> values) {
        List<Double> sorted = values.stream().sorted().toList();
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    /** Half the range, as a percentage of the median. */
    private static String spread(List<Double> values) {
        double range = values.stream().mapToDouble(Double::doubleValue).max().orElse(0)
                - values.stream().mapToDouble(Double::doubleValue).min().orElse(0);
        return String.format(Locale.ROOT, "+-%.0f %%", range / 2 / median(values) * 100);
    }

    /** etcd's own CPU time so far, in seconds: {@code process_cpu_seconds_total} from its {@code /metrics}. */
    private double etcdCpuSeconds() throws Exception {
        return etcdCpuSeconds(etcdEndpoint);
    }

    /** etcd's CPU time so far, in seconds, from the {@code /metrics} of the member at {@code etcdEndpoint}. */
    static double etcdCpuSeconds(String etcdEndpoint) throws Exception {
        HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(URI.create(etcdEndpoint + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString());
        Matcher cpu = CPU_SECONDS.matcher(response.body());
        if (response.statusCode() != 200 || !cpu.find()) {
            throw new IllegalStateException("etcd's /metrics at " + etcdEndpoint + " has no process_cpu_seconds_total (HTTP "
                    + response.statusCode() + ")");
        }
        return Double.parseDouble(cpu.group(1));
    }

    /** One lease, and for each key one transaction that puts its lock key and finds it the oldest; the revision is the token. */
    private List<Lock> takeLocks(String keyPrefix, int keys) throws Exception {
        long leaseId = etcd.getLeaseClient().grant(LEASE_TTL_SECONDS).get(30, TimeUnit.SECONDS).getID();
        GetOption oldest = GetOption.builder().isPrefix(true).withSortField(GetOption.SortTarget.CREATE)
                .withSortOrder(GetOption.SortOrder.ASCEND).withLimit(1).build();
        Semaphore inFlight = new Semaphore(IN_FLIGHT);
        List<CompletableFuture<Lock>> pending = new ArrayList<>(keys);
        for (int k = 0; k < keys; k++) {
            byte[] key = String.format(Locale.ROOT, "%s%07d", keyPrefix, k).getBytes(StandardCharsets.UTF_8);
            ByteSequence lockKey = ByteSequence.from(LockKeys.key(LockKeys.DEFAULT_PREFIX, key, leaseId), StandardCharsets.UTF_8);
            ByteSequence lockDir = ByteSequence.from(LockKeys.name(LockKeys.DEFAULT_PREFIX, key) + "/", StandardCharsets.UTF_8);
            inFlight.acquire();
            pending.add(etcd.getKVClient().txn()
                    .If(new Cmp(lockKey, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
                    .Then(Op.put(lockKey, ByteSequence.EMPTY, PutOption.builder().withLeaseId(leaseId).build()),
                            Op.get(lockDir, oldest))
                    .commit()
                    .whenComplete((response, error) -> inFlight.release())
                    .thenApply(response -> {
                        List<KeyValue> first = response.getGetResponses().isEmpty()
                                ? List.of()
                                : response.getGetResponses().get(0).getKvs();
                        if (!response.isSucceeded() || first.isEmpty() || !first.get(0).getKey().equals(lockKey)) {
                            throw new IllegalStateException("the bench's lock on " + lockDir + " was not free");
                        }
                        return new Lock(key, response.getHeader().getRevision(), leaseId);
                    }));
        }
        List<Lock> locks = new ArrayList<>(keys);
        for (CompletableFuture<Lock> lock : pending) {
            locks.add(lock.get(60, TimeUnit.SECONDS));
        }
        return locks;
    }

    /** The {@code seq}-th write under {@code lock}'s token, with the headers FencedProducer adds. */
    private static ProducerRecord<byte[], byte[]> record(String topic, Lock lock, long seq, byte[] value) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, FenceHeaders.encode(lock.token()));
        headers.add(FenceHeaders.SEQ, FenceHeaders.encode(seq));
        headers.add(FenceHeaders.LEASE, FenceHeaders.encode(lock.leaseId()));
        headers.add(FenceHeaders.WRITER, FenceHeaders.encode("bench-verified-writer"));
        return new ProducerRecord<>(topic, null, null, lock.key(), value, headers);
    }
}
