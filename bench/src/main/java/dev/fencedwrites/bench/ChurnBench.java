package dev.fencedwrites.bench;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.etcd.LockKeys;
import dev.fencedwrites.services.EnforcerProcess;
import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.Service;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.ToDoubleFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Key churn: many keys, each written once under a short lock, the way a platform that fences per job run or per file writes.
 * The real enforcer process (token verification on) runs while a writer takes the locks in etcd and writes; the same
 * writes go once through an enforcer with fence expiry off and once with it on (docs/concepts/fence-expiry.md), and the
 * fence store is sampled through each run: RocksDB's estimate of its keys and its SST and memtable bytes, against the
 * number of live locks in etcd.
 *
 * <p>The writer takes 128 locks per etcd transaction (etcd's default {@code --max-txn-ops}), each key's lock key under the
 * current lease, and writes each key once with the transaction's revision as its token. A new lease is granted every second
 * and revoked {@code hold} after it was granted, so about {@code hold} times the write rate of locks are live at any time.
 * The writer stays at most {@code ahead} records ahead of the enforcer's decisions, so each run goes at what its enforcer
 * sustains, and the two runs' rates are the cost of expiry. etcd's history is compacted as the run goes (a minute behind).
 */
final class ChurnBench {
    private static final int LOCKS_PER_TXN = 128;
    private static final Duration SAMPLE_EVERY = Duration.ofSeconds(5);
    private static final Duration DECIDED_WITHIN = Duration.ofMinutes(5);
    private static final Pattern PROMETHEUS_LINE = Pattern.compile("(?m)^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{[^}]*})? (\\S+)$");

    private final String bootstrap;
    private final String etcdEndpoint;
    private final Client etcd;
    private final Path dir;
    private final Path log4j2;
    private final Consumer<String> progress;

    ChurnBench(String bootstrap, String etcdEndpoint, Client etcd, Path dir, Path log4j2, Consumer<String> progress) {
        this.bootstrap = bootstrap;
        this.etcdEndpoint = etcdEndpoint;
        this.etcd = etcd;
        this.dir = dir;
        this.log4j2 = log4j2;
        this.progress = progress;
    }

    /**
     * What to run.
     *
     * @param writes   writes, one per key, per run
     * @param hold     how long each lease (and its locks) lives
     * @param interval the enforcer's {@code fence.expiry.interval.ms} in the run with expiry
     * @param ahead    how many records the writer may be ahead of the enforcer's decisions
     */
    record Shape(int writes, Duration hold, Duration interval, int ahead) {
        String describe() {
            return String.format(Locale.ROOT, "%s keys written once each, leases held %d s, fence.expiry.interval.ms %d",
                    EnforcerBench.count(writes), hold.toSeconds(), interval.toMillis());
        }
    }

    /**
     * One sample of a run: seconds since its first write, and the counts then. {@code fences}: the fences in the store,
     * exactly (each key is accepted once, so the accepted records less the fences expired); {@code estimatedKeys}: RocksDB's
     * {@code estimate-num-keys}, which deletes make useless (it subtracts each delete twice, and reads a handful of keys
     * for a store of 200,000 fences).
     */
    record Sample(boolean expiry, double seconds, long written, long decided, long liveLocks, long fences, long estimatedKeys,
            long storeBytes, long expired, double cpuSeconds) {
        String csv() {
            return String.format(Locale.ROOT, "%s,%.1f,%d,%d,%d,%d,%d,%d,%d,%.2f", expiry ? "on" : "off", seconds, written,
                    decided, liveLocks, fences, estimatedKeys, storeBytes, expired, cpuSeconds);
        }
    }

    static final String CSV_HEADER = "expiry,seconds,written,decided,live_locks,fences,rocksdb_estimate_num_keys,store_bytes,"
            + "fences_expired,enforcer_cpu_seconds";

    /** One run's samples and rate. */
    record Run(List<Sample> samples, double recordsPerSecond, double cpuMicrosPerRecord, double etcdCpuMicrosPerRecord) {
        Sample last() {
            return samples.get(samples.size() - 1);
        }
    }

    /** The figures, and every sample of both runs as CSV lines ({@link #CSV_HEADER} first). */
    record Result(List<Figure> figures, List<String> csv) {
    }

    /**
     * Runs without and then with expiry, and returns the figures and the samples.
     *
     * @throws IllegalStateException when a run's enforcer does not accept every write
     */
    Result measure(Shape shape) throws Exception {
        progress.accept("churn: " + shape.describe() + "; without fence expiry, then with it");
        Run off = run(shape, false);
        Run on = run(shape, true);
        List<String> lines = new ArrayList<>(List.of(CSV_HEADER));
        Stream.concat(off.samples().stream(), on.samples().stream()).map(Sample::csv).forEach(lines::add);
        String name = shape.describe();
        double bytesPerKey = (double) off.last().storeBytes() / Math.max(1, off.last().fences());
        double settled = shape.hold().toSeconds() + 2.0 * shape.interval().toSeconds();
        Sample mostFences = worst(on, settled, s -> (double) s.fences() / s.liveLocks());
        Sample mostBytes = worst(on, settled, s -> s.storeBytes() / (bytesPerKey * s.liveLocks()));
        return new Result(List.of(
                new Figure("fences in the fence store at the end, with vs without fence expiry, " + name, on.last().fences(),
                        off.last().fences(), "fences", "", false),
                new Figure("fence store bytes (RocksDB SST + memtables) at the end, with vs without fence expiry, " + name,
                        on.last().storeBytes(), off.last().storeBytes(), "B", "", false),
                new Figure("fences in the store vs live locks in etcd, with fence expiry, the sample where their ratio is "
                        + "highest after the first hold + 2 intervals, " + name, mostFences.fences(), mostFences.liveLocks(),
                        "fences", "<= 2", false),
                new Figure("fence store bytes vs live locks x bytes per fence of the run without expiry, with fence expiry, "
                        + "the sample where their ratio is highest after the first hold + 2 intervals, " + name,
                        mostBytes.storeBytes(), bytesPerKey * mostBytes.liveLocks(), "B", "<= 2", false),
                new Figure("enforcer throughput (writer paced by the enforcer's decisions) with vs without fence expiry, "
                        + name, on.recordsPerSecond(), off.recordsPerSecond(), "records/s", "", true),
                new Figure("enforcer process CPU per record, with vs without fence expiry, " + name, on.cpuMicrosPerRecord(),
                        off.cpuMicrosPerRecord(), "us", "", false),
                new Figure("etcd CPU per record (the writer's lock transactions and revokes, the enforcer's verification and "
                        + "its oldest-lock reads), with vs without fence expiry, " + name, on.etcdCpuMicrosPerRecord(),
                        off.etcdCpuMicrosPerRecord(), "us", "", false)),
                lines);
    }

    /** The sample of {@code run} after its first hold + 2 intervals (before that, nothing expired) with the largest ratio. */
    private static Sample worst(Run run, double settled, ToDoubleFunction<Sample> ratio) {
        return run.samples().stream().filter(s -> s.seconds() > settled && s.liveLocks() > 0)
                .max(Comparator.comparingDouble(ratio)).orElseThrow(() -> new IllegalStateException(
                        "churn: no sample after the first hold and two intervals with a live lock"));
    }

    private Run run(Shape shape, boolean expiry) throws Exception {
        String id = (expiry ? "on-" : "off-") + EnforcerBench.shortId();
        String input = "churn-in-" + id;
        String prefix = "churn/" + id + "/locks/";
        Map<String, String> settings = Map.of("input.topic", input, "accepted.topic", "churn-ok-" + id, "rejected.topic",
                "churn-dlq-" + id, "application.id", "churn-" + id, "topics.create.enable", "true", "etcd.endpoints",
                etcdEndpoint, "etcd.lock.prefix", prefix, "token.verification.enable", "true", "fence.expiry.enable",
                Boolean.toString(expiry), "fence.expiry.interval.ms", Long.toString(shape.interval().toMillis()));
        try (Service enforcer = EnforcerProcess.start(dir.resolve("churn-" + id), log4j2, bootstrap, settings);
                Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            Writer writer = new Writer(shape, input, prefix, "churn-" + id, admin);
            List<Sample> samples = new ArrayList<>();
            long started = System.nanoTime();
            double cpuStart = cpuSeconds(enforcer);
            double etcdCpuStart = etcdCpuSeconds();
            Thread sampler = new Thread(() -> {
                try {
                    while (!Thread.currentThread().isInterrupted()) {
                        samples.add(sample(expiry, started, writer, enforcer, prefix, cpuStart));
                        Thread.sleep(SAMPLE_EVERY.toMillis());
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } catch (Exception e) {
                    writer.failure.compareAndSet(null, e);
                }
            }, "churn-sampler");
            sampler.start();
            try {
                writer.writeAll();
                awaitDecided(enforcer, shape.writes());
            } finally {
                sampler.interrupt();
                sampler.join();
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            double cpu = cpuSeconds(enforcer) - cpuStart;
            Sample end = sample(expiry, started, writer, enforcer, prefix, cpuStart);
            samples.add(end);
            long accepted = end.fences() + end.expired(); // the accepted records: fences = accepted - expired
            if (accepted != shape.writes()) {
                throw new IllegalStateException(String.format(Locale.ROOT, "churn: the enforcer accepted %,d of %,d writes "
                        + "(each key's one write is its live holder's); its log: %s", accepted, shape.writes(),
                        enforcer.process().log()));
            }
            Run run = new Run(List.copyOf(samples), shape.writes() / seconds, cpu * 1e6 / shape.writes(),
                    (etcdCpuSeconds() - etcdCpuStart) * 1e6 / shape.writes());
            progress.accept(String.format(Locale.ROOT, "churn:   expiry %s: %,.0f records/s, %.1f us enforcer and %.1f us etcd "
                    + "CPU per record; at the end %,d fences in the store, %,d store bytes, %,d live locks, %,d fences expired",
                    expiry ? "on" : "off", run.recordsPerSecond(), run.cpuMicrosPerRecord(), run.etcdCpuMicrosPerRecord(),
                    run.last().fences(), run.last().storeBytes(),
                    run.last().liveLocks(), run.last().expired()));
            return run;
        }
    }

    private static void awaitDecided(Service enforcer, int writes) throws Exception {
        long deadline = System.nanoTime() + DECIDED_WITHIN.toNanos();
        while (decided(enforcer) < writes) { // a scrape a second once the writer is done
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(String.format(Locale.ROOT, "churn: the enforcer decided %,.0f of %,d writes in "
                        + "%d s after the last", decided(enforcer), writes, DECIDED_WITHIN.toSeconds()));
            }
            Thread.sleep(1000);
        }
    }

    private Sample sample(boolean expiry, long started, Writer writer, Service enforcer, String prefix, double cpuStart)
            throws Exception {
        String metrics = Http.get(enforcer.address() + "/metrics").body();
        long live = etcd.getKVClient().get(ByteSequence.from(prefix, StandardCharsets.UTF_8),
                GetOption.builder().isPrefix(true).withCountOnly(true).build()).get(30, TimeUnit.SECONDS).getCount();
        long accepted = (long) sum(metrics, "fence_enforcer_records_accepted_total");
        long expired = (long) sum(metrics, "fence_enforcer_expiry_fences_expired_total");
        Sample sample = new Sample(expiry, (System.nanoTime() - started) / 1e9, writer.written.get(),
                accepted + (long) sum(metrics, "fence_enforcer_records_fenced_total"), live, accepted - expired,
                (long) sum(metrics, "kafka_stream_state_estimate_num_keys"),
                (long) (sum(metrics, "kafka_stream_state_total_sst_files_size")
                        + sum(metrics, "kafka_stream_state_size_all_mem_tables")),
                expired, cpuSeconds(enforcer) - cpuStart);
        if (sample.seconds() > 0 && (long) sample.seconds() % 30 < SAMPLE_EVERY.toSeconds()) {
            progress.accept(String.format(Locale.ROOT, "churn:   expiry %s, %3.0f s: %,d written, %,d decided, %,d live locks, "
                    + "%,d fences in the store", expiry ? "on" : "off", sample.seconds(), sample.written(), sample.decided(),
                    live,
                    sample.fences()));
        }
        return sample;
    }

    private static double decided(Service enforcer) throws Exception {
        String metrics = Http.get(enforcer.address() + "/metrics").body();
        return sum(metrics, "fence_enforcer_records_accepted_total") + sum(metrics, "fence_enforcer_records_fenced_total");
    }

    /** The sum of every series of {@code name} in a Prometheus text page; 0 when there is none. */
    static double sum(String page, String name) {
        double total = 0;
        Matcher line = PROMETHEUS_LINE.matcher(page);
        while (line.find()) {
            if (line.group(1).equals(name)) {
                double value = Double.parseDouble(line.group(3));
                total += Double.isNaN(value) ? 0 : value;
            }
        }
        return total;
    }

    private double etcdCpuSeconds() throws Exception {
        return VerificationBench.etcdCpuSeconds(etcdEndpoint);
    }

    /** The enforcer's process tree's CPU time (user + system), from /proc. */
    private static double cpuSeconds(Service enforcer) {
        ProcessHandle root = ProcessHandle.of(enforcer.process().pid()).orElseThrow();
        return Stream.concat(Stream.of(root), root.descendants()).mapToDouble(ChurnBench::cpuSecondsOf).sum();
    }

    private static double cpuSecondsOf(ProcessHandle process) {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(process.pid()), "stat"));
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) / 100.0; // utime, stime in USER_HZ (100)
        } catch (IOException | RuntimeException e) {
            return 0; // a process that exited meanwhile
        }
    }

    /** The writer: locks in etcd, one write per key, leases rotated and revoked, history compacted. */
    private final class Writer {
        private final Shape shape;
        private final String input;
        private final String prefix;
        private final String application;
        private final Admin admin;
        private final AtomicLong written = new AtomicLong();
        private final AtomicReference<Exception> failure = new AtomicReference<>();
        private final Deque<long[]> leases = new ArrayDeque<>(); // {lease id, granted at (nanoTime)}
        private final Deque<long[]> revisions = new ArrayDeque<>(); // {revision, at (nanoTime)}

        Writer(Shape shape, String input, String prefix, String application, Admin admin) {
            this.shape = shape;
            this.input = input;
            this.prefix = prefix;
            this.application = application;
            this.admin = admin;
        }

        void writeAll() throws Exception {
            Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ProducerConfig.ACKS_CONFIG,
                    "all", ProducerConfig.LINGER_MS_CONFIG, 5, ProducerConfig.BATCH_SIZE_CONFIG, 131_072);
            PutOption[] under = new PutOption[1];
            long lastCompaction = System.nanoTime();
            long decided = 0;
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(),
                    new ByteArraySerializer())) {
                for (int from = 0; from < shape.writes(); from += LOCKS_PER_TXN) {
                    if (failure.get() != null) {
                        throw failure.get();
                    }
                    while (written.get() - decided > shape.ahead()) {
                        producer.flush();
                        Thread.sleep(50);
                        decided = committed();
                    }
                    long now = System.nanoTime();
                    rotateLeases(now, under);
                    int to = Math.min(shape.writes(), from + LOCKS_PER_TXN);
                    long lease = leases.peekLast()[0];
                    List<Op> puts = new ArrayList<>(to - from);
                    for (int i = from; i < to; i++) {
                        puts.add(Op.put(ByteSequence.from(LockKeys.key(prefix, key(i), lease), StandardCharsets.UTF_8),
                                ByteSequence.EMPTY, under[0]));
                    }
                    long token = etcd.getKVClient().txn().Then(puts.toArray(new Op[0])).commit().get(30, TimeUnit.SECONDS)
                            .getHeader().getRevision();
                    for (int i = from; i < to; i++) {
                        producer.send(new ProducerRecord<>(input, null, null, key(i), new byte[100], headers(token, lease)),
                                (metadata, error) -> {
                                    if (error != null) {
                                        failure.compareAndSet(null, error);
                                    }
                                });
                    }
                    written.addAndGet(to - from);
                    lastCompaction = compact(token, now, lastCompaction);
                    if (written.get() % 5_000 < LOCKS_PER_TXN) {
                        decided = committed();
                    }
                }
                producer.flush();
                while (!leases.isEmpty()) {
                    etcd.getLeaseClient().revoke(leases.removeFirst()[0]).get(30, TimeUnit.SECONDS);
                }
            } catch (ExecutionException e) {
                throw new IllegalStateException("churn: the writer failed: " + e.getCause(), e.getCause());
            }
            if (failure.get() != null) {
                throw failure.get();
            }
        }

        /**
         * The records the enforcer has committed past on the input (its group's committed offsets): what it has decided, read
         * from the broker so that pacing costs the enforcer nothing (its {@code /metrics} page is not free to render).
         */
        private long committed() throws Exception {
            return admin.listConsumerGroupOffsets(application).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS)
                    .entrySet().stream().filter(e -> e.getKey().topic().equals(input) && e.getValue() != null)
                    .mapToLong(e -> e.getValue().offset()).sum();
        }

        /** Grants a new lease when the newest is a second old, and revokes those granted {@code hold} ago. */
        private void rotateLeases(long now, PutOption[] under) throws Exception {
            if (leases.isEmpty() || now - leases.peekLast()[1] > TimeUnit.SECONDS.toNanos(1)) {
                long lease = etcd.getLeaseClient().grant(shape.hold().toSeconds() + 600).get(30, TimeUnit.SECONDS).getID();
                leases.addLast(new long[]{lease, now});
                under[0] = PutOption.builder().withLeaseId(lease).build();
            }
            while (now - leases.peekFirst()[1] > shape.hold().toNanos()) {
                etcd.getLeaseClient().revoke(leases.removeFirst()[0]).get(30, TimeUnit.SECONDS);
            }
        }

        /** Compacts etcd's history every 30 s at the revision of a minute ago (the enforcer is seconds behind). */
        private long compact(long revision, long now, long lastCompaction) throws Exception {
            revisions.addLast(new long[]{revision, now});
            if (now - lastCompaction < TimeUnit.SECONDS.toNanos(30)) {
                return lastCompaction;
            }
            long[] target = null;
            while (!revisions.isEmpty() && now - revisions.peekFirst()[1] > TimeUnit.MINUTES.toNanos(1)) {
                target = revisions.removeFirst();
            }
            if (target != null) {
                etcd.getKVClient().compact(target[0]).get(60, TimeUnit.SECONDS);
            }
            return now;
        }

        private byte[] key(int i) {
            return String.format(Locale.ROOT, "churn-%08d", i).getBytes(StandardCharsets.UTF_8);
        }

        private RecordHeaders headers(long token, long lease) {
            RecordHeaders headers = new RecordHeaders();
            headers.add(FenceHeaders.TOKEN, FenceHeaders.encode(token));
            headers.add(FenceHeaders.SEQ, FenceHeaders.encode(1));
            headers.add(FenceHeaders.LEASE, FenceHeaders.encode(lease));
            headers.add(FenceHeaders.WRITER, FenceHeaders.encode("bench-churn-writer"));
            return headers;
        }
    }
}
