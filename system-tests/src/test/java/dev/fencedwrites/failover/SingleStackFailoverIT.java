package dev.fencedwrites.failover;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.devtools.chaos.WriterFleet;
import dev.fencedwrites.enforcer.FenceEnforcerConfig;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.services.EnforcerProcess;
import dev.fencedwrites.services.Log4j2Config;
import dev.fencedwrites.services.Service;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * Needs real services: the failover harness (real producer-lib writers in their own JVMs, stalled
 * past their lease with SIGSTOP, and checks (a) to (d)) proven on the default one-of-each stack,
 * where a second enforcer instance is killed with {@code kill -9} and restarted, and the Connect
 * worker is killed and restarted mid-load: consumer-group failover, transactions and the sink's
 * guarded upsert are the real broker's, Kafka Streams' and PostgreSQL's behaviour.
 */
@Tag("slow")
@Timeout(value = 10, unit = TimeUnit.MINUTES)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SingleStackFailoverIT {
    /** Small enough for this 2-core machine, big enough that keys are contended and stalls happen. */
    static final WriterFleet.Load LOAD = new WriterFleet.Load(3, 2, 8, Duration.ofSeconds(3), 0.005, Duration.ofMillis(20));
    /** The second instance leaves the group 6 s after its kill instead of the default 45 s. */
    private static final Map<String, String> FAST_FAILOVER = Map.of("streams.session.timeout.ms", "6000",
            "streams.heartbeat.interval.ms", "1000");

    private static Path dir;
    private static LocalStack stack;
    private static SinkAudit audit;

    @BeforeAll
    static void startStack() throws Exception {
        dir = Files.createTempDirectory("single-failover");
        stack = LocalStack.builder(dir.resolve("stack")).connectors(BillingConnectors.set(false)).start();
        audit = new SinkAudit(stack.postgresUrl(), BillingConnectors.TABLE);
        audit.install();
    }

    @AfterAll
    static void stopStack() {
        if (stack != null) {
            stack.close();
        }
    }

    @Test
    @Order(1)
    void anEnforcerInstanceKilledAndRestartedMidLoadLeavesEveryInputDecidedOnceAndNoFenceLowered() throws Exception {
        Map<String, String> settings = new HashMap<>(FAST_FAILOVER);
        settings.put(FenceEnforcerConfig.TOKEN_VERIFICATION_ENABLE, "true");
        settings.put(EtcdSettings.ENDPOINTS, stack.etcdEndpoints());
        Path log4j2 = Log4j2Config.write(dir.resolve("log4j2.properties"), "INFO");
        Service[] second = {EnforcerProcess.start(dir.resolve("second"), log4j2, stack.kafkaBootstrap(), settings)};
        try (FailoverRun run = FailoverRun.start(dir, "enforcer", LOAD, stack.kafkaBootstrap(), List.of(stack.etcdEndpoints()),
                stack.schemaRegistryUrl(), () -> List.of(stack.enforcerUrl(), second[0].address()))) {
            run.awaitMoreInputs(300);
            int members = run.enforcerMembers();
            long killed = System.nanoTime();
            second[0].process().signal("KILL");
            run.note("kill -9 of the second enforcer instance (pid " + second[0].process().pid() + "), " + members
                    + " members in the group");
            Duration takeover = run.awaitTakeover(members, killed);
            run.note(String.format("enforcer takeover: the survivor decides every input partition %.1f s after the kill",
                    takeover.toMillis() / 1e3));
            await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(200))
                    .until(() -> run.watch().answeredEveryKeySince(stack.enforcerUrl(), killed));
            run.note("the survivor answered /fences/{key} for every key after the kill");
            run.awaitMoreInputs(200);
            second[0].close();
            second[0] = EnforcerProcess.start(dir.resolve("second"), log4j2, stack.kafkaBootstrap(), settings);
            run.note("second enforcer instance restarted on its state directory");
            run.awaitMoreInputs(200);
            run.finish(true);
        } finally {
            second[0].close();
        }
    }

    @Test
    @Order(2)
    void aConnectWorkerKilledAndRestartedMidLoadLeavesTheTableEqualToTheRuleAndNoRowFenceLowered() throws Exception {
        try (FailoverRun run = FailoverRun.start(dir, "connect", LOAD, stack.kafkaBootstrap(), List.of(stack.etcdEndpoints()),
                stack.schemaRegistryUrl(), () -> List.of(stack.enforcerUrl()))) {
            run.awaitMoreInputs(300);
            stack.killConnect();
            run.note("kill -9 of the Connect worker");
            run.awaitMoreInputs(200);
            long restarting = System.nanoTime();
            stack.restartConnect();
            run.note(String.format("Connect worker restarted, its task running again after %.1f s",
                    (System.nanoTime() - restarting) / 1e9));
            run.awaitMoreInputs(200);
            FailoverRun.Findings findings = run.finish(false);
            assertSinkMatches(audit, run, findings, "connect-");
        }
    }

    /** Check (d): waits for the sink to commit everything, then the audit and the table. */
    static void assertSinkMatches(SinkAudit audit, FailoverRun run, FailoverRun.Findings findings, String keyPrefix)
            throws Exception {
        Map<TopicPartition, Long> sunk = PipelineLog.after(
                findings.outputs().stream().filter(o -> o.kind() != Decided.Kind.REJECTED).toList());
        await().atMost(Duration.ofMinutes(4)).pollInterval(Duration.ofMillis(500))
                .until(() -> run.log().committedAtLeast("connect-" + BillingConnectors.SINK_CONNECTOR, sunk));
        run.note("the sink has committed the end of the accepted and markers topics");
        FailoverChecks.Result history = SinkAudit.neverDecreased(audit.history());
        Map<String, SinkAudit.Row> rows = new HashMap<>(audit.rows());
        rows.keySet().removeIf(key -> !key.startsWith(keyPrefix));
        FailoverChecks.Result table = SinkAudit.tableMatchesRule(rows, findings.outputs());
        run.note("check " + history.summary());
        run.note("check " + table.summary());
        assertThat(history.problems()).as(history.name()).isEmpty();
        assertThat(table.problems()).as(table.name()).isEmpty();
        assertThat(history.counts().get("updates audited")).as("updates the trigger saw").isPositive();
    }
}
