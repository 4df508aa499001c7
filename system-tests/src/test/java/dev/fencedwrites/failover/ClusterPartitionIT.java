package dev.fencedwrites.failover;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.devtools.chaos.LinkFaults;
import dev.fencedwrites.devtools.chaos.WriterLedger;
import dev.fencedwrites.devtools.chaos.ZombieWriters;
import dev.fencedwrites.failover.Decided.Kind;
import dev.fencedwrites.failover.Decided.Output;
import dev.fencedwrites.history.PipelineVerifier;
import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.services.ChildProcess;
import dev.fencedwrites.services.EtcdCluster;
import dev.fencedwrites.services.NetworkLinks;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.opentest4j.TestAbortedException;

/**
 * Needs real services and root: network partitions in the clustered stack (3 Kafka nodes, 3 etcd members, 2 enforcer
 * instances, 2 distributed Connect workers) under the failover load. Each cut is made of iptables rules on one process's
 * own group id ({@link NetworkLinks}, {@link LinkFaults}), so the cut process keeps running: the faults fencing exists for.
 * One cluster start; each scenario checks its own claim, prints what it measured, and leaves the cluster whole.
 */
@Tag("failover")
@Timeout(value = 20, unit = TimeUnit.MINUTES)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ClusterPartitionIT {
    private static final int WARM_UP = 80;
    /** How many writer processes are cut from etcd, one after the other, each while it holds a lease. */
    private static final int WRITER_CUTS = 3;
    /** A writer thread's name in the ledger: {@code w2-0}, or {@code w2.1-0} once process 2 was restarted. */
    private static final Pattern WRITER = Pattern.compile("^w(\\d+)[.-]");
    private static final int BETWEEN = 60;
    /** The share of packets the zombie Connect worker's link to PostgreSQL drops: its batches are written slowly. */
    private static final double POSTGRES_LOSS = 0.5;
    /** How long the zombie's slow link to PostgreSQL lasts before its cut from the brokers: it falls behind meanwhile. */
    private static final long LAG_MILLIS = 10_000;
    /** How long the resumed zombie stays cut from the brokers. */
    private static final long ZOMBIE_MILLIS = 20_000;
    /** The zombie scenario's run name; its keys are this, a dash and a number. */
    private static final String ZOMBIE_RUN = "connect-zombie";
    private static final String ZOMBIE_KEYS = ZOMBIE_RUN + "-";
    /** The sink task's log line for a record the guard refused, with its time (the stack logs in this machine's zone). */
    private static final Pattern REFUSED = Pattern.compile("^(\\d\\d:\\d\\d:\\d\\d\\.\\d{3}) .*fenced at the database: ");

    private static Path dir;
    private static NetworkLinks network;
    private static LocalStack stack;
    private static LinkFaults links;
    private static SinkAudit audit;
    /** The control sink's table (guard off, from the input topic). */
    private static SinkAudit control;

    @BeforeAll
    static void startCluster() throws Exception {
        NetworkLinks.unavailable().ifPresent(reason -> {
            if (Boolean.getBoolean("fence.tools.required")) {
                throw new IllegalStateException(reason);
            }
            throw new TestAbortedException("skipped: " + reason);
        });
        ChildProcess.ownGroupEach();
        network = NetworkLinks.open();
        dir = Files.createTempDirectory("cluster-partition");
        stack = LocalStack.builder(dir.resolve("stack")).cluster().connectors(BillingConnectors.set(true))
                .enforcerSettings(ClusterFailoverIT.ENFORCER).start();
        links = new LinkFaults(stack, network);
        audit = new SinkAudit(stack.postgresUrl(), BillingConnectors.TABLE);
        audit.install();
        control = new SinkAudit(stack.postgresUrl(), BillingConnectors.UNFENCED_TABLE);
        control.install();
    }

    @AfterAll
    static void stopCluster() {
        if (network != null) {
            network.close();
        }
        if (stack != null) {
            stack.close();
        }
    }

    private static FailoverRun run(String name) throws Exception {
        return FailoverRun.start(dir, name, ClusterFailoverIT.LOAD, stack.kafkaBootstrap(),
                List.of(stack.etcdEndpoints().split(",")), stack.schemaRegistryUrl(), stack::enforcerUrls);
    }

    /** Notes {@code cut} (already made), lets {@code millis} pass, heals it. */
    private static void hold(FailoverRun run, LinkFaults.Cut cut, long millis) throws InterruptedException {
        run.note(cut.detail());
        try {
            Thread.sleep(millis);
        } finally {
            links.end(cut);
        }
        run.note("healed after " + millis + " ms: " + cut.name());
    }

    /**
     * The canonical zombie: a writer process cut from etcd while it holds a lease and still reaches Kafka, three times
     * (three processes), each cut three TTLs long, so that another writer takes its keys. producer-lib's fail-safe must
     * give up every lease it held, with no write acknowledged under it while held later than the cut + TTL (+
     * {@link ZombieWriters#SLACK_MILLIS}), and nothing it sent under such a lease after the new holder's first accepted
     * write may be accepted.
     */
    @Test
    @Order(1)
    void aWriterCutFromEtcdGivesUpItsLeasesInTimeAndNothingItSendsAfterTheTakeoverIsAccepted() throws Exception {
        long ttl = ClusterFailoverIT.LOAD.ttl().toMillis();
        try (FailoverRun run = run("writer-etcd")) {
            run.awaitMoreInputs(WARM_UP);
            Map<Integer, Long> cuts = new HashMap<>();
            for (int round = 0; round < WRITER_CUTS; round++) {
                int p = await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(20))
                        .until(() -> holding(run.writers().ledger(), cuts.keySet()), process -> process >= 0);
                cuts.put(p, System.currentTimeMillis()); // before the cut: the deadline counts from here
                hold(run, links.fromEtcd("writer-etcd-" + p, "writer-" + p, run.writers().pid(p)), 3 * ttl);
                run.awaitMoreInputs(BETWEEN / 2);
            }
            FailoverRun.Findings findings = run.finish(false);
            List<ZombieWriters.Lease> held = new ArrayList<>();
            cuts.forEach((p, at) -> held.addAll(ZombieWriters.heldAtCut(findings.ledger(), p, at, ttl)));
            Set<Long> stalled = new HashSet<>();
            findings.ledger().stalls().forEach(stall -> stalled.add(stall.lease()));
            run.note("leases held at the cuts, given up after (ms): " + held.stream().map(l -> (l.gaveUpAfter().isPresent()
                    ? Long.toString(l.gaveUpAfter().getAsLong())
                    : "never") + (stalled.contains(l.lease()) ? " (stalled)" : ""))
                    .toList() + " (TTL " + ttl + " ms; a stalled writer logs its loss when it resumes)");
            assertThat(held).as("leases the cut writers held").isNotEmpty();
            // the give-up times are printed, not asserted (the ledger's lines are written after the fact); the fail-safe's claim
            // is that no write is acknowledged under a lease its writer still holds past the cut + TTL
            assertThat(held).as("every lease given up, none with a held write acknowledged later than the cut + TTL + %d ms",
                    ZombieWriters.SLACK_MILLIS).allSatisfy(lease -> {
                        assertThat(lease.gaveUpAfter()).isPresent();
                        assertThat(lease.heldLate()).isZero();
                    });
            assertThat(acceptedAfterTakeover(run, findings, held)).as("writes under a cut lease accepted after the new holder's")
                    .isEmpty();
        }
    }

    /**
     * A writer process but {@code except} one of whose threads holds a lease now, granted in the last second and neither
     * given up nor stalled, from the ledger so far; -1 when none does.
     */
    private static int holding(WriterLedger ledger, Set<Integer> except) {
        Set<Long> over = new HashSet<>();
        ledger.lost().forEach(l -> over.add(l.lease()));
        ledger.released().forEach(r -> over.add(r.lease()));
        ledger.stalls().forEach(s -> over.add(s.lease()));
        long recent = System.currentTimeMillis() - 1_000;
        return ledger.acquired().stream().filter(a -> a.millis() > recent && !over.contains(a.lease()))
                .map(a -> WRITER.matcher(a.writer())).filter(Matcher::find).mapToInt(m -> Integer.parseInt(m.group(1)))
                .filter(p -> !except.contains(p)).findFirst().orElse(-1);
    }

    /**
     * For each lease held at a cut: its writes accepted after the first accepted write of a higher token on its key (the
     * accepted topic holds a key on one partition, in order). Prints what the cut leases sent and how it was decided.
     */
    private static List<String> acceptedAfterTakeover(FailoverRun run, FailoverRun.Findings findings,
            List<ZombieWriters.Lease> held) {
        Map<Long, WriterLedger.Ack> acks = new HashMap<>();
        findings.ledger().acks().forEach(ack -> acks.put(ack.id(), ack));
        List<String> problems = new ArrayList<>();
        Map<Kind, Integer> decided = new HashMap<>();
        for (ZombieWriters.Lease lease : held) {
            List<Output> mine = findings.outputs().stream().filter(o -> o.writeId() >= 0 && acks.containsKey(o.writeId())
                    && acks.get(o.writeId()).lease() == lease.lease()).toList();
            mine.forEach(o -> decided.merge(o.kind(), 1, Integer::sum));
            if (mine.isEmpty()) {
                continue;
            }
            String key = mine.get(0).key();
            long token = mine.get(0).fence().token();
            List<Output> accepted = findings.outputs().stream().filter(o -> o.kind() == Kind.ACCEPTED && key.equals(o.key()))
                    .sorted(Comparator.comparingLong(Output::offset)).toList();
            boolean takenOver = false;
            for (Output o : accepted) {
                takenOver |= o.fence().token() > token;
                if (takenOver && o.fence().token() == token) {
                    problems.add("write " + o.writeId() + " of lease " + lease.lease() + " (" + key + "@" + token
                            + ") accepted after a higher token's write");
                }
            }
        }
        run.note("writes under the leases held at the cuts, by decision: " + decided);
        return problems;
    }

    /**
     * An enforcer instance cut from etcd: verification waits for etcd (the instance neither lets a token through unverified
     * nor stops), and after the heal the same process decides on, as the rule decides.
     */
    @Test
    @Order(2)
    void anEnforcerCutFromEtcdWaitsToVerifyAndGoesOnAfterTheHeal() throws Exception {
        try (FailoverRun run = run("enforcer-etcd")) {
            run.awaitMoreInputs(WARM_UP);
            String url = stack.enforcerUrls().get(0) + "/metrics";
            long pid = stack.enforcerPid(0);
            double errors = FailoverRun.scrape(url, "fence_enforcer_token_verification_etcd_errors_total");
            LinkFaults.Cut cut = links.fromEtcd("enforcer-etcd", "enforcer-0", pid);
            run.note(cut.detail());
            double waiting = 0;
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(12);
            try {
                while (System.nanoTime() < end) {
                    waiting = Math.max(waiting, FailoverRun.scrape(url, "fence_enforcer_token_verification_waiting"));
                    Thread.sleep(200);
                }
            } finally {
                links.end(cut);
            }
            long healed = System.nanoTime();
            double failedReads = FailoverRun.scrape(url, "fence_enforcer_token_verification_etcd_errors_total") - errors;
            run.note(String.format("healed after 12 s: at most %.0f stream threads waited for etcd at once, %.0f etcd reads "
                    + "failed", waiting, failedReads));
            assertThat(waiting + failedReads).as("verifications that waited for etcd or failed to read it during the cut")
                    .isPositive();
            run.awaitAnswers(stack.enforcerUrls().get(0), 0, healed, "after its link to etcd was healed");
            assertThat(stack.enforcerPid(0)).as("the same enforcer process").isEqualTo(pid);
            run.awaitMoreInputs(BETWEEN);
            run.finish(true);
        }
    }

    /**
     * An enforcer instance cut from the brokers past {@code streams.session.timeout.ms}: the other instance takes its
     * partitions over; the cut one is a zombie whose open transaction the coordinator fences (exactly_once_v2), and after
     * the heal it rejoins the group as the same process. Each input is decided once, as the rule decides, and the answers
     * of {@code /fences/{key}} never decrease: the zombie answers 503 from a coordinator silence on until commits prove it
     * owns its keys again, not the fences of its stale store.
     */
    @Test
    @Order(3)
    void anEnforcerCutFromTheBrokersIsTakenOverFencedAndRejoins() throws Exception {
        try (FailoverRun run = run("enforcer-kafka")) {
            run.awaitMoreInputs(WARM_UP);
            long pid = stack.enforcerPid(1);
            int members = run.enforcerMembers();
            long cutNanos = System.nanoTime();
            LinkFaults.Cut cut = links.fromBrokers("enforcer-kafka", "enforcer-1", pid);
            run.note(cut.detail() + "; " + members + " members in the group");
            try {
                Duration takeover = run.awaitTakeover(members, cutNanos);
                run.note(String.format("enforcer takeover after the cut: %.1f s", takeover.toMillis() / 1e3));
                run.awaitMoreInputs(BETWEEN / 2);
            } finally {
                links.end(cut);
            }
            long healed = System.nanoTime();
            await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(200))
                    .until(() -> run.enforcerMembers() >= members);
            long rejoined = System.nanoTime();
            run.note(String.format("enforcer-1 rejoined the group %.1f s after the heal (%d members)", (rejoined - healed) / 1e9,
                    members));
            run.awaitAnswers(stack.enforcerUrls().get(1), 1, rejoined, "after it rejoined");
            assertThat(stack.enforcerPid(1)).as("the same enforcer process").isEqualTo(pid);
            run.awaitMoreInputs(BETWEEN);
            run.finish(true);
        }
    }

    /**
     * A zombie sink task. A Connect worker whose link to PostgreSQL drops half its packets falls behind and holds a batch;
     * it is paused (SIGSTOP) and cut from the brokers. Its sink tasks move to the other worker; PostgreSQL ends its open
     * transactions (they would hold their rows' locks); the other worker writes the whole input. Then the zombie is
     * resumed, still cut from the brokers but reaching PostgreSQL, and retries its batch: the guard refuses what is behind,
     * so the guarded table equals the rule, while the control table (guard off, from the input topic) takes the late
     * writes and the control run's verify reports the rows they left behind. After the heal the worker runs a task
     * again: the fault stops nothing for good. The zombie's writes are told apart by its connections' ports.
     */
    @Test
    @Order(4)
    void aZombieSinkTaskWritesLateTheGuardRefusesWhatIsBehindAndTheControlTableTakesIt() throws Exception {
        try (FailoverRun run = run(ZOMBIE_RUN)) {
            run.awaitMoreInputs(WARM_UP);
            Map<Integer, String> placement = ClusterFailoverIT.taskPlacement(stack);
            Map<Integer, String> controlPlacement = ClusterFailoverIT.taskPlacement(stack, BillingConnectors.UNFENCED_CONNECTOR);
            // the zombie must run a task of each sink: the guarded one and the control
            String zombieId = placement.values().stream().filter(controlPlacement::containsValue).findFirst()
                    .orElseThrow(() -> new AssertionError("no worker runs a task of both sinks: " + placement + ", "
                            + controlPlacement));
            Zombie zombie = new Zombie(stack.connectUrls().indexOf("http://" + zombieId), stack.connectUrls().stream()
                    .filter(url -> !url.endsWith(zombieId)).findFirst().orElseThrow().substring("http://".length()));
            run.note("sink tasks on workers " + placement + ", control sink tasks on " + controlPlacement);
            // verify the control table while the zombie is still cut and its late writes are the rows' last: after the
            // heal its worker rejoins, and a task that restarts from the group's committed offsets may rewrite them
            zombie.run(run, () -> controlVerifyReportsWhatTheZombieLeft(run, zombie));
            List<SinkAudit.Change> guarded = audit.changesFrom(zombie.ports, zombie.moved, zombie.healed);
            List<SinkAudit.Change> unguarded = control.changesFrom(zombie.ports, zombie.moved, zombie.healed);
            long lowered = unguarded.stream().filter(SinkAudit.Change::lowered).count();
            long refused = guardRefusals(stack.dir().resolve(zombie.index == 0 ? "connect" : "connect-" + zombie.index)
                    .resolve("connect.log"), zombie.resumed, zombie.healed);
            run.note(String.format("after its tasks moved, the zombie updated %d rows of the guarded table (%d lowering a fence) "
                    + "and the guard refused %d of its records; it updated %d rows of the control table, %d to an older fence",
                    guarded.size(), guarded.stream().filter(SinkAudit.Change::lowered).count(), refused, unguarded.size(),
                    lowered));
            await().atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(500)).until(() -> {
                Map<Integer, String> now = ClusterFailoverIT.taskPlacement(stack);
                return now.size() == 2 && now.containsValue(zombieId);
            });
            run.note(String.format("every sink task RUNNING, the zombie's worker running one again, %.1f s after the heal: %s",
                    (System.currentTimeMillis() - zombie.healed) / 1e3, ClusterFailoverIT.taskPlacement(stack)));
            FailoverRun.Findings findings = run.finish(false);
            SingleStackFailoverIT.assertSinkMatches(audit, run, findings, ZOMBIE_KEYS);
            assertThat(refused).as("the zombie's late records refused by the guard").isPositive();
            assertThat(lowered).as("the zombie's late writes that lowered a row's fence in the control table").isPositive();
        }
    }

    /** The zombie sink task's worker, its connections' ports, and when (wall clock, ms) its tasks moved, it resumed, healed. */
    private static final class Zombie {
        final int index;
        final String survivorId;
        final Set<Integer> ports = new TreeSet<>();
        long moved;
        long resumed;
        long healed;

        Zombie(int index, String survivorId) {
            this.index = index;
            this.survivorId = survivorId;
        }

        /** Makes this worker a zombie sink task, runs {@code whileZombie} after its late writes, then heals. */
        void run(FailoverRun run, Callable<?> whileZombie) throws Exception {
            long pid = stack.connectPid(index);
            int postgres = links.postgresPort();
            ports.addAll(NetworkLinks.connectionPorts(pid, postgres));
            LinkFaults.Cut slow = links.slowToPostgres("connect-postgres", "connect-" + index, pid, POSTGRES_LOSS);
            LinkFaults.Cut cut = null;
            run.note(slow.detail() + "; its connections to PostgreSQL from " + ports);
            try {
                Thread.sleep(LAG_MILLIS);
                ports.addAll(NetworkLinks.connectionPorts(pid, postgres));
                stack.pauseConnect(index);
                long cutMillis = System.currentTimeMillis();
                cut = links.fromBrokers("connect-kafka", "connect-" + index, pid);
                run.note("SIGSTOP of connect-" + index + " (a batch in hand, its transaction open); " + cut.detail());
                await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(200)).until(() -> movedTo(survivorId));
                moved = System.currentTimeMillis();
                run.note(String.format("every sink task RUNNING on worker %s %.1f s after the cut; PostgreSQL ended %d sessions "
                        + "of the zombie", survivorId, (moved - cutMillis) / 1e3, terminate(ports)));
                run.stopWriters();
                await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(500)).until(() -> run.log().committedToEnd(
                        "connect-" + BillingConnectors.UNFENCED_CONNECTOR, List.of(FenceTopics.INPUT)));
                run.note("worker " + survivorId + " has written the whole input to the control table");
                links.end(slow);
                resumed = System.currentTimeMillis();
                stack.resumeConnect(index);
                run.note("SIGCONT of connect-" + index + ", still cut from the brokers: a zombie sink task");
                for (long end = resumed + ZOMBIE_MILLIS; System.currentTimeMillis() < end; Thread.sleep(200)) {
                    ports.addAll(NetworkLinks.connectionPorts(pid, postgres)); // a retry may open new connections
                }
                whileZombie.call();
            } finally {
                try {
                    if (cut != null) {
                        links.end(cut);
                    }
                    links.end(slow);
                } finally {
                    if (stack.connectAlive(index)) {
                        stack.resumeConnect(index);
                    }
                }
            }
            healed = System.currentTimeMillis();
        }
    }

    /**
     * The control run's verify (the input topic as the accepted topic, the control table as the sink's, as {@code fence
     * chaos --control} runs it) reports every row of this scenario the zombie left below a fence it had held (its last
     * update the zombie's), and there is at least one; any other row it reports must be behind too (a stalled writer's
     * stale write lands in the control table as well). Run while the zombie is still cut, after the other worker wrote
     * the whole input: the zombie's late writes are then the rows' last. The zombie may still write while verify reads, so
     * a row counts when it is behind before verify or after it.
     */
    private static Void controlVerifyReportsWhatTheZombieLeft(FailoverRun run, Zombie zombie) throws Exception {
        String group = "connect-" + BillingConnectors.UNFENCED_CONNECTOR;
        await().atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(500))
                .until(() -> run.log().committedToEnd(group, List.of(FenceTopics.INPUT)));
        Set<String> byZombie = behind(zombie);
        Set<String> behind = behind(null);
        PipelineVerifier.Options options = PipelineVerifier.Options.control(FenceTopics.INPUT, FenceTopics.REJECTED,
                PipelineLog.ENFORCER_GROUP, true, group, BillingConnectors.UNFENCED_TABLE);
        PipelineVerifier.Result verify;
        try (Connection connection = DriverManager.getConnection(stack.postgresUrl());
                PrintWriter out = new PrintWriter(Files.newBufferedWriter(stack.dir().resolve("control-verify.txt")))) {
            verify = PipelineVerifier.run(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap()), options,
                    PipelineVerifier.Database.withRegistry(connection, stack.schemaRegistryUrl()), out);
        }
        behind.addAll(behind(null));
        Set<String> reported = new TreeSet<>();
        verify.findings().described().stream().filter(v -> v.kind().name().startsWith("ROW_"))
                .filter(v -> v.key().startsWith(ZOMBIE_KEYS)).forEach(v -> reported.add(v.key()));
        run.note("control verify: " + verify.violations() + " violations in all; control rows the zombie's late writes left "
                + "behind: " + byZombie + "; rows behind in all: " + behind + "; rows verify reports: " + reported);
        assertThat(byZombie).as("control rows the zombie's late writes left below a fence they had held").isNotEmpty();
        assertThat(reported).as("rows verify reports in the control table").containsAll(byZombie).isSubsetOf(behind);
        return null;
    }

    /**
     * This scenario's control table keys whose last update is below a fence the key had held: by one of the zombie's late
     * writes, or ({@code zombie} null) by any.
     */
    private static Set<String> behind(Zombie zombie) throws SQLException {
        List<SinkAudit.Change> late = zombie == null
                ? null
                : control.changesFrom(zombie.ports, zombie.moved, System.currentTimeMillis());
        Map<String, SinkAudit.Change> last = new HashMap<>();
        Map<String, Fence> highest = new HashMap<>();
        control.history().forEach(change -> {
            last.put(change.key(), change);
            highest.merge(change.key(), change.after(), (a, b) -> Decided.above(a, b) ? a : b);
        });
        Set<String> behind = new TreeSet<>();
        last.forEach((key, change) -> {
            if (key.startsWith(ZOMBIE_KEYS) && (late == null || late.contains(change))
                    && Decided.above(highest.get(key), change.after())) {
                behind.add(key);
            }
        });
        return behind;
    }

    /** Ends the PostgreSQL sessions of the connections from {@code clientPorts}; returns how many there were. */
    private static int terminate(Set<Integer> clientPorts) throws SQLException {
        int ended = 0;
        try (Connection connection = DriverManager.getConnection(stack.postgresUrl());
                PreparedStatement statement = connection.prepareStatement(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE client_port = ANY(?)")) {
            statement.setArray(1, connection.createArrayOf("int4", clientPorts.toArray()));
            try (ResultSet rows = statement.executeQuery()) {
                while (rows.next()) {
                    ended += rows.getBoolean(1) ? 1 : 0;
                }
            }
        }
        return ended;
    }

    /** The records the guard refused in a Connect worker's log from {@code fromMillis} until {@code untilMillis}. */
    private static long guardRefusals(Path log, long fromMillis, long untilMillis) throws IOException {
        // the log's times have no date: each is taken on the day of fromMillis, or the next when it is over an hour earlier
        ZonedDateTime from = Instant.ofEpochMilli(fromMillis).atZone(ZoneId.systemDefault());
        long refused = 0;
        for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
            Matcher refusal = REFUSED.matcher(line);
            if (refusal.find()) {
                LocalTime time = LocalTime.parse(refusal.group(1));
                long at = from.with(time).plusDays(time.isBefore(from.toLocalTime().minusHours(1)) ? 1 : 0).toInstant()
                        .toEpochMilli();
                refused += at >= fromMillis && at <= untilMillis ? 1 : 0;
            }
        }
        return refused;
    }

    /** Whether every task of both sinks runs on worker {@code survivorId} (host:port). */
    private static boolean movedTo(String survivorId) throws Exception {
        Map<Integer, String> fencedSink = ClusterFailoverIT.taskPlacement(stack);
        Map<Integer, String> controlSink = ClusterFailoverIT.taskPlacement(stack, BillingConnectors.UNFENCED_CONNECTOR);
        return fencedSink.size() == 2 && controlSink.size() == 2 && fencedSink.values().stream().allMatch(survivorId::equals)
                && controlSink.values().stream().allMatch(survivorId::equals);
    }

    /**
     * An etcd follower cut from the other members, then the leader, twice: a minority loses nothing, the leader's cut
     * elects another, and the lock's tokens stay unique and rising in grant order per key.
     */
    @Test
    @Order(5)
    void etcdMembersCutFromTheOthersKeepTokensUniqueAndRising() throws Exception {
        EtcdCluster etcd = stack.etcdCluster().orElseThrow();
        try (FailoverRun run = run("etcd-cut")) {
            run.awaitMoreInputs(WARM_UP);
            for (int round = 0; round < 3; round++) {
                int leader = etcd.leader();
                int member = round == 0 ? (leader + 1) % etcd.size() : leader;
                hold(run, links.etcdMember("etcd-cut-" + round, member), 8_000);
                run.awaitMoreInputs(BETWEEN / 2);
                run.note("etcd leader now member " + etcd.leader());
            }
            FailoverRun.Findings findings = run.finish(false);
            GrantOrder order = GrantOrder.check(findings.ledger());
            run.note(String.format("tokens unique and rising per key in grant order: %d acquisitions (%d logged already lost, "
                    + "left out), %d problems", findings.ledger().acquired().size(), order.leftOut(), order.problems().size()));
            assertThat(order.problems()).as("tokens in grant order per key").isEmpty();
        }
    }

    /**
     * A broker cut from the other brokers (clients still reach it): leadership moves and the in-sync replicas shrink; no
     * acknowledged write is lost and each input is decided once, as the rule decides.
     */
    @Test
    @Order(6)
    void aBrokerCutFromTheOthersLosesNoAcknowledgedWrite() throws Exception {
        try (FailoverRun run = run("broker-cut")) {
            run.awaitMoreInputs(WARM_UP);
            hold(run, links.broker("broker-cut", 1), 12_000);
            run.awaitMoreInputs(BETWEEN);
            run.finish(false);
        }
    }

    /**
     * Slow links: a writer's and an enforcer instance's links to the brokers drop a quarter of their packets at once, so
     * records reach the enforcer late and out of wall-clock order; each input is still decided once, as the rule decides.
     */
    @Test
    @Order(7)
    void slowLinksFromAWriterAndAnEnforcerToTheBrokersChangeNoDecision() throws Exception {
        try (FailoverRun run = run("slow-link")) {
            run.awaitMoreInputs(WARM_UP);
            LinkFaults.Cut writer = links.slow("slow-link-writer", "writer-0", run.writers().pid(0), false);
            run.note(writer.detail());
            try {
                hold(run, links.slow("slow-link-enforcer", "enforcer-0", stack.enforcerPid(0), false), 15_000);
            } finally {
                links.end(writer);
            }
            run.awaitMoreInputs(BETWEEN);
            run.finish(true);
        }
    }

}
