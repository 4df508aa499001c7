package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.services.Await;
import dev.fencedwrites.services.EnforcerProcess;
import dev.fencedwrites.services.EtcdNode;
import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.KafkaBroker;
import dev.fencedwrites.services.Log4j2Config;
import dev.fencedwrites.services.Service;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: what survives a {@code kill -9} is a property of the real broker's
 * transactions, of the producer's buffer and of the state store restored from its real changelog,
 * which no test driver has; with token verification on, every raise is checked in a real etcd.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class EnforcerCrashIT {
    private static final int RECORDS = 24_000;
    private static final int BATCHES = 4;
    private static final int PARTITIONS = 3;
    /** A killed member leaves the group after this; the default 45 s would only slow the test. */
    static final Map<String, String> FAST_FAILOVER = Map.of("streams.session.timeout.ms", "6000", "streams.heartbeat.interval.ms",
            "1000");
    /** The enforcer's default application.id: its consumer group. */
    private static final String APPLICATION_ID = "fence-enforcer";

    @TempDir
    Path dir;

    /** With the fence store behind Kafka Streams' record cache (its default 10 MiB). */
    @Test
    void everyInputRecordIsDecidedExactlyOnceAcrossThreeKillNineRestarts() throws Exception {
        exactlyOnceAcrossKills(new HashMap<>(FAST_FAILOVER));
    }

    /**
     * The same without the cache ({@code statestore.cache.max.bytes=0}: Kafka Streams builds the store without it, and every
     * put reaches RocksDB and the changelog at once). In the slow lane, to keep {@code ./fence test} under 30 minutes.
     */
    @Test
    @Tag("slow")
    void everyInputRecordIsDecidedExactlyOnceWithoutTheRecordCache() throws Exception {
        Map<String, String> settings = new HashMap<>(FAST_FAILOVER);
        settings.put(FenceEnforcerConfig.STREAMS_PREFIX + StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        exactlyOnceAcrossKills(settings);
    }

    private void exactlyOnceAcrossKills(Map<String, String> settings) throws Exception {
        Path log4j2 = Log4j2Config.write(dir.resolve("log4j2.properties"), "INFO");
        try (Service etcd = EtcdNode.start(dir.resolve("etcd"));
                Service kafka = KafkaBroker.start(dir.resolve("kafka"), log4j2)) {
            Workload.createTopics(kafka.address(), PARTITIONS);
            try (Workload workload = new Workload(kafka.address(), etcd.address(), 200, 42);
                    Workload.Outputs outputs = new Workload.Outputs(kafka.address(), PARTITIONS)) {
                Counts counts = runWithKills(kafka.address(), log4j2, verifying(settings, etcd), workload, outputs);
                long replayed = counts.replayed();
                System.out.println(workload.lockCost());

                outputs.assertMatches(workload.sent());
                long stale = workload.sent().stream().filter(s -> s.expected().reason() == RejectionReason.STALE_TOKEN).count();
                assertThat(stale).as("the workload holds stale writes").isGreaterThan(RECORDS / 20);
                assertForgedTokensRejectedByVerification(workload, counts);
                assertThat(replayed)
                        .as("records decided against a key's replay history (the store is never ahead under exactly_once_v2)")
                        .isZero();
            }
        }
    }

    /**
     * Settings that make the fence store run ahead of the committed offsets and outputs
     * wait in the producer's buffer at the kill: commits 2 s apart, a state store cache so small that
     * evictions write the changelog all the time, and the producer lingering 200 ms.
     */
    @Test
    void atLeastOnceLosesNoAcceptedWriteAndAcceptsNoRejectedOneAcrossThreeKillNineRestarts() throws Exception {
        atLeastOnceAcrossKills("8192");
    }

    /** The same without the cache: every put writes the changelog. In the slow lane, as above. */
    @Test
    @Tag("slow")
    void atLeastOnceLosesNoAcceptedWriteAndAcceptsNoRejectedOneWithoutTheRecordCache() throws Exception {
        atLeastOnceAcrossKills("0");
    }

    private void atLeastOnceAcrossKills(String cacheBytes) throws Exception {
        Map<String, String> settings = new HashMap<>(FAST_FAILOVER);
        settings.put(FenceEnforcerConfig.PROCESSING_GUARANTEE, StreamsConfig.AT_LEAST_ONCE);
        settings.put(FenceEnforcerConfig.STREAMS_PREFIX + StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "2000");
        settings.put(FenceEnforcerConfig.STREAMS_PREFIX + StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, cacheBytes);
        settings.put(FenceEnforcerConfig.STREAMS_PREFIX + StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), "200");
        Path log4j2 = Log4j2Config.write(dir.resolve("log4j2.properties"), "INFO");
        try (Service etcd = EtcdNode.start(dir.resolve("etcd"));
                Service kafka = KafkaBroker.start(dir.resolve("kafka"), log4j2)) {
            Workload.createTopics(kafka.address(), PARTITIONS);
            try (Workload workload = new Workload(kafka.address(), etcd.address(), 200, 43);
                    Workload.Outputs outputs = new Workload.Outputs(kafka.address(), PARTITIONS)) {
                Counts counts = runWithKills(kafka.address(), log4j2, verifying(settings, etcd), workload, outputs);
                long replayed = counts.replayed();
                System.out.println(workload.lockCost());

                Workload.Outputs.Duplicates duplicates = outputs.assertMatchesAtLeastOnce(workload.sent());
                System.out.printf(
                        "at_least_once: %d records re-decided by replays; duplicates: %d accepted twice, %d rejected twice, %d "
                                + "on both topics%n",
                        replayed, duplicates.acceptedTwice(), duplicates.rejectedTwice(), duplicates.onBothTopics());
                long stale = workload.sent().stream().filter(s -> s.expected().reason() == RejectionReason.STALE_TOKEN).count();
                assertThat(stale).as("the workload holds stale writes").isGreaterThan(RECORDS / 20);
                assertForgedTokensRejectedByVerification(workload, counts);
                assertThat(replayed)
                        .as("records decided against a key's replay history: the kills left the store ahead of the offsets")
                        .isPositive();
            }
        }
    }

    /** {@code settings} with token verification on against {@code etcd}. */
    static Map<String, String> verifying(Map<String, String> settings, Service etcd) {
        Map<String, String> with = new HashMap<>(settings);
        with.put(FenceEnforcerConfig.TOKEN_VERIFICATION_ENABLE, "true");
        with.put(EtcdSettings.ENDPOINTS, etcd.address());
        return with;
    }

    /**
     * The workload forged tokens of both kinds, and the enforcer checked raises in etcd (the model's reasons were checked per
     * record).
     */
    static void assertForgedTokensRejectedByVerification(Workload workload, Counts counts) {
        assertThat(workload.sent().stream().filter(s -> s.expected().reason() == RejectionReason.LOCK_NOT_HELD).count())
                .as("borrowed tokens in the workload").isGreaterThan(RECORDS / 500);
        assertThat(workload.sent().stream().filter(s -> s.expected().reason() == RejectionReason.FUTURE_TOKEN).count())
                .as("future tokens in the workload").isGreaterThan(RECORDS / 500);
        assertThat(counts.verified()).as("tokens verified in etcd (fence_enforcer_token_verifications_total{outcome=verified})")
                .isPositive();
    }

    /**
     * @param replayed the records the enforcer counted as replayed ({@code fence_enforcer_records_replayed_total})
     * @param verified the tokens it verified in etcd ({@code fence_enforcer_token_verifications_total{outcome="verified"}})
     */
    record Counts(long replayed, long verified) {
    }

    /**
     * Produces {@value #RECORDS} records in {@value #BATCHES} batches, killing the enforcer with
     * {@code kill -9} 5 000 outputs into each batch but the last and restarting it on the same state
     * directory, then waits until the enforcer has committed the end of the input.
     *
     * @return the enforcer's counters, read before each kill and at the end and summed
     */
    private Counts runWithKills(String bootstrap, Path log4j2, Map<String, String> settings, Workload workload,
            Workload.Outputs outputs)
            throws Exception {
        long replayed = 0;
        long verified = 0;
        Service enforcer = EnforcerProcess.start(dir.resolve("enforcer"), log4j2, bootstrap, settings);
        try {
            for (int batch = 0; batch < BATCHES; batch++) {
                workload.produceUntil((batch + 1) * RECORDS / BATCHES);
                if (batch == BATCHES - 1) {
                    break;
                }
                int killAt = batch * RECORDS / BATCHES + 5_000;
                Await.until(killAt + " outputs before the kill", Duration.ofMinutes(3), enforcer.process(),
                        () -> outputs.poll() >= killAt);
                replayed += counter(enforcer, "fence_enforcer_records_replayed_total{");
                verified += counter(enforcer, "fence_enforcer_token_verifications_total{outcome=\"verified\"");
                enforcer.process().signal("KILL");
                enforcer.process().waitFor(Duration.ofSeconds(30));
                System.out.printf("killed the enforcer mid-stream with %d of %d inputs decided%n", outputs.poll(),
                        workload.sent().size());
                enforcer = EnforcerProcess.start(dir.resolve("enforcer"), log4j2, bootstrap, settings);
            }
            Await.until("the enforcer to commit the end of all " + RECORDS + " inputs", Duration.ofMinutes(5), enforcer.process(),
                    () -> {
                        outputs.poll();
                        return Workload.inputCommitted(bootstrap, APPLICATION_ID);
                    });
            outputs.settle(Duration.ofSeconds(3));
            replayed += counter(enforcer, "fence_enforcer_records_replayed_total{");
            verified += counter(enforcer, "fence_enforcer_token_verifications_total{outcome=\"verified\"");
        } finally {
            enforcer.close();
        }
        assertThat(workload.sent()).hasSize(RECORDS);
        return new Counts(replayed, verified);
    }

    /** The sum of the enforcer's metric lines that start with {@code prefix} (a name and labels); 0 when it has none. */
    static long counter(Service enforcer, String prefix) throws Exception {
        double sum = 0;
        for (String line : Http.get(enforcer.address() + "/metrics").body().split("\n")) {
            if (line.startsWith(prefix)) {
                sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return (long) sum;
    }
}
