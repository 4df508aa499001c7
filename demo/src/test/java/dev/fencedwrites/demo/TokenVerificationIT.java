package dev.fencedwrites.demo;

import static dev.fencedwrites.demo.StackProbe.header;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceOp;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.etcd.LockKeys;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.localstack.testing.SharedBillingStack;
import dev.fencedwrites.producer.FencedProducer;
import dev.fencedwrites.producer.FencingLease;
import dev.fencedwrites.producer.FencingLeaseClient;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Needs real services: a token is only verified against a real etcd's history (its revisions,
 * leases and lock keys, as producer-lib's lock writes them), by the real enforcer on a real
 * broker, with the row in PostgreSQL as the last witness (on {@code ./fence up}).
 */
@Timeout(value = 8, unit = TimeUnit.MINUTES)
@ExtendWith(SharedBillingStack.class)
class TokenVerificationIT {
    private static final Duration TTL = Duration.ofSeconds(60);
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final Duration DECIDED = Duration.ofSeconds(120);

    static LocalStack stack;
    static StackProbe probe;

    /** The stack EtcdPauseIT uses too; this class's keys are its own and its counters are differences. */
    @BeforeAll
    static void useSharedStack(LocalStack shared) {
        stack = shared;
        probe = new StackProbe(stack);
    }

    /**
     * A record sent straight to the input topic with forged fence headers.
     *
     * @param name     unique; sent as {@code fence.writer} to find the record's outcome
     * @param key      the record key
     * @param token    {@code fence.token}
     * @param leases   the {@code fence.lease} header values, in order (none, one, or several)
     * @param op       WRITE (with a value that would change the row) or FENCE (a marker, null value)
     * @param expected the reason it must be rejected with
     */
    private record Forgery(String name, String key, long token, List<String> leases, FenceOp op, RejectionReason expected) {
    }

