package dev.fencedwrites.producer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceOp;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.contract.NewTopics;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.enforcer.FenceEnforcerConfig;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.services.EnforcerProcess;
import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.Service;
import dev.fencedwrites.testing.CommittedRecords;
import dev.fencedwrites.testing.EtcdNodeExtension;
import dev.fencedwrites.testing.KafkaBrokerExtension;
import io.etcd.jetcd.Client;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: the marker only matters through the real enforcer's decision on a real
 * broker's log order, with leases expiring in a real etcd, which the enforcer also asks whether
 * each raising token is one of the key's real lock acquisitions (token verification).
 *
 * <p>Worker A's pause is modelled in-process: A's write passed its lease check and sits in A's
 * producer buffer (linger.ms = 60 s) while A stops renewing its lease (its etcd client is closed,
 * as if the process were frozen); it leaves the buffer only when A "resumes" and flushes. The
 * demo module does the same with a real SIGSTOP of a worker JVM.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class FenceAtTakeoverIT {
    private static final Duration TTL = Duration.ofSeconds(2);
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    @RegisterExtension
    static final EtcdNodeExtension etcdNode = new EtcdNodeExtension();
    @RegisterExtension
    static final KafkaBrokerExtension kafkaBroker = new KafkaBrokerExtension();
    @TempDir
    static Path dir;
    static Service etcd;
    static Service kafka;
    static Service enforcer;

    @BeforeAll
    static void startServices() throws Exception {
        Path log4j2 = kafkaBroker.log4j2();
        etcd = etcdNode.service();
        kafka = kafkaBroker.service();
        Properties admin = new Properties();
        admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.address());
        try (Admin client = Admin.create(admin)) {
            client.createTopics(
                    List.of(new NewTopic(FenceTopics.INPUT, 3, (short) 1), new NewTopic(FenceTopics.ACCEPTED, 3, (short) 1),
                            new NewTopic(FenceTopics.REJECTED, 3, (short) 1), new NewTopic(FenceTopics.MARKERS, 3, (short) 1)))
                    .all().get(60, TimeUnit.SECONDS);
            NewTopics.awaitWritable(client,
                    List.of(FenceTopics.INPUT, FenceTopics.ACCEPTED, FenceTopics.REJECTED, FenceTopics.MARKERS),
                    Duration.ofSeconds(60));
        }
        // Token verification on: the enforcer checks each raising token in the same etcd the workers lock in.
        enforcer = EnforcerProcess.start(dir.resolve("enforcer"), log4j2, kafka.address(),
                Map.of(FenceEnforcerConfig.TOKEN_VERIFICATION_ENABLE, "true", EtcdSettings.ENDPOINTS, etcd.address()));
    }

    @AfterAll
    static void stopServices() {
        if (enforcer != null) {
            enforcer.close();
        }
    }

    @Test
    void staleWriteLandingAfterTheNewHoldersMarkerIsRejectedBeforeTheNewHolderWrites() throws Exception {
        Takeover takeover = takeover("takeover-" + UUID.randomUUID(), true);

        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
            List<ConsumerRecord<String, String>> rejected = read(FenceTopics.REJECTED, takeover.resource);
            assertThat(rejected).singleElement().satisfies(record -> {
                assertThat(header(record, FenceHeaders.REJECTED_REASON)).isEqualTo("STALE_TOKEN");
                assertThat(header(record, FenceHeaders.TOKEN)).isEqualTo(Long.toString(takeover.tokenA));
                assertThat(header(record, FenceHeaders.REJECTED_HIGHEST)).isEqualTo(takeover.tokenB + ".0");
                assertThat(record.value()).isEqualTo("A's stale value");
            });
        });
        assertThat(takeover.tokenB).isGreaterThan(takeover.tokenA);
        assertThat(read(FenceTopics.ACCEPTED, takeover.resource)).as("markers raise the fence and are not forwarded").isEmpty();
        assertThat(read(FenceTopics.INPUT, takeover.resource))
                .extracting(r -> header(r, FenceHeaders.OP) + "/" + header(r, FenceHeaders.TOKEN)
                        + "." + header(r, FenceHeaders.SEQ))
                .containsExactly("FENCE/" + takeover.tokenA + ".0", "FENCE/" + takeover.tokenB + ".0",
                        "WRITE/" + takeover.tokenA + ".1");
    }

    @Test
    void aSupersededWritersLateWriteIsReportedToItAsFencedWithTheFenceThatRefusedIt() throws Exception {
        String resource = "told-" + UUID.randomUUID();
        List<WriteDecision> heard = new CopyOnWriteArrayList<>();
        try (WriteDecisions decisions = WriteDecisions.start(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.address()),
                "worker-A", heard::add)) {
            decisions.watch(resource, TIMEOUT);
            Takeover takeover = takeover(resource, true, Duration.ofSeconds(5));

            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(heard).singleElement().satisfies(told -> {
                assertThat(told.fenced()).isTrue();
                assertThat(told.reason()).isEqualTo(RejectionReason.STALE_TOKEN);
                assertThat(told.stage()).isEqualTo(FenceHeaders.STAGE_ENFORCER);
                assertThat(told.fence()).isEqualTo(new Fence(takeover.tokenA, 1));
                assertThat(told.highest()).isEqualTo(new Fence(takeover.tokenB, 0));
                assertThat(told.op()).isEqualTo(FenceOp.WRITE);
                assertThat(told.topic()).isEqualTo(FenceTopics.REJECTED);
            }));
        }
    }

    @Test
    void anAcceptedWriteIsReportedAcceptedToItsWriterOnly() throws Exception {
        String resource = "heard-" + UUID.randomUUID();
        List<WriteDecision> mine = new CopyOnWriteArrayList<>();
        List<WriteDecision> others = new CopyOnWriteArrayList<>();
        Map<String, Object> consumer = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.address());
        try (WriteDecisions decisions = WriteDecisions.start(consumer, "worker-heard", mine::add);
                WriteDecisions otherWriter = WriteDecisions.start(consumer, "worker-other", others::add);
                FencingLeaseClient leases = leaseClient();
                FencedProducer<String> producer = producer("worker-heard", 0, FencedProducer.Takeover.PUBLISH_MARKER,
                        new SimpleMeterRegistry())) {
            decisions.watch(resource, TIMEOUT);
            otherWriter.watch(resource, TIMEOUT);
            long[] token = new long[1];
            producer.runUnderLease(leases, resource, TTL, TIMEOUT, lease -> {
                token[0] = lease.token();
                return "accepted value";
            });

            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(mine).singleElement().satisfies(told -> {
                assertThat(told.accepted()).isTrue();
                assertThat(told.fenced()).isFalse();
                assertThat(told.fence()).isEqualTo(new Fence(token[0], 1));
                assertThat(told.reason()).isNull();
                assertThat(told.topic()).isEqualTo(FenceTopics.ACCEPTED);
            }));
            assertThat(others).as("another writer's watcher hears nothing of this writer's writes").isEmpty();
        }
    }

    /** The control: the same interleaving without the marker lets the stale write through, because B has not written yet. */
    @Test
    void withoutTheMarkerTheSameStaleWriteIsAccepted() throws Exception {
        Takeover takeover = takeover("no-marker-" + UUID.randomUUID(), false);

        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(read(FenceTopics.ACCEPTED, takeover.resource))
                .extracting(ConsumerRecord::value).containsExactly("A's stale value"));
        assertThat(read(FenceTopics.REJECTED, takeover.resource)).isEmpty();
    }

    @Test
    void sendsUnderALostLeaseFailFastAndSendNothing() throws Exception {
        String resource = "lost-" + UUID.randomUUID();
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (FencingLeaseClient leases = leaseClient();
                FencedProducer<String> producer = producer("worker-lost", 0, FencedProducer.Takeover.PUBLISH_MARKER, meters);
                Client admin = Client.builder().endpoints(etcd.address()).build()) {
            FencingLease lease = producer.acquire(leases, resource, Duration.ofSeconds(10), TIMEOUT);
            CompletableFuture<LeaseLostException> reported = new CompletableFuture<>();
            lease.onLoss((lost, cause) -> reported.complete(cause));

            admin.getLeaseClient().revoke(lease.leaseId()).get(10, TimeUnit.SECONDS); // an operator, or etcd, ends the lease
            LeaseLostException loss = reported.get(10, TimeUnit.SECONDS);

            assertThat(loss.lossCause()).contains("no longer exists");
            assertThat(lease.state()).isEqualTo(FencingLease.State.LOST);
            assertThatThrownBy(() -> producer.send(lease, "after loss").get(10, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(LeaseLostException.class);
            assertThatThrownBy(() -> producer.sendAndWait(lease, "after loss, sync")).isInstanceOf(LeaseLostException.class)
                    .hasMessageContaining(resource).hasMessageContaining("the write was not sent");
            assertThat(meters.get("fence.producer.sends.refused").counter().count()).isEqualTo(2.0);
            producer.flush();
            assertThat(read(FenceTopics.INPUT, resource)).extracting(r -> header(r, FenceHeaders.OP)).containsExactly("FENCE");
            lease.close();
        }
    }

    @Test
    void runUnderLeasePublishesTheMarkerThenTheWriteAndReleases() throws Exception {
        String resource = "run-" + UUID.randomUUID();
        try (FencingLeaseClient leases = leaseClient();
                FencedProducer<String> producer = producer("worker-run", 0, FencedProducer.Takeover.PUBLISH_MARKER,
                        new SimpleMeterRegistry())) {
            long[] token = new long[1];
            RecordMetadata written = producer.runUnderLease(leases, resource, TTL, TIMEOUT, lease -> {
                token[0] = lease.token();
                return "computed under token " + lease.token();
            });

            assertThat(written.topic()).isEqualTo(FenceTopics.INPUT);
            assertThat(read(FenceTopics.INPUT, resource))
                    .extracting(r -> header(r, FenceHeaders.OP) + "." + header(r, FenceHeaders.SEQ))
                    .containsExactly("FENCE.0", "WRITE.1");
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(read(FenceTopics.ACCEPTED, resource))
                    .singleElement().satisfies(r -> assertThat(r.value()).isEqualTo("computed under token " + token[0])));
            assertThat(Http.get(enforcer.address() + "/metrics").body())
                    .as("the marker's token was verified in etcd before it raised the fence")
                    .containsPattern("(?m)^fence_enforcer_token_verifications_total\\{outcome=\"verified\"\\} [1-9]");
            // Released: another acquisition gets the lock at once.
            try (FencingLease next = leases.acquire(resource, TTL, Duration.ofSeconds(2))) {
                assertThat(next.token()).isGreaterThan(token[0]);
            }
        }
    }

    /**
     * Two threads sending under one lease: the one that took seq 1 reaches the log first, so neither write is rejected
     * OUT_OF_ORDER.
     */
    @Test
    void concurrentSendsUnderOneLeaseReachTheLogInSeqOrder() throws Exception {
        String resource = "concurrent-" + UUID.randomUUID();
        // A serializer that is slow for one value, as a schema registry round trip would be.
        Serializer<String> slowForFirst = (topic, value) -> {
            if ("slow first".equals(value)) {
                try {
                    Thread.sleep(500);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return value == null ? null : value.getBytes(StandardCharsets.UTF_8);
        };
        Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.address(),
                ProducerConfig.CLIENT_ID_CONFIG, "concurrent");
        try (FencingLeaseClient leases = leaseClient();
                FencedProducer<String> producer = FencedProducer.create(config, slowForFirst, FenceTopics.INPUT,
                        "worker-concurrent", FencedProducer.Takeover.PUBLISH_MARKER,
                        new SimpleMeterRegistry());
                FencingLease lease = producer.acquire(leases, resource, Duration.ofSeconds(10), TIMEOUT)) {
            CompletableFuture<CompletableFuture<RecordMetadata>> first = CompletableFuture
                    .supplyAsync(() -> producer.send(lease, "slow first"));
            Thread.sleep(100);
            CompletableFuture<RecordMetadata> second = producer.send(lease, "fast second");
            first.get(10, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS);
            second.get(10, TimeUnit.SECONDS);

            assertThat(read(FenceTopics.INPUT, resource)).extracting(r -> header(r, FenceHeaders.SEQ) + ":" + r.value())
                    .containsExactly("0:null", "1:slow first", "2:fast second");
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(read(FenceTopics.ACCEPTED, resource))
                    .extracting(ConsumerRecord::value).containsExactly("slow first", "fast second"));
            assertThat(read(FenceTopics.REJECTED, resource)).isEmpty();
        }
    }

    private record Takeover(String resource, long tokenA, long tokenB) {
    }

    /**
     * A acquires and queues a write; A freezes (stops renewing); B acquires once A's lease expired,
     * with or without its marker, and has not written; A resumes and its queued write goes out.
     */
    private static Takeover takeover(String resource, boolean markerOnTakeover) throws Exception {
        return takeover(resource, markerOnTakeover, TTL);
    }

    private static Takeover takeover(String resource, boolean markerOnTakeover, Duration ttl) throws Exception {
        FencingLeaseClient leasesA = leaseClient();
        try (FencedProducer<String> producerA = producer("worker-A", 60_000, FencedProducer.Takeover.PUBLISH_MARKER,
                new SimpleMeterRegistry());
                FencingLeaseClient leasesB = leaseClient();
                FencedProducer<String> producerB = producer("worker-B", 0,
                        markerOnTakeover ? FencedProducer.Takeover.PUBLISH_MARKER : FencedProducer.Takeover.NO_MARKER,
                        new SimpleMeterRegistry())) {
            FencingLease leaseA = producerA.acquire(leasesA, resource, ttl, TIMEOUT);
            // checked and queued, not yet sent
            CompletableFuture<RecordMetadata> staleWrite = producerA.send(leaseA, "A's stale value");
            leasesA.close(); // A freezes: no more keep-alives, so etcd expires its lease after the TTL

            try (FencingLease leaseB = producerB.acquire(leasesB, resource, ttl, TIMEOUT)) {
                assertThat(staleWrite).as("A's write is still in A's buffer").isNotDone();
                producerA.flush(); // A resumes: the queued write leaves the process
                staleWrite.get(30, TimeUnit.SECONDS);
                return new Takeover(resource, leaseA.token(), leaseB.token());
            }
        }
    }

    private static FencingLeaseClient leaseClient() {
        return new FencingLeaseClient(List.of(etcd.address()), FencingLeaseClient.DEFAULT_LOCK_PREFIX);
    }

    private static FencedProducer<String> producer(String writer, int lingerMs, FencedProducer.Takeover takeover,
            SimpleMeterRegistry meters) {
        Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.address(),
                ProducerConfig.LINGER_MS_CONFIG, lingerMs,
                ProducerConfig.CLIENT_ID_CONFIG, writer + "-" + UUID.randomUUID());
        return FencedProducer.create(config, new StringSerializer(), FenceTopics.INPUT, writer, takeover, meters);
    }

    /** Every committed record of {@code topic} with {@code key}, read from the beginning to the end offsets. */
    private static List<ConsumerRecord<String, String>> read(String topic, String key) {
        return CommittedRecords.read(kafka.address(), topic, key::equals, new StringDeserializer());
    }

    private static String header(ConsumerRecord<?, ?> record, String name) {
        var header = record.headers().lastHeader(name);
        return header == null ? null : FenceHeaders.decode(header.value());
    }
}
