package dev.fencedwrites.demo;

import static dev.fencedwrites.demo.StackProbe.header;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceOp;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.localstack.testing.SharedBillingStack;
import dev.fencedwrites.producer.FencedProducer;
import dev.fencedwrites.producer.FencingLease;
import dev.fencedwrites.producer.FencingLeaseClient;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Needs real services: only a real etcd process frozen with SIGSTOP (its sockets open, its
 * answers never coming) shows what the real enforcer does with tokens it cannot verify, inside a
 * real broker's exactly-once transactions (nothing accepted unverified, nothing lost). Tokens taken
 * before the freeze are in the enforcer's index of lock holders (its watch saw them), so they may be
 * decided while etcd is frozen, always as the rule says; a token above etcd's revision is outside the
 * index, so its decision waits for etcd for the whole freeze.
 */
@Timeout(value = 8, unit = TimeUnit.MINUTES)
@ExtendWith(SharedBillingStack.class)
class EtcdPauseIT {
    private static final Duration TTL = Duration.ofSeconds(120);
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    /**
     * Longer than the enforcer's EOS transaction timeout (Kafka Streams' 10 s) plus the broker's
     * check for timed-out transactions (every 10 s), so the open transaction is aborted under it.
     */
    private static final Duration PAUSE = Duration.ofSeconds(22);
    private static final int VERIFIED_KEYS = 4;
    private static final int NEW_KEYS = 6;

    static LocalStack stack;
    static StackProbe probe;

    /** The stack TokenVerificationIT uses too; this class's keys have a prefix of their own and its counters are differences. */
    @BeforeAll
    static void useSharedStack(LocalStack shared) {
        stack = shared;
        probe = new StackProbe(stack);
    }

    /** Whatever happened, etcd runs again for the classes after this one. */
    @AfterAll
    static void resumeEtcd() {
        if (stack != null) {
            stack.resumeEtcd();
        }
    }

    /**
     * One record sent while etcd is frozen.
     *
     * @param id       unique, sent as {@code fence.writer}
     * @param outcome  where it must end: {@code accepted}, {@code marker} (raises the fence, on the markers topic) or a rejection
     * reason
     */
    private record Sent(String id, String key, long token, long seq, long lease, FenceOp op, String outcome) {
    }