    @Test
    void forgedTokensAreRejectedWithTheirReasonWithoutMovingTheFenceAndTheNextHolderIsAccepted() throws Exception {
        String key = "verify-" + UUID.randomUUID();
        String other = key + "-other";
        String fresh = key + "-fresh";
        Map<String, Double> before = counters();
        try (FencingLeaseClient leasesA = leaseClient();
                FencingLeaseClient leasesB = leaseClient();
                FencingLeaseClient leasesC = leaseClient();
                Client etcd = Client.builder().endpoints(stack.etcdEndpoints()).build();
                FencedProducer<BillingSummary> producerA = producer("worker-A");
                FencedProducer<BillingSummary> producerB = producer("worker-B")) {
            FencingLease a = producerA.acquire(leasesA, key, TTL, TIMEOUT);
            producerA.sendAndWait(a, summary(key, 100, "worker-A"));
            String fenceA = a.token() + ".1";
            String rowA = a.token() + ".1 worker-A";
            await("A's write accepted and in the table").atMost(DECIDED).ignoreExceptions().untilAsserted(() -> {
                assertThat(probe.fence(key)).isEqualTo(fenceA);
                assertThat(probe.row(key)).isEqualTo(rowA);
            });

            // Real material to forge with: a lock held for another resource, A's lock on a key with no
            // fence yet (no marker), a live lease that holds no lock, and B queued behind A on the key.
            FencingLease c = leasesC.acquire(other, TTL, TIMEOUT);
            FencingLease aFresh = leasesA.acquire(fresh, TTL, TIMEOUT);
            long idleLease = etcd.getLeaseClient().grant(60).get(30, TimeUnit.SECONDS).getID();
            CompletableFuture<FencingLease> waitingB = leasesB.acquireAsync(key, TTL);
            KeyValue waiter = await("B's lock key queued behind A's").atMost(TIMEOUT)
                    .until(() -> lockKeys(etcd, key), keys -> keys.size() == 2).get(1);
            long leaseB = waiter.getLease();
            long queuedAt = waiter.getCreateRevision();
            assertThat(c.token()).isGreaterThan(a.token());
            assertThat(queuedAt).isGreaterThan(c.token());

            List<Forgery> forgeries = new ArrayList<>();
            for (FenceOp op : List.of(FenceOp.WRITE, FenceOp.FENCE)) {
                String p = op.name().toLowerCase() + "-";
                forgeries.addAll(List.of(
                        new Forgery(p + "max-token", key, Long.MAX_VALUE, List.of(lease(a)), op, RejectionReason.FUTURE_TOKEN),
                        new Forgery(p + "max-token-other-lease", key, Long.MAX_VALUE, List.of(lease(c)), op,
                                RejectionReason.FUTURE_TOKEN),
                        new Forgery(p + "lease-as-token-same-lease", key, a.leaseId(), List.of(lease(a)), op,
                                RejectionReason.LEASE_AS_TOKEN),
                        new Forgery(p + "lease-as-token-other-lease", key, a.leaseId(), List.of(lease(c)), op,
                                RejectionReason.FUTURE_TOKEN),
                        new Forgery(p + "lease-as-token-no-lease", key, a.leaseId(), List.of(), op,
                                RejectionReason.MISSING_LEASE),
                        new Forgery(p + "other-resources-lock", key, c.token(), List.of(lease(c)), op,
                                RejectionReason.LOCK_NOT_HELD),
                        new Forgery(p + "real-revision-idle-lease", key, c.token(), List.of(Long.toString(idleLease)), op,
                                RejectionReason.LOCK_NOT_HELD),
                        new Forgery(p + "queued-waiters-revision", key, queuedAt, List.of(Long.toString(leaseB)), op,
                                RejectionReason.LOCK_NOT_HELD),
                        new Forgery(p + "holders-token-other-lease", fresh, aFresh.token(), List.of(lease(c)), op,
                                RejectionReason.LOCK_NOT_HELD),
                        new Forgery(p + "holders-token-idle-lease", fresh, aFresh.token(), List.of(Long.toString(idleLease)), op,
                                RejectionReason.LOCK_NOT_HELD),
                        new Forgery(p + "no-lease", key, c.token(), List.of(), op, RejectionReason.MISSING_LEASE),
                        new Forgery(p + "lease-not-a-number", key, c.token(), List.of("lease-" + a.leaseId()), op,
                                RejectionReason.MALFORMED_LEASE),
                        new Forgery(p + "negative-lease", key, c.token(), List.of("-" + a.leaseId()), op,
                                RejectionReason.MALFORMED_LEASE),
                        new Forgery(p + "two-leases", key, c.token(), List.of(lease(c), lease(c)), op,
                                RejectionReason.MALFORMED_LEASE)));
            }
            send(forgeries);

            Map<String, String> expected = forgeries.stream()
                    .collect(Collectors.toMap(Forgery::name, f -> f.expected().name(), (x, y) -> x, LinkedHashMap::new));
            await("every forgery rejected").atMost(DECIDED).pollInterval(Duration.ofSeconds(1)).untilAsserted(() -> {
                List<ConsumerRecord<String, byte[]>> rejected = probe.read(FenceTopics.REJECTED,
                        k -> k.equals(key) || k.equals(fresh));
                assertThat(rejected.stream().collect(
                        Collectors.toMap(r -> header(r, FenceHeaders.WRITER), r -> header(r, FenceHeaders.REJECTED_REASON))))
                        .as("forgery -> rejection reason").containsExactlyInAnyOrderEntriesOf(expected);
            });
            assertThat(probe.fence(key)).as("the key's fence did not move").isEqualTo(fenceA);
            assertThat(probe.fence(fresh)).as("no forged token raised the fresh key's first fence").isEqualTo("none");
            assertThat(probe.row(key)).as("the row is still A's").isEqualTo(rowA);
            assertThat(probe.row(fresh)).isNull();
            assertThat(probe.read(FenceTopics.ACCEPTED, k -> k.equals(key) || k.equals(fresh)))
                    .extracting(r -> header(r, FenceHeaders.WRITER))
                    .as("only A's write was accepted").containsExactly("worker-A");
            assertThat(probe.read(FenceTopics.MARKERS, k -> k.equals(key) || k.equals(fresh)))
                    .extracting(r -> header(r, FenceHeaders.TOKEN))
                    .as("no forged marker reached the markers topic").containsExactly(Long.toString(a.token()));

            assertCountedAsForged(before, forgeries);

            a.close(); // A releases: its lock key goes with its lease, and B, queued, gets the lock
            FencingLease b = waitingB.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            assertThat(b.leaseId()).isEqualTo(leaseB);
            producerB.sendFence(b).get(30, TimeUnit.SECONDS);
            producerB.sendAndWait(b, summary(key, 200, "worker-B"));
            await("B's write accepted and in the table").atMost(DECIDED).ignoreExceptions().untilAsserted(() -> {
                assertThat(probe.fence(key)).isEqualTo(b.token() + ".1");
                assertThat(probe.row(key)).isEqualTo(b.token() + ".1 worker-B");
            });
            assertThat(probe.read(FenceTopics.ACCEPTED, key::equals)).extracting(r -> header(r, FenceHeaders.WRITER))
                    .containsExactly("worker-A", "worker-B");
            assertThat(probe.read(FenceTopics.MARKERS, key::equals)).extracting(r -> header(r, FenceHeaders.TOKEN))
                    .containsExactly(Long.toString(a.token()), Long.toString(b.token()));
            assertThat(counters().get("verified") - before.get("verified"))
                    .as("B's marker verified too; B's write matched the stored lease").isEqualTo(2.0);
            b.close();
            c.close();
            aFresh.close();
        }
    }

