package dev.fencedwrites.failover;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.devtools.chaos.WriterFleet;
import dev.fencedwrites.devtools.chaos.WriterLedger;
import dev.fencedwrites.failover.Decided.Input;
import dev.fencedwrites.failover.Decided.Output;
import dev.fencedwrites.history.PipelineVerifier;
import dev.fencedwrites.services.Http;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;

/**
 * One failover scenario's load and checks: starts a {@link WriterFleet} on keys of its own and a
 * {@link FenceWatch}, narrates on stdout what happens when (seconds since the load started), and at
 * the end stops the writers, waits for the enforcer to decide everything, and runs checks (a), (b)
 * and (c) on the scenario's keys, printing what each looked at.
 */
final class FailoverRun implements AutoCloseable {
    private static final Duration CATCH_UP = Duration.ofMinutes(4);

    private final String name;
    private final String bootstrap;
    private final PipelineLog log;
    private final WriterFleet writers;
    private final FenceWatch watch;
    private final String keyPrefix;
    private final long started = System.nanoTime();
    private long inputMark;
    private boolean stopped;

    private FailoverRun(String name, String bootstrap, PipelineLog log, WriterFleet writers, FenceWatch watch, String keyPrefix) {
        this.name = name;
        this.bootstrap = bootstrap;
        this.log = log;
        this.writers = writers;
        this.watch = watch;
        this.keyPrefix = keyPrefix;
    }

    /**
     * Starts the load.
     *
     * @param enforcerUrls the enforcer instances' URLs, asked again on each poll (a restarted instance has a new port)
     */
    static FailoverRun start(Path dir, String name, WriterFleet.Load load, String bootstrap, List<String> etcd, String registry,
            Supplier<List<String>> enforcerUrls) throws Exception {
        String keyPrefix = name + "-";
        // Registered once here: writers registering the same new schema at once can get HTTP 409 from the registry.
        AvroSerializer.<BillingSummary>forValues(new RestSchemaRegistryClient(registry, Duration.ofSeconds(10))).serialize(
                FenceTopics.INPUT, BillingSummary.newBuilder().setCustomerId(keyPrefix).setBillingPeriod("2026-12")
                        .setAmountMinor(0).setCurrency("EUR").setLineItems(0).setComputedAt(Instant.EPOCH)
                        .setComputedBy("failover-test").build());
        WriterFleet writers = WriterFleet.start(dir.resolve(name), load, bootstrap, etcd, registry, keyPrefix);
        FenceWatch watch = new FenceWatch(writers.keys(), enforcerUrls, enforcerUrls.get().size());
        FailoverRun run = new FailoverRun(name, bootstrap, new PipelineLog(bootstrap, registry), writers, watch, keyPrefix);
        run.inputMark = run.inputRecords();
        run.note("load: " + writers.describe());
        return run;
    }

    /** Prints {@code [name +S.s] what}. */
    void note(String what) {
        System.out.printf("[%s %+7.1fs] %s%n", name, seconds(), what);
    }

    double seconds() {
        return (System.nanoTime() - started) / 1e9;
    }

    PipelineLog log() {
        return log;
    }

    WriterFleet writers() {
        return writers;
    }

    FenceWatch watch() {
        return watch;
    }

