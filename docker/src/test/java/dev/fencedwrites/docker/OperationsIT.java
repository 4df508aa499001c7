package dev.fencedwrites.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.contract.NewTopics;
import dev.fencedwrites.services.Await;
import dev.fencedwrites.services.ChildProcess;
import dev.fencedwrites.services.EnforcerProcess;
import dev.fencedwrites.services.EtcdNode;
import dev.fencedwrites.services.FreePorts;
import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.Jvm;
import dev.fencedwrites.services.KafkaBroker;
import dev.fencedwrites.services.Log4j2Config;
import dev.fencedwrites.services.Service;
import dev.fencedwrites.testing.ShippedSchemas;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.assertj.core.groups.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: a fence store restored from its real changelog after a {@code kill -9}, and the metrics of a real
 * enforcer and of a real worker frozen with SIGSTOP past its etcd lease, are what the probes, the dashboard and the alert
 * rules are about.
 */
@Timeout(value = 8, unit = TimeUnit.MINUTES)
class OperationsIT {
    /** Keys written before the kill: enough changelog that the restore takes a few probe polls. */
    private static final int KEYS = 120_000;
    private static final Duration WORKER_TTL = Duration.ofSeconds(4);
    /** A killed member leaves the group after this; the default 45 s would only slow the test. */
    private static final Map<String, String> SETTINGS = Map.of("streams.session.timeout.ms", "6000",
            "streams.heartbeat.interval.ms", "1000");

    @TempDir
    static Path dir;

    private static Service kafka;
    private static Service etcd;
    private static Service enforcer;
    private static ChildProcess worker;
    private static final List<ProbeAnswer> probes = new ArrayList<>();
    private static AlertRuleTests.Target enforcerTarget;
    private static AlertRuleTests.Target workerTarget;
    private static String workerMetrics;

    /** One answer of a probe: its path, HTTP status and the state and restore figures of its body. */
    /** One probe's answer; {@code problems}: how it differs from schemas/openapi/enforcer-http.yaml. */
    record ProbeAnswer(String path, int status, String state, int restoringPartitions, List<String> problems) {
    }

    @BeforeAll
    static void restoreAfterAKillNineThenWriteStaleAndFreezeAWorker() throws Exception {
        Path log4j2 = Log4j2Config.write(dir.resolve("log4j2.properties"), "WARN");
        kafka = KafkaBroker.start(dir.resolve("kafka"), log4j2);
        etcd = EtcdNode.start(dir.resolve("etcd"));
        createTopics();

        Service first = EnforcerProcess.start(dir.resolve("enforcer-1"), log4j2, kafka.address(), SETTINGS);
        try (KafkaProducer<String, byte[]> producer = producer()) {
            for (int i = 0; i < KEYS; i++) {
                producer.send(write("key-" + i, 1));
            }
        }
        Await.until(KEYS + " records accepted by the first enforcer", Duration.ofMinutes(3), first.process(),
                () -> scrape(first).sum("fence_enforcer_records_accepted_total") >= KEYS);
        first.process().signal("KILL");
        first.process().waitFor(Duration.ofSeconds(30));

        // A new state directory: the second enforcer restores the whole fence store from its changelog.
        long started = System.nanoTime();
        enforcer = EnforcerProcess.startServing(dir.resolve("enforcer-2"), log4j2, kafka.address(), SETTINGS);
        await().atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(50)).until(() -> {
            probes.add(probe("/health/live"));
            ProbeAnswer ready = probe("/health/ready");
            probes.add(ready);
            return ready.status() == 200;
        });
        System.out.printf("restore: ready %.1f s after start, %d probe answers, %d while restoring%n",
                (System.nanoTime() - started) / 1e9, probes.size(),
                probes.stream().filter(p -> p.restoringPartitions() > 0).count());

        Scrape enforcerBefore = scrape(enforcer);
        try (KafkaProducer<String, byte[]> producer = producer()) {
            producer.send(write("stale-key", 5));
            producer.send(write("stale-key", 3));
            // A write without fencing headers: a writer off the wire contract, not the fence at work.
            producer.send(new ProducerRecord<>(FenceTopics.INPUT, "unfenced-key", new byte[16]));
        }
        await().atMost(Duration.ofMinutes(1)).until(() -> scrape(enforcer).sum("fence_enforcer_records_fenced_total",
                "reason=\"STALE_TOKEN\"") == 1
                && scrape(enforcer).sum("fence_enforcer_records_fenced_total", "reason=\"MISSING_TOKEN\"") == 1);
        enforcerTarget = new AlertRuleTests.Target("fence-enforcer", "enforcer:8090", enforcerBefore, scrape(enforcer));