    /**
     * The enforcer's counters since {@code before}: each forgery's rejection reason, A's marker as the one verified token,
     * etcd's verdicts each read once and read ahead.
     */
    private static void assertCountedAsForged(Map<String, Double> before, List<Forgery> forgeries) throws Exception {
        Map<RejectionReason, Long> reasons = new EnumMap<>(RejectionReason.class);
        forgeries.forEach(f -> reasons.merge(f.expected(), 1L, Long::sum));
        Map<String, Double> after = counters();
        for (RejectionReason reason : reasons.keySet()) {
            assertThat(after.get(reason.name()) - before.get(reason.name()))
                    .as("fence_enforcer_records_fenced_total{reason=%s}", reason)
                    .isEqualTo(reasons.get(reason).doubleValue());
        }
        assertThat(after.get("verified") - before.get("verified"))
                .as("verified: A's marker only; A's write at its fence matched the stored lease").isEqualTo(1.0);
        assertThat(after.get("lock_not_held") - before.get("lock_not_held"))
                .isEqualTo(reasons.get(RejectionReason.LOCK_NOT_HELD).doubleValue());
        assertThat(after.get("future_token") - before.get("future_token"))
                .isEqualTo(reasons.get(RejectionReason.FUTURE_TOKEN).doubleValue());
        assertThat(after.get("cache_hits") - before.get("cache_hits"))
                .as("each forged marker's (key, token, lease) that was read "
                        + "for its write first; future revisions are not cached")
                .isEqualTo(reasons.get(RejectionReason.LOCK_NOT_HELD) / 2.0);
        assertThat(after.get("read_ahead_used") - before.get("read_ahead_used") + after.get("index_answered")
                - before.get("index_answered"))
                .as("every verdict etcd's history gave was known at the decision, from the index of lock holders or read "
                        + "ahead when its record was polled: A's marker and each write refused lock_not_held (future "
                        + "revisions are read again at the decision)")
                .isEqualTo(1 + reasons.get(RejectionReason.LOCK_NOT_HELD) / 2.0);
    }