    @Test
    void whileEtcdIsFrozenNoNewTokenIsAcceptedAndAfterItResumesEveryWriteIsDecidedOnce() throws Exception {
        String prefix = "pause-" + UUID.randomUUID().toString().substring(0, 8) + "-";
        List<Sent> sent = new ArrayList<>();
        try (FencingLeaseClient leases = new FencingLeaseClient(List.of(stack.etcdEndpoints()),
                FencingLeaseClient.DEFAULT_LOCK_PREFIX);
                FencedProducer<BillingSummary> producer = FencedProducer.create(
                        Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap()),
                        serializer(), FenceTopics.INPUT, "verified-holder", FencedProducer.Takeover.PUBLISH_MARKER,
                        new SimpleMeterRegistry())) {
            // Keys whose fence is already verified: their holders write at the fence, which needs no etcd.
            List<FencingLease> verified = new ArrayList<>();
            for (int i = 0; i < VERIFIED_KEYS; i++) {
                FencingLease lease = producer.acquire(leases, prefix + "verified-" + i, TTL, TIMEOUT);
                producer.sendAndWait(lease, TokenVerificationIT.summary(lease.resource(), 100, "verified-holder"));
                verified.add(lease);
            }
            await("the verified keys' first writes accepted").atMost(TIMEOUT).ignoreExceptions().untilAsserted(() -> {
                for (FencingLease lease : verified) {
                    assertThat(probe.fence(lease.resource())).isEqualTo(lease.token() + ".1");
                }
            });
            // Keys whose locks are taken now, before the freeze, so their tokens are real; nothing is sent for them yet.
            List<FencingLease> fresh = new ArrayList<>();
            for (int i = 0; i < NEW_KEYS; i++) {
                fresh.add(leases.acquire(prefix + "new-" + i, TTL, TIMEOUT));
            }
            FencingLease forged = leases.acquire(prefix + "forged", TTL, TIMEOUT);
            FencingLease bystander = leases.acquire(prefix + "bystander", TTL, TIMEOUT);
            double errorsBefore = probe.metric("fence_enforcer_token_verification_etcd_errors_total", null, null);

            stack.pauseEtcd();
            boolean paused = true;
            try {
                for (int i = 0; i < Math.max(VERIFIED_KEYS, NEW_KEYS); i++) {
                    if (i < VERIFIED_KEYS) {
                        FencingLease lease = verified.get(i);
                        sent.add(new Sent("at-fence-" + i, lease.resource(), lease.token(), 2, lease.leaseId(), FenceOp.WRITE,
                                "accepted"));
                    }
                    if (i < NEW_KEYS) {
                        FencingLease lease = fresh.get(i);
                        if (i % 2 == 0) {
                            sent.add(new Sent("new-marker-" + i, lease.resource(), lease.token(), 0, lease.leaseId(),
                                    FenceOp.FENCE, "marker"));
                        }
                        sent.add(new Sent("new-write-" + i, lease.resource(), lease.token(), 1, lease.leaseId(), FenceOp.WRITE,
                                "accepted"));
                    }
                    if (i == 1) {
                        // A real token, but of another lease's lock.
                        sent.add(new Sent("forged", forged.resource(), forged.token(), 1, bystander.leaseId(), FenceOp.WRITE,
                                "LOCK_NOT_HELD"));
                    }
                    if (i == 2) {
                        // Above etcd's revision: only etcd can say so, so this decision waits for etcd.
                        sent.add(new Sent("future", prefix + "future", bystander.token() + 1_000_000_000L, 1,
                                bystander.leaseId(), FenceOp.WRITE, "FUTURE_TOKEN"));
                    }
                }
                send(sent);
                long frozenAt = System.nanoTime();
                List<String> newKeys = sent.stream().filter(s -> !s.id().startsWith("at-fence")).map(Sent::key).distinct()
                        .toList();
                awaitFrozenDecisions(sent, newKeys, prefix + "future");
                assertThat(probe.metric("fence_enforcer_token_verification_waiting", null, null))
                        .as("a stream thread waits for etcd")
                        .isGreaterThanOrEqualTo(1.0);
                assertThat(probe.metric("fence_enforcer_token_verification_etcd_errors_total", null, null))
                        .as("etcd reads that got no answer")
                        .isGreaterThan(errorsBefore);
                List<String> acceptedWhileFrozen = probe.read(FenceTopics.ACCEPTED, k -> k.startsWith(prefix + "verified-"))
                        .stream()
                        .map(r -> header(r, FenceHeaders.WRITER)).filter(writer -> writer.startsWith("at-fence")).toList();
                List<String> decidedFromIndex = probe.read(FenceTopics.ACCEPTED, newKeys::contains).stream()
                        .map(r -> header(r, FenceHeaders.WRITER)).toList();
                System.out.printf("[pause] etcd frozen for %.1f s; at-fence writes accepted meanwhile: %s; new tokens accepted "
                        + "from the index meanwhile: %s; etcd errors: %.0f%n",
                        (System.nanoTime() - frozenAt) / 1e9, acceptedWhileFrozen, decidedFromIndex,
                        probe.metric("fence_enforcer_token_verification_etcd_errors_total", null, null) - errorsBefore);
                stack.resumeEtcd();
                paused = false;
            } finally {
                if (paused) {
                    stack.resumeEtcd();
                }
            }

            Map<String, String> expected = sent.stream()
                    .collect(Collectors.toMap(Sent::id, Sent::outcome, (x, y) -> x, LinkedHashMap::new));
            await("every record decided exactly once").atMost(Duration.ofSeconds(180)).pollInterval(Duration.ofSeconds(2))
                    .untilAsserted(() -> {
                        List<String> outcomes = new ArrayList<>();
                        probe.read(FenceTopics.ACCEPTED, k -> k.startsWith(prefix)).stream()
                                .filter(r -> !"verified-holder".equals(header(r, FenceHeaders.WRITER)))
                                .forEach(r -> outcomes.add(header(r, FenceHeaders.WRITER) + "=accepted"));
                        probe.read(FenceTopics.MARKERS, k -> k.startsWith(prefix)).stream()
                                .filter(r -> !"verified-holder".equals(header(r, FenceHeaders.WRITER)))
                                .forEach(r -> outcomes.add(header(r, FenceHeaders.WRITER) + "=marker"));
                        probe.read(FenceTopics.REJECTED, k -> k.startsWith(prefix))
                                .forEach(r -> outcomes
                                        .add(header(r, FenceHeaders.WRITER) + "=" + header(r, FenceHeaders.REJECTED_REASON)));
                        assertThat(outcomes).as("each record in exactly one place, none lost, none twice")
                                .containsExactlyInAnyOrderElementsOf(
                                        expected.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).toList());
                    });
            for (FencingLease lease : fresh) {
                assertThat(probe.fence(lease.resource())).isEqualTo(lease.token() + ".1");
            }
            for (FencingLease lease : verified) {
                assertThat(probe.fence(lease.resource())).isEqualTo(lease.token() + ".2");
            }
            assertThat(probe.fence(forged.resource())).isEqualTo("none");
            assertThat(probe.health()).isEqualTo("RUNNING");
            // What the enforcer did meanwhile, for the record: its waits for etcd, and how Kafka Streams handled the aborted
            // transaction.
            Files.readString(stack.dir().resolve("enforcer").resolve("enforcer.log")).lines()
                    .filter(line -> line.contains("EtcdTokenVerifier") || line.contains("Exception:")
                            || line.contains("State transition")
                            || line.contains("rebalance") || line.contains("Migrated"))
                    .forEach(line -> System.out.println("[enforcer] " + line));
        }
    }

    /** For the whole freeze: nothing decided unlike the rule (the index may decide tokens it saw), the future one undecided. */
    private static void awaitFrozenDecisions(List<Sent> sent, List<String> newKeys, String futureKey) {
        List<String> acceptable = sent.stream().filter(s -> s.outcome().equals("accepted")).map(Sent::id).toList();
        List<String> markers = sent.stream().filter(s -> s.outcome().equals("marker")).map(Sent::id).toList();
        await("while etcd is frozen, nothing decided unlike the rule and the future token undecided").during(PAUSE)
                .atMost(PAUSE.plusSeconds(30)).pollInterval(Duration.ofSeconds(2)).untilAsserted(() -> {
                    assertThat(probe.read(FenceTopics.ACCEPTED, newKeys::contains))
                            .extracting(r -> header(r, FenceHeaders.WRITER)).isSubsetOf(acceptable);
                    assertThat(probe.read(FenceTopics.MARKERS, newKeys::contains))
                            .extracting(r -> header(r, FenceHeaders.WRITER)).isSubsetOf(markers);
                    assertThat(probe.read(FenceTopics.REJECTED, futureKey::equals)).isEmpty();
                });
    }

    private static void send(List<Sent> records) throws Exception {
        AvroSerializer<BillingSummary> serializer = serializer();
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(
                Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap()),
                new StringSerializer(), new ByteArraySerializer())) {
            for (Sent record : records) {
                RecordHeaders headers = new RecordHeaders();
                headers.add(FenceHeaders.TOKEN, FenceHeaders.encode(record.token()));
                headers.add(FenceHeaders.SEQ, FenceHeaders.encode(record.seq()));
                headers.add(FenceHeaders.OP, FenceHeaders.encode(record.op().name()));
                headers.add(FenceHeaders.LEASE, FenceHeaders.encode(record.lease()));
                headers.add(FenceHeaders.WRITER, FenceHeaders.encode(record.id()));
                byte[] value = record.op() == FenceOp.FENCE
                        ? null
                        : serializer.serialize(FenceTopics.INPUT, TokenVerificationIT.summary(record.key(), 200, record.id()));
                producer.send(new ProducerRecord<>(FenceTopics.INPUT, null, record.key(), value, headers)).get(30,
                        TimeUnit.SECONDS);
            }
        }
    }

    private static AvroSerializer<BillingSummary> serializer() {
        return AvroSerializer.forValues(new RestSchemaRegistryClient(stack.schemaRegistryUrl(), Duration.ofSeconds(10)));
    }
}