        // The worker starts once the enforcer is quiet: on a loaded machine its stalls would be real ones.
        int workerPort = FreePorts.pick();
        worker = ChildProcess.start("worker", Jvm.command(List.of("-Xmx128m"), log4j2, WorkerMetricsProbe.class.getName(),
                List.of(etcd.address(), Integer.toString(workerPort), Long.toString(WORKER_TTL.toMillis()), kafka.address())),
                dir,
                dir.resolve("worker.log"), Map.of());
        workerMetrics = "http://127.0.0.1:" + workerPort + "/metrics";
        Await.until("the worker to hold its lease", Duration.ofMinutes(1), worker,
                () -> Files.readString(worker.log()).contains("HOLDING"));
        Scrape workerBefore = Scrape.parse(Http.get(workerMetrics).body());
        worker.signal("STOP");
        try {
            // Longer than the lease TTL: etcd expires the lease while the worker is frozen.
            await().pollDelay(WORKER_TTL.plusSeconds(1)).atMost(WORKER_TTL.plusSeconds(5)).until(() -> true);
        } finally {
            worker.signal("CONT");
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            Scrape now = Scrape.parse(Http.get(workerMetrics).body());
            return now.sum("fence_lease_lost_total") >= 1
                    && now.sum("fence_pause_largest_recent_seconds") > WORKER_TTL.toSeconds() / 2.0;
        });
        workerTarget = new AlertRuleTests.Target("fenced-workers", "worker:8099", workerBefore,
                Scrape.parse(Http.get(workerMetrics).body()));
    }

    @AfterAll
    static void stop() {
        for (AutoCloseable service : new AutoCloseable[]{worker, enforcer, etcd, kafka}) {
            try {
                if (service != null) {
                    service.close();
                }
            } catch (Exception e) {
                System.out.println("closing: " + e);
            }
        }
    }

    @Test
    void livenessAnswers200ThroughoutTheRestoreOfTheFenceStore() {
        List<ProbeAnswer> live = probes.stream().filter(p -> p.path().equals("/health/live")).toList();
        assertThat(live).isNotEmpty().allSatisfy(p -> assertThat(p.status()).as(p.toString()).isEqualTo(200));
        assertThat(live).as("liveness answers while the fence store was being restored")
                .anyMatch(p -> p.restoringPartitions() > 0 && p.state().equals("REBALANCING"));
    }

    @Test
    void readinessAnswers503UntilKafkaStreamsIsRunningAnd200From() throws Exception {
        List<ProbeAnswer> ready = probes.stream().filter(p -> p.path().equals("/health/ready")).toList();
        assertThat(ready)
                .allSatisfy(p -> assertThat(p.status()).as(p.toString()).isEqualTo(p.state().equals("RUNNING") ? 200 : 503));
        assertThat(ready).as("readiness answers while restoring").anyMatch(p -> p.restoringPartitions() > 0 && p.status() == 503);
        assertThat(ready.get(ready.size() - 1).state()).isEqualTo("RUNNING");
        assertThat(Http.get(enforcer.address() + "/health").statusCode()).as("/health, readiness's older name").isEqualTo(200);
    }

    @Test
    void everyAnswerIsOneTheOpenApiDescriptionHas() throws Exception {
        assertThat(probes).isNotEmpty().allSatisfy(p -> assertThat(p.problems()).as(p.toString()).isEmpty());
        assertThat(probes).as("both states of both probes were checked").extracting(ProbeAnswer::path, ProbeAnswer::status)
                .contains(Tuple.tuple("/health/live", 200),
                        Tuple.tuple("/health/ready", 503),
                        Tuple.tuple("/health/ready", 200));
        for (String path : List.of("/health", "/health/other", "/fences/key-0", "/fences/never-written", "/fences/",
                "/metrics")) {
            ShippedSchemas.assertEnforcerAnswer(Http.get(enforcer.address() + path));
        }
    }

    @Test
    void theRestoredFenceStoreHoldsTheFencesWrittenBeforeTheKill() throws Exception {
        HttpResponse<String> fence = Http.get(enforcer.address() + "/fences/key-0");
        assertThat(fence.statusCode()).as(fence.body()).isEqualTo(200);
        assertThat(StackFiles.JSON.readTree(fence.body()).path("token").asLong()).isEqualTo(1);
    }

    @Test
    void everyEnforcerAndWorkerMetricTheDashboardAndTheAlertRulesNameIsInARealScrape() {
        List<String> expressions = new ArrayList<>(new DashboardTest().expressions());
        expressions.addAll(AlertRulesTest.alerts().values());
        // Kafka's metrics reach the registry at Micrometer's next refresh (10 s): wait for one.
        await().atMost(Duration.ofSeconds(45)).untilAsserted(() -> {
            Map<String, Set<String>> exported = new HashMap<>(
                    DashboardTest.scrape(Http.get(enforcer.address() + "/metrics").body()));
            exported.putAll(DashboardTest.scrape(Http.get(workerMetrics).body()));
            List<String> missing = new ArrayList<>();
            for (String expr : expressions) {
                for (String name : DashboardTest.metricNames(expr)) {
                    if (DashboardTest.isSinkMetric(name) || name.startsWith("fence_enforcer_token_verification")) {
                        // The Connect worker's (SinkBadRecordsIT checks them), and the token verifier's, registered only
                        // with verification on (DashboardTest checks them against the verifier's meters).
                        continue;
                    }
                    if (!exported.containsKey(name)) {
                        missing.add(name);
                        continue;
                    }
                    for (String label : DashboardTest.labels(expr, name)) {
                        if (!DashboardTest.TARGET_LABELS.contains(label) && !exported.get(name).contains(label)) {
                            missing.add(name + " label " + label);
                        }
                    }
                }
            }
            assertThat(missing).as("metrics the dashboard or the alert rules name that no real scrape has").isEmpty();
        });
    }

    @Test
    void everyAlertFiresOnTheRealMetricsOfAStaleWriteAnUnfencedWriteAFrozenWorkerAndItsLostLeaseAndNoneBefore() throws Exception {
        List<String> causes = workerTarget.after().series().entrySet().stream()
                .filter(e -> Scrape.nameOf(e.getKey()).equals("fence_lease_lost_total") && e.getValue() > 0)
                .map(e -> e.getKey().replaceAll(".*cause=\"([^\"]*)\".*", "$1")).toList();
        assertThat(causes).as("the frozen worker's lease loss").hasSize(1).doesNotContain("closed");
        AlertRuleTests tests = new AlertRuleTests();
        tests.quietCase("before the stale write and the freeze", List.of(enforcerTarget, workerTarget));
        tests.changeCase("after the stale write and the freeze", List.of(enforcerTarget, workerTarget), Map.of(
                "FenceWritesRejected",
                List.of(Map.of("job", "fence-enforcer", "instance", "enforcer:8090", "reason", "MISSING_TOKEN")),
                "FenceStaleWritesStopped", List.of(Map.of("job", "fence-enforcer", "instance", "enforcer:8090")),
                "FenceWorkerStallNearLeaseTtl", List.of(Map.of("job", "fenced-workers", "instance", "worker:8099")),
                "FenceLeaseLost", List.of(Map.of("job", "fenced-workers", "instance", "worker:8099", "cause", causes.get(0)))));
        Path file = dir.resolve("alerts-test.yml");
        Files.writeString(file, tests.render(AlertRulesTest.RULES.toString()), StandardCharsets.UTF_8);

        AlertRulesTest.Result result = AlertRulesTest.promtool("test", "rules", file.toString());

        assertThat(result.exitCode()).as("promtool test rules %s:%n%s", file, result.output()).isZero();
    }

    private static ProbeAnswer probe(String path) {
        try {
            HttpResponse<String> answer = Http.get(enforcer.address() + path);
            JsonNode body = StackFiles.JSON.readTree(answer.body());
            return new ProbeAnswer(path, answer.statusCode(), body.path("state").asText(),
                    body.path("restoring_partitions").asInt(), ShippedSchemas.enforcerAnswerProblems(path,
                            answer.statusCode(), answer.headers().firstValue("Content-Type").orElse(null), answer.body()));
        } catch (Exception e) {
            return new ProbeAnswer(path, -1, "unanswered: " + e, 0, List.of());
        }
    }

    private static Scrape scrape(Service enforcer) throws Exception {
        return Scrape.parse(Http.get(enforcer.address() + "/metrics").body());
    }

    private static ProducerRecord<String, byte[]> write(String key, long token) {
        ProducerRecord<String, byte[]> record = new ProducerRecord<>(FenceTopics.INPUT, key, new byte[16]);
        record.headers().add(FenceHeaders.TOKEN, Long.toString(token).getBytes(StandardCharsets.UTF_8));
        return record;
    }

    private static KafkaProducer<String, byte[]> producer() {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.address());
        props.put(ProducerConfig.LINGER_MS_CONFIG, 20);
        props.put(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
        return new KafkaProducer<>(props, new StringSerializer(), new ByteArraySerializer());
    }

    private static void createTopics() throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.address());
        List<String> topics = List.of(FenceTopics.INPUT, FenceTopics.ACCEPTED, FenceTopics.REJECTED, FenceTopics.MARKERS);
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(topics.stream().map(t -> new NewTopic(t, 3, (short) 1)).toList()).all().get(60, TimeUnit.SECONDS);
            NewTopics.awaitWritable(admin, topics, Duration.ofSeconds(60));
        }
    }
}