    /**
     * Found in review: etcd's lock gives waiters woken by one change the same token (the revision of
     * the read that found them the oldest), so a holder of another resource's lock can carry a token
     * equal to this key's fence. With its own lease it is refused {@code LOCK_NOT_HELD}, and its huge
     * seq does not lock the key's real holder out.
     */
    @Test
    void anotherLocksTokenEqualToTheKeysFenceIsRejectedAndTheHolderWritesOn() throws Exception {
        String x = "same-token-x-" + UUID.randomUUID();
        String y = "same-token-y-" + UUID.randomUUID();
        try (FencingLeaseClient leases = leaseClient();
                Client etcd = Client.builder().endpoints(stack.etcdEndpoints()).build();
                FencedProducer<BillingSummary> producerY = producer("worker-Y")) {
            // One lease holds both locks (the Mutex layout, put by hand); a waiter queues behind each.
            long first = etcd.getLeaseClient().grant(60).get(30, TimeUnit.SECONDS).getID();
            for (String resource : List.of(x, y)) {
                ByteSequence lockKey = ByteSequence.from(
                        LockKeys.key(FencingLeaseClient.DEFAULT_LOCK_PREFIX, resource.getBytes(StandardCharsets.UTF_8), first),
                        StandardCharsets.UTF_8);
                etcd.getKVClient()
                        .put(lockKey, ByteSequence.EMPTY, PutOption.builder().withLeaseId(first).build())
                        .get(30, TimeUnit.SECONDS);
            }
            CompletableFuture<FencingLease> waitingX = leases.acquireAsync(x, TTL);
            CompletableFuture<FencingLease> waitingY = leases.acquireAsync(y, TTL);
            await("both waiters queued").atMost(TIMEOUT)
                    .until(() -> lockKeys(etcd, x).size() == 2 && lockKeys(etcd, y).size() == 2);
            etcd.getLeaseClient().revoke(first).get(30, TimeUnit.SECONDS); // deletes both holders' keys in one revision
            FencingLease holderX = waitingX.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            FencingLease holderY = waitingY.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            assertThat(holderX.token()).as("both woken by the same delete, found the oldest at the same revision")
                    .isEqualTo(holderY.token());

            producerY.sendFence(holderY).get(30, TimeUnit.SECONDS);
            producerY.sendAndWait(holderY, summary(y, 100, "worker-Y"));
            await("Y's holder's write accepted").atMost(DECIDED).ignoreExceptions()
                    .untilAsserted(() -> assertThat(probe.fence(y)).isEqualTo(holderY.token() + ".1"));

            send(List.of(new Forgery("x-holder-on-y", y, holderX.token(), List.of(lease(holderX)), FenceOp.WRITE,
                    RejectionReason.LOCK_NOT_HELD)),
                    Long.MAX_VALUE);
            await("the borrowed token rejected").atMost(DECIDED).pollInterval(Duration.ofSeconds(1))
                    .untilAsserted(() -> assertThat(probe.read(FenceTopics.REJECTED, y::equals)).singleElement().satisfies(r -> {
                        assertThat(header(r, FenceHeaders.WRITER)).isEqualTo("x-holder-on-y");
                        assertThat(header(r, FenceHeaders.REJECTED_REASON)).isEqualTo("LOCK_NOT_HELD");
                        assertThat(header(r, FenceHeaders.REJECTED_HIGHEST)).isEqualTo(holderY.token() + ".1");
                    }));
            producerY.sendAndWait(holderY, summary(y, 200, "worker-Y"));
            await("Y's holder writes on").atMost(DECIDED).ignoreExceptions().untilAsserted(() -> {
                assertThat(probe.fence(y)).isEqualTo(holderY.token() + ".2");
                assertThat(probe.row(y)).isEqualTo(holderY.token() + ".2 worker-Y");
            });
            holderX.close();
            holderY.close();
        }
    }

