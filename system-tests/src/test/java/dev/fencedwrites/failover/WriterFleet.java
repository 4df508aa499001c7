package dev.fencedwrites.failover;

import dev.fencedwrites.services.Await;
import dev.fencedwrites.services.ChildProcess;
import dev.fencedwrites.services.Jvm;
import dev.fencedwrites.services.Log4j2Config;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.LeaseOption;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * A steady load of real writers for the failover tests: {@link Load#processes} {@link FailoverWriter}
 * JVMs of {@link Load#threads} producer-lib writers each, contending for {@link Load#keys} keys'
 * etcd locks. When a writer asks for a stall before a write (a STALL line in its ledger), the watcher
 * stops its process (SIGSTOP, confirmed in /proc) and keeps it stopped until the lease has expired in
 * etcd and another writer has acquired the key with a newer token (or 30 s at most), then sends
 * SIGCONT and lets the write go on: it reaches the broker stale.
 */
final class WriterFleet implements AutoCloseable {
    /** A stop never lasts longer than this, also when no other writer takes the key over. */
    private static final Duration MAX_STALL = Duration.ofSeconds(30);

    /**
     * The load's shape.
     *
     * @param processes   writer JVMs
     * @param threads     writers (each its own lease client and producer) per JVM
     * @param keys        keys they contend for
     * @param ttl         the writers' lease TTL
     * @param stallChance per write, the chance that the process stops itself before sending it
     * @param pause       pause between a writer's writes under one lease
     */
    record Load(int processes, int threads, int keys, Duration ttl, double stallChance, Duration pause) {
    }

    /** One stop of a writer process: when it stopped and was resumed (wall clock, ms), and whether another writer took over. */
    record Resumed(String process, String key, long token, long stoppedMillis, long resumedMillis, boolean tookOver) {
    }

    private final Load load;
    private final List<String> keys = new ArrayList<>();
    private final List<ChildProcess> processes = new ArrayList<>();
    private final List<Path> ledgers = new ArrayList<>();
    private final Path stopFile;
    private final Client etcd;
    private final ScheduledExecutorService resumer = Executors.newSingleThreadScheduledExecutor();
    private final Map<Integer, Long> stoppedAt = new ConcurrentHashMap<>();
    /** Per process, the stall it is stopped for. */
    private final Map<Integer, WriterLedger.Stall> stopping = new ConcurrentHashMap<>();
    /** Per process, how many of its stalls were resumed. */
    private final Map<Integer, Integer> handled = new ConcurrentHashMap<>();
    private final List<Resumed> resumed = new CopyOnWriteArrayList<>();
    private final long startedMillis = System.currentTimeMillis();
    private long stoppedMillis;

    private WriterFleet(Path dir, Load load, List<String> etcdEndpoints, String keyPrefix) {
        this.load = load;
        this.stopFile = dir.resolve("stop");
        for (int k = 0; k < load.keys(); k++) {
            keys.add(keyPrefix + k);
        }
        this.etcd = Client.builder().endpoints(etcdEndpoints.toArray(String[]::new)).build();
    }

    /**
     * Starts the writer JVMs in {@code dir} (ledgers and logs there) and the watcher that resumes stopped ones.
     *
     * @param keyPrefix keys are {@code keyPrefix0 .. keyPrefix(keys-1)}
     */
    static WriterFleet start(Path dir, Load load, String bootstrap, List<String> etcdEndpoints, String registry,
            String keyPrefix) throws IOException {
        Files.createDirectories(dir);
        WriterFleet fleet = new WriterFleet(dir, load, etcdEndpoints, keyPrefix);
        Path log4j2 = Log4j2Config.write(dir.resolve("log4j2.properties"), "WARN");
        for (int p = 0; p < load.processes(); p++) {
            Path ledger = dir.resolve("writer-" + p + ".ledger");
            fleet.ledgers.add(ledger);
            List<String> args = List.of("name=w" + p, "bootstrap=" + bootstrap, "etcd=" + String.join(",", etcdEndpoints),
                    "registry=" + registry, "keys=" + String.join(",", fleet.keys), "threads=" + load.threads(),
                    "ttl.ms=" + load.ttl().toMillis(), "stall.chance=" + load.stallChance(),
                    "pause.ms=" + load.pause().toMillis(),
                    "first.id=" + (p + 1) * 1_000_000_000L, "ledger=" + ledger, "stop.file=" + fleet.stopFile);
            fleet.processes.add(ChildProcess.start("writer-" + p,
                    Jvm.command(List.of("-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"), log4j2,
                            FailoverWriter.class.getName(), args),
                    dir, dir.resolve("writer-" + p + ".log"), Map.of()));
        }
        fleet.resumer.scheduleWithFixedDelay(fleet::resumeStopped, 200, 200, TimeUnit.MILLISECONDS);
        return fleet;
    }

    List<String> keys() {
        return keys;
    }

    /** One line for the test's output: the load. */
    String describe() {
        return String.format("%d writer processes x %d writers on %d keys, lease TTL %d ms, stall chance %.3f per write",
                load.processes(), load.threads(), load.keys(), load.ttl().toMillis(), load.stallChance());
    }

    /** Tells the writers to stop after their current write, resumes any stopped one, waits until all have exited. */
    void stop() throws Exception {
        Files.createFile(stopFile);
        Await.until("the writer processes to finish", Duration.ofMinutes(2), null,
                () -> processes.stream().noneMatch(ChildProcess::isAlive));
        stoppedMillis = System.currentTimeMillis();
        resumer.shutdownNow();
    }

    /** What the writers did; read after {@link #stop()}. */
    WriterLedger ledger() throws IOException {
        return WriterLedger.read(ledgers);
    }

    /** Acknowledged writes per second over the run. */
    double writesPerSecond() throws IOException {
        return ledger().acks().size() * 1000.0 / Math.max(1, stoppedMillis - startedMillis);
    }

    List<Resumed> resumed() {
        return resumed;
    }

    /** The file whose existence lets a writer's {@code stall}-th stalled write go on (after the test resumed its process). */
    static Path resumedFile(Path ledger, int stall) {
        return ledger.resolveSibling(ledger.getFileName() + ".resumed-" + stall);
    }

    /** One round of the watcher: stops processes that asked for a stall, resumes stopped ones whose lease was taken over. */
    private void resumeStopped() {
        for (int p = 0; p < processes.size(); p++) {
            try {
                if (stopping.containsKey(p)) {
                    maybeResume(p);
                } else {
                    List<WriterLedger.Stall> stalls = WriterLedger.read(List.of(ledgers.get(p))).stalls();
                    int done = handled.getOrDefault(p, 0);
                    if (stalls.size() > done) {
                        stop(p, stalls.get(done));
                    }
                }
            } catch (Exception e) {
                // etcd or /proc not answering this round (a member is down): try again next round
            }
        }
    }

    private void stop(int p, WriterLedger.Stall stall) throws Exception {
        ChildProcess process = processes.get(p);
        process.signal("STOP");
        Await.until(process.name() + " to be stopped", Duration.ofSeconds(30), null, () -> stopped(process));
        stopping.put(p, stall);
        stoppedAt.put(p, System.currentTimeMillis());
    }

    private void maybeResume(int p) throws Exception {
        WriterLedger.Stall stall = stopping.get(p);
        long since = stoppedAt.get(p);
        boolean tookOver = expired(stall.lease()) && newerHolder(stall.key(), stall.token());
        if (tookOver || Files.exists(stopFile) || System.currentTimeMillis() - since > MAX_STALL.toMillis()) {
            processes.get(p).signal("CONT");
            int done = handled.merge(p, 1, Integer::sum);
            Files.createFile(resumedFile(ledgers.get(p), done));
            stopping.remove(p);
            resumed.add(new Resumed(processes.get(p).name(), stall.key(), stall.token(), since, System.currentTimeMillis(),
                    tookOver));
        }
    }

    /** Whether the process is stopped by a signal: state T in /proc/PID/stat. */
    private static boolean stopped(ChildProcess process) throws IOException {
        String stat = Files.readString(Path.of("/proc", Long.toString(process.pid()), "stat"));
        return stat.substring(stat.lastIndexOf(')') + 2).startsWith("T");
    }

    private boolean expired(long lease) throws Exception {
        return etcd.getLeaseClient().timeToLive(lease, LeaseOption.DEFAULT).get(2, TimeUnit.SECONDS).getTTL() < 0;
    }

    /**
     * Whether another writer has acquired {@code key} with a newer token and its marker was acknowledged (producer-lib's
     * {@code acquire} returned): the stopped writer's write is stale from then on.
     */
    private boolean newerHolder(String key, long token) throws IOException {
        return WriterLedger.read(ledgers).acquired().stream().anyMatch(a -> a.key().equals(key) && a.token() > token);
    }

    @Override
    public void close() {
        resumer.shutdownNow();
        for (ChildProcess process : processes) {
            if (process.isAlive()) {
                process.signal("CONT");
            }
            process.close();
        }
        etcd.close();
    }
}