    /**
     * Waits until enforcer instance {@code i} (at {@code url}) answered 200 for every key, each asked after
     * {@code sinceNanos}, and notes it with {@code when}.
     */
    void awaitAnswers(String url, int i, long sinceNanos, String when) {
        await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(200))
                .until(() -> watch.answeredEveryKeySince(url, sinceNanos));
        note("enforcer instance " + i + " answered /fences/{key} for every key " + when);
    }

    /**
     * The sum of the samples of {@code series} at a Prometheus scrape URL: a metric name, or a name with the start of its
     * labels ({@code name{outcome="verified"}); 0 when there are none yet.
     */
    static double scrape(String url, String series) throws Exception {
        double sum = 0;
        for (String line : Http.get(url).body().split("\n")) {
            if (line.startsWith(series.contains("{") ? series : series + "{") || line.startsWith(series + " ")) {
                sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return sum;
    }

    /** Waits until {@code count} more records are on the input topic than at the last call: the load's clock for faults. */
    void awaitMoreInputs(long count) {
        long target = inputMark + count;
        await().atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(200)).until(() -> inputRecords() >= target);
        inputMark = target;
    }

    long inputRecords() throws Exception {
        return endOffsets(FenceTopics.INPUT).values().stream().mapToLong(Long::longValue).sum();
    }

    /**
     * Waits until an enforcer instance killed or paused at {@code sinceNanos} has left the consumer
     * group (fewer than {@code membersBefore} members) and the group has then committed progress on
     * every input partition that received records since: the survivor decides the partitions the
     * other held.
     *
     * @return how long that took from {@code sinceNanos}
     */
    Duration awaitTakeover(int membersBefore, long sinceNanos) throws Exception {
        await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(100))
                .until(() -> enforcerMembers() < membersBefore);
        Map<Integer, Long> before = enforcerCommitted();
        await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(100)).until(() -> {
            Map<Integer, Long> ends = endOffsets(FenceTopics.INPUT);
            Map<Integer, Long> now = enforcerCommitted();
            return ends.entrySet().stream().allMatch(e -> e.getValue() <= before.getOrDefault(e.getKey(), 0L)
                    || now.getOrDefault(e.getKey(), 0L) > before.getOrDefault(e.getKey(), 0L));
        });
        return Duration.ofNanos(System.nanoTime() - sinceNanos);
    }

    /** Members of the enforcer's consumer group now (one per stream thread of each live instance). */
    int enforcerMembers() throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            return admin.describeConsumerGroups(List.of(PipelineLog.ENFORCER_GROUP)).all().get(30, TimeUnit.SECONDS)
                    .get(PipelineLog.ENFORCER_GROUP).members().size();
        }
    }

    Map<Integer, Long> enforcerCommitted() throws Exception {
        return log.committed(PipelineLog.ENFORCER_GROUP, FenceTopics.INPUT);
    }

    private Map<Integer, Long> endOffsets(String topic) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
            admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic).partitions()
                    .forEach(p -> specs.put(new TopicPartition(topic, p.partition()), OffsetSpec.latest()));
            Map<Integer, Long> ends = new HashMap<>();
            admin.listOffsets(specs).all().get(30, TimeUnit.SECONDS).forEach((p, info) -> ends.put(p.partition(), info.offset()));
            return ends;
        }
    }

    /** What the run found, for the scenario's own assertions. */
    record Findings(WriterLedger ledger, List<Input> inputs, List<Output> outputs) {
    }

    /**
     * Stops the writers, waits until the enforcer committed the end of the input, then asserts
     * checks (a) and (b) on this run's keys, that every acknowledged write is on the input topic,
     * and that every write a stopped writer sent after another took its key over was rejected
     * {@code STALE_TOKEN} and its lease loss reported to its listener; check (c) is printed, and
     * asserted when {@code assertFences}.
     */
    Findings finish(boolean assertFences) throws Exception {
        stopWriters();
        await().atMost(CATCH_UP).pollInterval(Duration.ofMillis(500))
                .until(() -> log.committedToEnd(PipelineLog.ENFORCER_GROUP, List.of(FenceTopics.INPUT)));
        note("the enforcer has committed the end of the input");
        WriterLedger ledger = writers.ledger();
        List<Input> inputs = log.inputs().stream().filter(i -> i.key() != null && i.key().startsWith(keyPrefix)).toList();
        List<Output> outputs = log.outputs().stream().filter(o -> o.key() != null && o.key().startsWith(keyPrefix)).toList();
        List<FailoverChecks.Result> results = new ArrayList<>();
        results.add(decidedAsTheRuleDecides());
        results.add(FailoverChecks.noStaleWriteAccepted(inputs, outputs));
        results.add(FenceWatch.neverDecreased(watch.observations()));
        results.add(acknowledgedWritesOnInput(ledger, inputs));
        results.add(staleWritesRejected(ledger, outputs));
        results.forEach(result -> note("check " + result.summary()));
        note("fence answers other than 200 while polling: " + watch.errors());
        for (FailoverChecks.Result result : results) {
            if (assertFences || !result.name().startsWith("(c)")) {
                assertThat(result.problems()).as(result.name()).isEmpty();
            }
        }
        return new Findings(ledger, inputs, outputs);
    }

    /**
     * Stops the load once a stalled writer's key was taken over (the stale-write check needs one), unless stopped already.
     */
    void stopWriters() throws Exception {
        if (stopped) {
            return;
        }
        await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(200))
                .until(() -> writers.resumed().stream().anyMatch(WriterFleet.Resumed::tookOver));
        writers.stop();
        stopped = true;
        note(String.format("writers stopped: %d writes acknowledged (%.0f/s), %d stalls past the lease", writers.ledger().acks()
                .size(), writers.writesPerSecond(), writers.resumed().size()));
        watch.close();
    }

    /**
     * Check (a), by the history checker that {@code fence verify} runs (history-check): every input record of the pipeline
     * so far, this scenario's and the ones before, decided exactly once across the accepted, rejected and markers topics,
     * as the decision rule decides it replayed in offset order (a winning marker only raises the fence).
     */
    private FailoverChecks.Result decidedAsTheRuleDecides() throws Exception {
        PipelineVerifier.Options topics = new PipelineVerifier.Options(FenceTopics.INPUT, FenceTopics.ACCEPTED,
                FenceTopics.REJECTED, FenceTopics.MARKERS, PipelineLog.ENFORCER_GROUP, true, null, null);
        PipelineVerifier.Result verify = PipelineVerifier.run(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap),
                topics, null, new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), true));
        List<String> problems = new ArrayList<>();
        verify.findings().described().forEach(violation -> problems.add(violation.toString()));
        long undescribed = verify.violations() - problems.size();
        if (undescribed > 0) {
            problems.add(undescribed + " more violations, not described");
        }
        Map<String, Long> counts = new LinkedHashMap<>(verify.findings().counts());
        counts.put("violations", verify.violations());
        return new FailoverChecks.Result("(a) every input record decided exactly once, as the rule decides (fence verify)",
                counts, problems);
    }

    /** No write the broker acknowledged (acks=all) is missing from the input topic. */
    static FailoverChecks.Result acknowledgedWritesOnInput(WriterLedger ledger, List<Input> inputs) {
        Set<Long> onInput = new HashSet<>();
        inputs.forEach(input -> onInput.add(input.writeId()));
        List<String> problems = ledger.acks().stream().filter(ack -> !onInput.contains(ack.id()))
                .map(ack -> "acknowledged write missing from the input topic: " + ack).toList();
        return new FailoverChecks.Result("acknowledged writes on the input topic", Map.of("acknowledged", (long) ledger.acks()
                .size()), problems);
    }

    /**
     * Every write a writer sent after stalling past its lease while another writer took the key
     * (its marker acknowledged) is rejected STALE_TOKEN, and the stalled lease's loss was reported.
     */
    FailoverChecks.Result staleWritesRejected(WriterLedger ledger, List<Output> outputs) {
        Map<Long, Output> byWriteId = new HashMap<>();
        outputs.forEach(o -> byWriteId.put(o.writeId(), o));
        Set<String> tookOver = new HashSet<>();
        writers.resumed().stream().filter(WriterFleet.Resumed::tookOver).forEach(r -> tookOver.add(r.key() + "@" + r.token()));
        List<String> problems = new ArrayList<>();
        long stale = 0;
        for (WriterLedger.Ack ack : ledger.stalledWrites()) {
            if (!tookOver.contains(ack.key() + "@" + ack.token())) {
                continue;
            }
            stale++;
            Output decided = byWriteId.get(ack.id());
            if (decided == null || decided.reason() != RejectionReason.STALE_TOKEN) {
                problems.add("stale write " + ack + " was decided " + decided);
            }
            if (ledger.lost().stream().noneMatch(lost -> lost.lease() == ack.lease())) {
                problems.add("the loss of lease " + ack.lease() + " (stalled past its TTL) was not reported to its listener");
            }
        }
        if (stale == 0) {
            problems.add("no writer stalled past its lease while another took its key over: the load held no stale write");
        }
        return new FailoverChecks.Result("stale writes after a stall rejected STALE_TOKEN, lease losses reported",
                Map.of("stale writes", stale, "leases lost (reported)", (long) ledger.lost().size()), problems);
    }

    @Override
    public void close() throws Exception {
        watch.close();
        writers.close();
    }
}