    /**
     * Anyone who knows the holder's lease id (it is in every accepted record) sends etcd's current revision under it: every
     * revision of the holder's tenure reads as held, but a raise under the fence's own lease must come from a new tenure,
     * so it is rejected LOCK_NOT_HELD and the holder writes on. A new lock key under the same lease (a new tenure) raises it.
     */
    @Test
    void aHigherTokenUnderTheHoldersOwnLeaseIsRejectedUnlessItComesFromANewTenure() throws Exception {
        String key = "tenure-" + UUID.randomUUID();
        try (FencingLeaseClient leases = leaseClient();
                Client etcd = Client.builder().endpoints(stack.etcdEndpoints()).build();
                FencedProducer<BillingSummary> producer = producer("worker-T")) {
            FencingLease holder = producer.acquire(leases, key, TTL, TIMEOUT);
            producer.sendAndWait(holder, summary(key, 100, "worker-T"));
            await("the holder's write accepted").atMost(DECIDED).ignoreExceptions()
                    .untilAsserted(() -> assertThat(probe.fence(key)).isEqualTo(holder.token() + ".1"));
            long now = etcd.getKVClient().put(ByteSequence.from(key + "-elsewhere", StandardCharsets.UTF_8),
                    ByteSequence.EMPTY).get(30, TimeUnit.SECONDS).getHeader().getRevision();
            assertThat(now).isGreaterThan(holder.token());

            send(List.of(new Forgery("same-lease-now", key, now, List.of(lease(holder)), FenceOp.WRITE,
                    RejectionReason.LOCK_NOT_HELD)));
            await("the same tenure's later revision rejected").atMost(DECIDED).pollInterval(Duration.ofSeconds(1))
                    .untilAsserted(() -> assertThat(probe.read(FenceTopics.REJECTED, key::equals)).singleElement()
                            .satisfies(r -> {
                                assertThat(header(r, FenceHeaders.WRITER)).isEqualTo("same-lease-now");
                                assertThat(header(r, FenceHeaders.REJECTED_REASON)).isEqualTo("LOCK_NOT_HELD");
                                assertThat(header(r, FenceHeaders.REJECTED_HIGHEST)).isEqualTo(holder.token() + ".1");
                            }));
            producer.sendAndWait(holder, summary(key, 200, "worker-T"));
            await("the holder writes on").atMost(DECIDED).ignoreExceptions()
                    .untilAsserted(() -> assertThat(probe.row(key)).isEqualTo(holder.token() + ".2 worker-T"));

            // A new tenure under the same lease: the lock key deleted and put again, found the oldest at its creation.
            ByteSequence lockKey = ByteSequence.from(
                    LockKeys.key(FencingLeaseClient.DEFAULT_LOCK_PREFIX, key.getBytes(StandardCharsets.UTF_8), holder.leaseId()),
                    StandardCharsets.UTF_8);
            etcd.getKVClient().delete(lockKey).get(30, TimeUnit.SECONDS);
            long reacquired = etcd.getKVClient()
                    .put(lockKey, ByteSequence.EMPTY, PutOption.builder().withLeaseId(holder.leaseId()).build())
                    .get(30, TimeUnit.SECONDS).getHeader().getRevision();
            send(List.of(new Forgery("same-lease-new-tenure", key, reacquired, List.of(lease(holder)), FenceOp.WRITE, null)));
            await("the new tenure's token raises the fence").atMost(DECIDED).ignoreExceptions()
                    .untilAsserted(() -> assertThat(probe.fence(key)).isEqualTo(reacquired + ".1"));
            holder.close();
        }
    }

    private static String lease(FencingLease lease) {
        return Long.toString(lease.leaseId());
    }

    /** The lock keys under {@code resource}'s lock, oldest first. */
    private static List<KeyValue> lockKeys(Client etcd, String resource) throws Exception {
        String prefix = LockKeys.name(FencingLeaseClient.DEFAULT_LOCK_PREFIX, resource) + "/";
        return etcd.getKVClient().get(ByteSequence.from(prefix, StandardCharsets.UTF_8), GetOption.builder().isPrefix(true)
                .withSortField(GetOption.SortTarget.CREATE).withSortOrder(GetOption.SortOrder.ASCEND).build())
                .get(30, TimeUnit.SECONDS).getKvs();
    }

