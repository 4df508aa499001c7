package dev.fencedwrites.devtools.chaos;

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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * A steady load of real writers for {@code fence chaos} and the failover tests: {@link Load#processes} {@link ChaosWriter}
 * JVMs of {@link Load#threads} producer-lib writers each, contending for {@link Load#keys} keys' etcd locks. When a writer
 * asks for a stall before a write (a STALL line in its ledger), the watcher stops its process (SIGSTOP, confirmed in /proc)
 * and keeps it stopped until the lease has expired in etcd and another writer has acquired the key with a newer token (or
 * 30 s at most), then sends SIGCONT and lets the write go on: it reaches the broker stale.
 *
 * <p>For the chaos nemesis a process can also be stopped whole for a while ({@link #pause}), killed with
 * SIGKILL and started again under a new ledger ({@link #kill}), and run under libfaketime, whose wall clock the nemesis
 * sets ({@link #setClock}): skewed from the start, and jumping during the run.
 */
public final class WriterFleet implements AutoCloseable {
    /** A stop never lasts longer than this, also when no other writer takes the key over. */
    private static final Duration MAX_STALL = Duration.ofSeconds(30);
    /** Debian's libfaketime (package faketime), preloaded into the writers with a skewed clock. */
    public static final Path LIBFAKETIME = Path.of("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1");

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
    public record Load(int processes, int threads, int keys, Duration ttl, double stallChance, Duration pause) {
    }

    /** One stop of a writer process: when it stopped and was resumed (wall clock, ms), and whether another writer took over. */
    public record Resumed(String process, String key, long token, long stoppedMillis, long resumedMillis, boolean tookOver) {
    }

    /** One writer JVM: its current incarnation (a kill starts the next) and the stall it is stopped for, if any. */
    private static final class Worker {
        final int index;
        int incarnation;
        ChildProcess process;
        Path ledger;
        int handled;
        WriterLedger.Stall stopping;
        long stoppedAt;
        long pausedUntil;
        Path clock;

        Worker(int index) {
            this.index = index;
        }
    }

    private final Load load;
    private final Path dir;
    private final String bootstrap;
    private final List<String> etcdEndpoints;
    private final String registry;
    private final Path log4j2;
    private final List<String> keys = new ArrayList<>();
    private final List<Worker> workers = new ArrayList<>();
    private final List<Path> ledgers = new CopyOnWriteArrayList<>();
    private final Path stopFile;
    private final Client etcd;
    private final ScheduledExecutorService resumer = Executors.newSingleThreadScheduledExecutor();
    private final List<Resumed> resumed = new CopyOnWriteArrayList<>();
    private final long startedMillis = System.currentTimeMillis();
    private long stoppedMillis;

    private WriterFleet(Path dir, Load load, String bootstrap, List<String> etcdEndpoints, String registry, String keyPrefix) {
        this.load = load;
        this.dir = dir;
        this.bootstrap = bootstrap;
        this.etcdEndpoints = List.copyOf(etcdEndpoints);
        this.registry = registry;
        this.log4j2 = Log4j2Config.write(dir.resolve("log4j2.properties"), "WARN");
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
    public static WriterFleet start(Path dir, Load load, String bootstrap, List<String> etcdEndpoints, String registry,
            String keyPrefix) throws IOException {
        return start(dir, load, bootstrap, etcdEndpoints, registry, keyPrefix, Map.of());
    }

    /**
     * Like {@link #start(Path, Load, String, List, String, String)}, with some processes on a skewed wall clock.
     *
     * @param skewed per process index, the libfaketime offset its clock starts with (e.g. {@code +37s}, {@code -2m})
     */
    public static WriterFleet start(Path dir, Load load, String bootstrap, List<String> etcdEndpoints, String registry,
            String keyPrefix, Map<Integer, String> skewed) throws IOException {
        Files.createDirectories(dir);
        WriterFleet fleet = new WriterFleet(dir, load, bootstrap, etcdEndpoints, registry, keyPrefix);
        for (int p = 0; p < load.processes(); p++) {
            Worker worker = new Worker(p);
            if (skewed.containsKey(p)) {
                worker.clock = dir.resolve("writer-" + p + ".faketime");
                Files.writeString(worker.clock, skewed.get(p) + "\n");
            }
            fleet.workers.add(worker);
            fleet.launch(worker);
        }
        fleet.resumer.scheduleWithFixedDelay(fleet::watch, 200, 200, TimeUnit.MILLISECONDS);
        return fleet;
    }

    public List<String> keys() {
        return keys;
    }

    /** The number of writer processes. */
    public int processes() {
        return workers.size();
    }

    /** Writer process {@code p}'s process id, which a restart (worker-kill) changes. */
    public long pid(int p) {
        return processOf(workers.get(p)).pid();
    }

    /** Whether process {@code p} runs with a libfaketime clock. */
    public boolean skewed(int p) {
        return workers.get(p).clock != null;
    }

    /** One line for the output: the load. */
    public String describe() {
        return String.format("%d writer processes x %d writers on %d keys, lease TTL %d ms, stall chance %.3f per write",
                load.processes(), load.threads(), load.keys(), load.ttl().toMillis(), load.stallChance());
    }

    /** Tells the writers to stop after their current write, resumes any stopped one, waits until all have exited. */
    public void stop() throws Exception {
        Files.createFile(stopFile);
        Await.until("the writer processes to finish", Duration.ofMinutes(2), null,
                () -> workers.stream().noneMatch(w -> processOf(w).isAlive()));
        stoppedMillis = System.currentTimeMillis();
        resumer.shutdownNow();
    }

    /** What the writers did, every incarnation of every process; complete after {@link #stop()}. */
    public WriterLedger ledger() throws IOException {
        return WriterLedger.read(ledgers);
    }

    /** Acknowledged writes per second over the run. */
    public double writesPerSecond() throws IOException {
        return ledger().acks().size() * 1000.0 / Math.max(1, stoppedMillis - startedMillis);
    }

    public List<Resumed> resumed() {
        return resumed;
    }

    /**
     * Stops process {@code p} whole (SIGSTOP: keep-alives, writes and all) for {@code length}, unless it is already stopped.
     *
     * @return whether it was stopped
     */
    public boolean pause(int p, Duration length) {
        synchronized (this) {
            Worker worker = workers.get(p);
            if (worker.stopping != null || worker.pausedUntil != 0 || !worker.process.isAlive()) {
                return false;
            }
            worker.process.signal("STOP");
            worker.pausedUntil = System.currentTimeMillis() + length.toMillis();
            return true;
        }
    }

    /** Kills process {@code p} with SIGKILL and starts its next incarnation (a new ledger, new write ids). */
    public void kill(int p) throws Exception {
        synchronized (this) {
            Worker worker = workers.get(p);
            worker.process.signal("KILL");
            worker.process.waitFor(Duration.ofSeconds(10));
            worker.stopping = null;
            worker.pausedUntil = 0;
            worker.handled = 0;
            worker.incarnation++;
            launch(worker);
        }
    }

    /** Sets skewed process {@code p}'s wall clock to {@code offset} from the real one (libfaketime's syntax: {@code +90s}). */
    public void setClock(int p, String offset) throws IOException {
        Path clock = workers.get(p).clock;
        if (clock == null) {
            throw new IllegalArgumentException("writer process " + p + " does not run under libfaketime");
        }
        Files.writeString(clock, offset + "\n");
    }

    /** The file whose existence lets a writer's {@code stall}-th stalled write go on (after the test resumed its process). */
    static Path resumedFile(Path ledger, int stall) {
        return ledger.resolveSibling(ledger.getFileName() + ".resumed-" + stall);
    }

    private void launch(Worker worker) throws IOException {
        int p = worker.index;
        String name = "writer-" + p + (worker.incarnation == 0 ? "" : "." + worker.incarnation);
        worker.ledger = dir.resolve(name + ".ledger");
        ledgers.add(worker.ledger);
        List<String> args = List.of("name=w" + p + (worker.incarnation == 0 ? "" : "." + worker.incarnation),
                "bootstrap=" + bootstrap, "etcd=" + String.join(",", etcdEndpoints), "registry=" + registry,
                "keys=" + String.join(",", keys), "threads=" + load.threads(), "ttl.ms=" + load.ttl().toMillis(),
                "stall.chance=" + load.stallChance(), "pause.ms=" + load.pause().toMillis(),
                "first.id=" + ((p + 1) * 1_000_000_000L + worker.incarnation * 10_000_000L), "ledger=" + worker.ledger,
                "stop.file=" + stopFile,
                "clock.offset.ns=" + (System.currentTimeMillis() * 1_000_000 - System.nanoTime()));
        Map<String, String> env = new HashMap<>();
        if (worker.clock != null) {
            // The wall clock only: the lease deadline runs on System.nanoTime, as a real host's monotonic clock does.
            env.put("LD_PRELOAD", LIBFAKETIME.toString());
            env.put("FAKETIME_TIMESTAMP_FILE", worker.clock.toString());
            // Re-read the clock file once a second, not on every call: with FAKETIME_NO_CACHE each currentTimeMillis reads the
            // file (34 us here), and a writer JVM then crawled so that it never acquired a lock.
            env.put("FAKETIME_CACHE_DURATION", "1");
            env.put("FAKETIME_DONT_FAKE_MONOTONIC", "1");
        }
        worker.process = ChildProcess.start(name,
                Jvm.command(List.of("-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"), log4j2,
                        ChaosWriter.class.getName(), args),
                dir, dir.resolve(name + ".log"), env);
    }

    private synchronized ChildProcess processOf(Worker worker) {
        return worker.process;
    }

    /** One round of the watcher: stops processes that asked for a stall, resumes stopped and paused ones when due. */
    private synchronized void watch() {
        for (Worker worker : workers) {
            try {
                if (worker.pausedUntil != 0) {
                    if (System.currentTimeMillis() >= worker.pausedUntil || Files.exists(stopFile)) {
                        worker.process.signal("CONT");
                        worker.pausedUntil = 0;
                    }
                } else if (worker.stopping != null) {
                    maybeResume(worker);
                } else {
                    List<WriterLedger.Stall> stalls = WriterLedger.read(List.of(worker.ledger)).stalls();
                    if (stalls.size() > worker.handled) {
                        stop(worker, stalls.get(worker.handled));
                    }
                }
            } catch (Exception e) {
                // etcd or /proc not answering this round (a member is down): try again next round
            }
        }
    }

    private void stop(Worker worker, WriterLedger.Stall stall) throws Exception {
        ChildProcess process = worker.process;
        process.signal("STOP");
        Await.until(process.name() + " to be stopped", Duration.ofSeconds(30), null, () -> stopped(process));
        worker.stopping = stall;
        worker.stoppedAt = System.currentTimeMillis();
    }

    private void maybeResume(Worker worker) throws Exception {
        WriterLedger.Stall stall = worker.stopping;
        long since = worker.stoppedAt;
        boolean tookOver = expired(stall.lease()) && newerHolder(stall.key(), stall.token());
        if (tookOver || Files.exists(stopFile) || System.currentTimeMillis() - since > MAX_STALL.toMillis()) {
            worker.process.signal("CONT");
            worker.handled++;
            Files.createFile(resumedFile(worker.ledger, worker.handled));
            worker.stopping = null;
            resumed.add(new Resumed(worker.process.name(), stall.key(), stall.token(), since, System.currentTimeMillis(),
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
    public synchronized void close() {
        resumer.shutdownNow();
        for (Worker worker : workers) {
            if (worker.process.isAlive()) {
                worker.process.signal("CONT");
            }
            worker.process.close();
        }
        etcd.close();
    }
}
