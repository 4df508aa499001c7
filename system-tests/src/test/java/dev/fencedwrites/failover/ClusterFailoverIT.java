package dev.fencedwrites.failover;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.devtools.chaos.WriterFleet;
import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.services.EtcdCluster;
import dev.fencedwrites.services.Http;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TransactionListing;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * Needs real services: failover of every component of the clustered stack (3 Kafka nodes, 3 etcd
 * members, 2 enforcer instances, 2 distributed Connect workers) under a steady load of real
 * producer-lib writers, some stalled past their lease with SIGSTOP. Elections, replica
 * leadership, consumer-group and Connect rebalances and producer fencing are the real services'.
 * One cluster start; the scenarios run in order and each leaves the cluster whole.
 */
@Tag("failover")
@Timeout(value = 15, unit = TimeUnit.MINUTES)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ClusterFailoverIT {
    /** An instance killed or paused leaves the consumer group after 6 s instead of the default 45 s. */
    static final Map<String, String> ENFORCER = Map.of("streams.session.timeout.ms", "6000",
            "streams.heartbeat.interval.ms", "1000");
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Inputs written before the first fault: every writer has taken, lost and retaken leases by then. */
    private static final int WARM_UP = 120;
    /** Inputs written between two steps of a scenario: the load goes on through each fault and recovery. */
    private static final int BETWEEN = 80;
    /**
     * The default stack's load with four times its chance of a stall, so that each of these shorter scenarios (about 600
     * inputs) still holds stale writes after takeovers (check: stale writes rejected).
     */
    static final WriterFleet.Load LOAD = new WriterFleet.Load(3, 2, 8, Duration.ofSeconds(3), 0.02,
            Duration.ofMillis(20));

    private static Path dir;
    private static LocalStack stack;
    private static SinkAudit audit;

    @BeforeAll
    static void startCluster() throws Exception {
        dir = Files.createTempDirectory("cluster-failover");
        long begin = System.nanoTime();
        stack = LocalStack.builder(dir.resolve("stack")).cluster().connectors(BillingConnectors.set(false))
                .enforcerSettings(ENFORCER).start();
        System.out.printf("[cluster] ready in %.1f s: %d Kafka nodes, %d etcd members, %d enforcers, %d Connect workers%n",
                (System.nanoTime() - begin) / 1e9, stack.brokerCount(), etcd().size(), stack.enforcerUrls().size(),
                stack.connectUrls().size());
        audit = new SinkAudit(stack.postgresUrl(), BillingConnectors.TABLE);
        audit.install();
    }

    @AfterAll
    static void stopCluster() {
        if (stack != null) {
            stack.close();
        }
    }

    private static EtcdCluster etcd() {
        return stack.etcdCluster().orElseThrow();
    }

    private static FailoverRun run(String name) throws Exception {
        return FailoverRun.start(dir, name, LOAD, stack.kafkaBootstrap(),
                List.of(stack.etcdEndpoints().split(",")), stack.schemaRegistryUrl(), stack::enforcerUrls);
    }

    @Test
    @Order(1)
    void aBrokerKilledAndRestartedMidLoadLosesDuplicatesAndAcceptsNothingStale() throws Exception {
        try (FailoverRun run = run("broker")) {
            run.awaitMoreInputs(WARM_UP);
            stack.killBroker(1);
            run.note("kill -9 of Kafka node 1 (of " + stack.brokerCount() + ")");
            run.awaitMoreInputs(BETWEEN);
            long restarting = System.nanoTime();
            stack.restartBroker(1);
            run.note(String.format("Kafka node 1 restarted, no partition under-replicated after %.1f s",
                    (System.nanoTime() - restarting) / 1e9));
            run.awaitMoreInputs(BETWEEN);
            run.finish(false);
        }
    }

    @Test
    @Order(2)
    void anEnforcerKilledAndOnePausedPastItsSessionAreTakenOverAndTheZombieIsFenced() throws Exception {
        try (FailoverRun run = run("enforcer")) {
            run.awaitMoreInputs(WARM_UP);
            bothInstancesAnswerForEveryKeyAndVerifyTokens(run);
            int members = run.enforcerMembers();
            long killed = System.nanoTime();
            stack.killEnforcer(1);
            run.note("kill -9 of enforcer instance 1 (" + members + " members in the group)");
            Duration takeover = run.awaitTakeover(members, killed);
            run.note(String.format("enforcer takeover after the kill: %.1f s", takeover.toMillis() / 1e3));
            awaitSurvivorAnswers(run, 0, killed);
            run.awaitMoreInputs(BETWEEN);
            long restarted = System.nanoTime();
            stack.restartEnforcer(1);
            run.note("enforcer instance 1 restarted");
            awaitAnswers(run, 1, restarted, "after its restart");
            run.awaitMoreInputs(BETWEEN);

            members = run.enforcerMembers();
            long paused = System.nanoTime();
            stack.pauseEnforcer(0);
            run.note("SIGSTOP of enforcer instance 0, past streams.session.timeout.ms=6000");
            takeover = run.awaitTakeover(members, paused);
            run.note(String.format("enforcer takeover after the pause: %.1f s", takeover.toMillis() / 1e3));
            awaitSurvivorAnswers(run, 1, paused);
            run.awaitMoreInputs(BETWEEN);
            long resumed = System.nanoTime();
            stack.resumeEnforcer(0);
            run.note("SIGCONT of enforcer instance 0: a zombie until it rejoins; its open transaction must be fenced");
            awaitAnswers(run, 0, resumed, "after it was resumed and rejoined");
            run.awaitMoreInputs(BETWEEN);
            run.finish(true);
        }
    }

    /**
     * Before any fault: each instance answers {@code /fences/{key}} for every key, those the other owns by forwarding (so
     * the answers name both instances), 404 for a key without a fence, and both verified tokens in etcd (on,
     * since {@code etcd.endpoints} is set).
     */
    private static void bothInstancesAnswerForEveryKeyAndVerifyTokens(FailoverRun run) throws Exception {
        long begin = System.nanoTime();
        for (String url : stack.enforcerUrls()) {
            await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(200))
                    .until(() -> run.watch().answeredEveryKeySince(url, begin));
            assertThat(Http.get(url + "/fences/no-such-key").statusCode()).as("%s for a key without a fence", url)
                    .isEqualTo(404);
            assertThat(verifiedTokens(url)).as("tokens %s verified in etcd", url).isPositive();
        }
        Set<String> servedBy = run.watch().servedBySince(begin);
        assertThat(servedBy).as("instances that served the answers (the owners of the keys)").hasSize(2);
        run.note("both enforcer instances answered /fences/{key} for every key (served by " + servedBy
                + ", the other's keys forwarded) and verified tokens in etcd");
    }

    private static double verifiedTokens(String url) throws Exception {
        return FailoverRun.scrape(url + "/metrics", "fence_enforcer_token_verifications_total{outcome=\"verified\"");
    }

    private static void awaitSurvivorAnswers(FailoverRun run, int survivor, long sinceNanos) {
        awaitAnswers(run, survivor, sinceNanos, "while the other was out");
    }

    /** Waits until instance {@code i} answered 200 for every key, each asked after {@code sinceNanos} (for check (c)). */
    private static void awaitAnswers(FailoverRun run, int i, long sinceNanos, String when) {
        run.awaitAnswers(stack.enforcerUrls().get(i), i, sinceNanos, when);
    }

    @Test
    @Order(3)
    void aConnectWorkerKilledMidLoadHandsItsTasksToTheOtherAndNoRowFenceDecreases() throws Exception {
        try (FailoverRun run = run("connect")) {
            run.awaitMoreInputs(WARM_UP);
            Map<Integer, String> placement = taskPlacement(stack);
            int victim = stack.connectUrls().indexOf("http://" + placement.get(0));
            int survivor = 1 - victim;
            String survivorId = stack.connectUrls().get(survivor).substring("http://".length());
            run.note("sink tasks on workers " + placement + "; kill -9 of Connect worker " + victim);
            long killed = System.nanoTime();
            stack.killConnect(victim);
            await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(200))
                    .until(() -> taskPlacement(stack).values().stream().allMatch(survivorId::equals)
                            && taskPlacement(stack).size() == 2);
            run.note(String.format("Connect task move: every sink task RUNNING on worker %s %.1f s after the kill", survivorId,
                    (System.nanoTime() - killed) / 1e9));
            run.awaitMoreInputs(BETWEEN);
            stack.restartConnect(victim);
            run.note("Connect worker " + victim + " restarted; sink tasks now on workers " + taskPlacement(stack));
            run.awaitMoreInputs(BETWEEN);
            FailoverRun.Findings findings = run.finish(false);
            SingleStackFailoverIT.assertSinkMatches(audit, run, findings, "connect-");
        }
    }

    /** The sink's RUNNING tasks by id, with the worker id (host:port) each runs on, from the Connect REST API. */
    static Map<Integer, String> taskPlacement(LocalStack stack) throws Exception {
        return taskPlacement(stack, BillingConnectors.SINK_CONNECTOR);
    }

    /** {@code connector}'s RUNNING tasks by id, with the worker id (host:port) each runs on. */
    static Map<Integer, String> taskPlacement(LocalStack stack, String connector) throws Exception {
        for (String url : stack.connectUrls()) {
            try {
                JsonNode status = JSON.readTree(Http.get(url + "/connectors/" + connector + "/status").body());
                Map<Integer, String> running = new HashMap<>();
                status.path("tasks").forEach(task -> {
                    if ("RUNNING".equals(task.path("state").asText())) {
                        running.put(task.path("id").asInt(), task.path("worker_id").asText());
                    }
                });
                return running;
            } catch (IOException e) {
                // that worker is down: ask the next
            }
        }
        throw new IllegalStateException("no Connect worker answered");
    }

    @Test
    @Order(4)
    void theEtcdLeaderKilledRepeatedlyKeepsTokensUniqueAndRisingAndNothingStaleIsAccepted() throws Exception {
        try (FailoverRun run = run("etcd")) {
            run.awaitMoreInputs(WARM_UP);
            for (int round = 0; round < 3; round++) {
                int leader = etcd().leader();
                etcd().kill(leader);
                run.note("kill -9 of the etcd leader, member " + leader);
                run.awaitMoreInputs(BETWEEN);
                etcd().restart(leader);
                run.note("etcd member " + leader + " restarted");
                run.awaitMoreInputs(BETWEEN);
            }
            FailoverRun.Findings findings = run.finish(false);
            GrantOrder order = GrantOrder.check(findings.ledger());
            List<String> problems = order.problems();
            run.note(String.format("check tokens unique and rising per key in grant order: %d acquisitions (%d logged already "
                    + "lost, left out), %d lease losses "
                    + "reported to the writers' listeners, %d acquisitions failed, %d problems",
                    findings.ledger().acquired().size(), order.leftOut(), findings.ledger().lost().size(),
                    findings.ledger().failures().size(), problems.size()));
            assertThat(problems).as("tokens in grant order per key").isEmpty();
        }
    }

    /**
     * The broker that coordinates the enforcers' transactions is killed while both instances commit (a transaction's
     * EndTxn then fails with an unexpected error or times out): no instance stops, the same processes run on, and each
     * input is still decided once with nothing stale accepted.
     */
    @Test
    @Order(5)
    void theTransactionCoordinatorsBrokerKilledWhileInstancesCommitStopsNoInstance() throws Exception {
        try (FailoverRun run = run("txn-coordinator")) {
            run.awaitMoreInputs(WARM_UP);
            List<Long> pids = List.of(stack.enforcerPid(0), stack.enforcerPid(1));
            Map<String, Integer> coordinators = transactionCoordinators();
            int node = coordinators.values().iterator().next();
            stack.killBroker(node - 1);
            run.note("kill -9 of Kafka node " + node + " (node id), the transaction coordinator of " + coordinators);
            run.awaitMoreInputs(BETWEEN);
            stack.restartBroker(node - 1);
            run.note("Kafka node " + node + " restarted");
            run.awaitMoreInputs(BETWEEN);
            assertThat(List.of(stack.enforcerPid(0), stack.enforcerPid(1))).as("the same enforcer processes").isEqualTo(pids);
            assertThat(List.of(stack.enforcerAlive(0), stack.enforcerAlive(1))).as("every instance running")
                    .containsOnly(true);
            run.finish(false);
        }
    }

    /** The coordinator node id of each of the enforcers' open or recent transactional ids (Admin listTransactions, KIP-664). */
    private static Map<String, Integer> transactionCoordinators() throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap()))) {
            List<String> ids = admin.listTransactions().all().get(30, TimeUnit.SECONDS).stream()
                    .map(TransactionListing::transactionalId).filter(id -> id.startsWith("fence-enforcer-")).toList();
            assertThat(ids).as("the enforcers' transactional ids").isNotEmpty();
            Map<String, Integer> coordinators = new TreeMap<>();
            admin.describeTransactions(ids).all().get(30, TimeUnit.SECONDS)
                    .forEach((id, description) -> coordinators.put(id, description.coordinatorId()));
            return coordinators;
        }
    }
}