    /** Sends each forgery in order with a plain producer (murmur2, Kafka's default partitioner, as the wire contract says). */
    private static void send(List<Forgery> forgeries) throws Exception {
        send(forgeries, -1);
    }

    /** {@link #send(List)}, each write with {@code fence.seq} = {@code seq} (or the usual 1 when negative). */
    private static void send(List<Forgery> forgeries, long seq) throws Exception {
        AvroSerializer<BillingSummary> serializer = AvroSerializer
                .forValues(new RestSchemaRegistryClient(stack.schemaRegistryUrl(), Duration.ofSeconds(10)));
        Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap());
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(config, new StringSerializer(),
                new ByteArraySerializer())) {
            for (Forgery forgery : forgeries) {
                RecordHeaders headers = new RecordHeaders();
                headers.add(FenceHeaders.TOKEN, FenceHeaders.encode(forgery.token()));
                headers.add(FenceHeaders.SEQ, FenceHeaders.encode(forgery.op() == FenceOp.FENCE ? 0 : seq >= 0 ? seq : 1));
                headers.add(FenceHeaders.OP, FenceHeaders.encode(forgery.op().name()));
                forgery.leases().forEach(lease -> headers.add(FenceHeaders.LEASE, FenceHeaders.encode(lease)));
                headers.add(FenceHeaders.WRITER, FenceHeaders.encode(forgery.name()));
                byte[] value = forgery.op() == FenceOp.FENCE
                        ? null
                        : serializer.serialize(FenceTopics.INPUT, summary(forgery.key(), 666, forgery.name()));
                producer.send(new ProducerRecord<>(FenceTopics.INPUT, null, forgery.key(), value, headers)).get(30,
                        TimeUnit.SECONDS);
            }
        }
    }

    /**
     * fence_enforcer_records_fenced_total by reason, fence_enforcer_token_verifications_total by outcome, and the verifier's
     * cache hits, from the enforcer's /metrics.
     */
    private static Map<String, Double> counters() throws Exception {
        Map<String, Double> counters = new LinkedHashMap<>();
        for (RejectionReason reason : RejectionReason.values()) {
            counters.put(reason.name(), probe.metric("fence_enforcer_records_fenced_total", "reason", reason.name()));
        }
        for (String outcome : Set.of("verified", "lock_not_held", "future_token")) {
            counters.put(outcome, probe.metric("fence_enforcer_token_verifications_total", "outcome", outcome));
        }
        counters.put("cache_hits", probe.metric("fence_enforcer_token_verification_cache_hits_total", null, null));
        counters.put("read_ahead_used", probe.metric("fence_enforcer_token_verification_read_ahead_total", "event", "used"));
        counters.put("index_answered",
                probe.metric("fence_enforcer_token_verification_index_lookups_total", "result", "answered"));
        return counters;
    }

    private static FencingLeaseClient leaseClient() {
        return new FencingLeaseClient(List.of(stack.etcdEndpoints()), FencingLeaseClient.DEFAULT_LOCK_PREFIX);
    }

    private static FencedProducer<BillingSummary> producer(String writer) {
        Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap(),
                ProducerConfig.CLIENT_ID_CONFIG,
                writer + "-" + UUID.randomUUID());
        return FencedProducer.create(config,
                AvroSerializer.<BillingSummary>forValues(new RestSchemaRegistryClient(stack.schemaRegistryUrl(),
                        Duration.ofSeconds(10))),
                FenceTopics.INPUT, writer, FencedProducer.Takeover.PUBLISH_MARKER, new SimpleMeterRegistry());
    }

    static BillingSummary summary(String customer, long amountMinor, String computedBy) {
        return BillingSummary.newBuilder().setCustomerId(customer).setBillingPeriod("2026-12").setAmountMinor(amountMinor)
                .setCurrency("EUR").setLineItems(1).setComputedAt(Instant.parse("2026-12-01T10:00:00Z")).setComputedBy(computedBy)
                .build();
    }
}
