package dev.fencedwrites.producer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.Service;
import dev.fencedwrites.testing.EtcdNodeExtension;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Needs real services: tokens are etcd revisions, and lock exclusion, lease revocation and expiry under a frozen server are
 * etcd's behaviour, not ours.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class) // the freeze runs last; every other test is independent of order
class FencingLeaseIT {
    private static final Duration TTL = Duration.ofSeconds(5);
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final Duration RPC = Duration.ofSeconds(10);
    private static final Pattern LEASE_ID = Pattern.compile("\"ID\":\"(\\d+)\"");

    @RegisterExtension
    static final EtcdNodeExtension etcdNode = new EtcdNodeExtension();
    static Service etcd;
    /** Reads etcd directly, independent of the clients under test. */
    static Client reader;

    @BeforeAll
    static void startEtcd() throws Exception {
        etcd = etcdNode.service();
        reader = Client.builder().endpoints(etcd.address()).build();
    }

    @AfterAll
    static void stopEtcd() {
        if (reader != null) {
            reader.close();
        }
    }

    @Test
    void tokenIsTheLockRevisionNotTheLeaseId() throws Exception {
        try (FencingLeaseClient client = newClient(); FencingLease lease = client.acquire("token-is-revision", TTL, TIMEOUT)) {
            long currentRevision = reader.getKVClient().get(bytes("any-key")).get(RPC.toSeconds(), TimeUnit.SECONDS).getHeader()
                    .getRevision();

            assertThat(lease.token()).isPositive().isNotEqualTo(lease.leaseId()).isLessThanOrEqualTo(currentRevision);
            assertThat(lockKeys("token-is-revision")).singleElement().satisfies(key -> {
                assertThat(key.getLease()).isEqualTo(lease.leaseId());
                assertThat(key.getCreateRevision()).isLessThanOrEqualTo(lease.token());
            });
        }
    }

    @Test
    void laterAcquisitionsCarryHigherTokens() throws Exception {
        List<Long> tokens = new ArrayList<>();
        try (FencingLeaseClient client = newClient()) {
            for (int i = 0; i < 20; i++) {
                try (FencingLease lease = client.acquire("later-is-higher", TTL, TIMEOUT)) {
                    tokens.add(lease.token());
                }
            }
        }

        assertThat(tokens).hasSize(20).isSorted().doesNotHaveDuplicates();
    }

    /**
     * 1 000 acquisitions of one resource by 4 competing clients (own connections): tokens strictly
     * increase in grant order, holdings never overlap in time, and while each holder holds, etcd's
     * lock keys agree that its key is the owner (the oldest key under the lock name).
     */
    @Test
    void thousandCompetingAcquisitionsNeverOverlapAndTokensFollowGrantOrder() throws Exception {
        String resource = "competing";
        int clientsCount = 4;
        int perClient = 250;
        List<FencingLeaseClient> clients = new ArrayList<>();
        ExecutorService threads = Executors.newFixedThreadPool(clientsCount);
        List<Holding> holdings = new ArrayList<>();
        try {
            List<Future<List<Holding>>> results = new ArrayList<>();
            for (int c = 0; c < clientsCount; c++) {
                FencingLeaseClient client = newClient();
                clients.add(client);
                results.add(threads.submit(() -> {
                    List<Holding> mine = new ArrayList<>();
                    for (int i = 0; i < perClient; i++) {
                        try (FencingLease lease = client.acquire(resource, TTL, TIMEOUT)) {
                            long acquired = System.nanoTime();
                            List<KeyValue> keys = lockKeys(resource); // the holder's "work": one etcd round trip
                            KeyValue owner = keys.stream().min(Comparator.comparingLong(KeyValue::getCreateRevision))
                                    .orElseThrow();
                            mine.add(
                                    new Holding(lease.token(), acquired, System.nanoTime(), owner.getLease() == lease.leaseId()));
                        }
                    }
                    return mine;
                }));
            }
            for (Future<List<Holding>> result : results) {
                holdings.addAll(result.get(4, TimeUnit.MINUTES));
            }
        } finally {
            threads.shutdownNow();
            clients.forEach(FencingLeaseClient::close);
        }

        List<Holding> byGrant = holdings.stream().sorted(Comparator.comparingLong(Holding::acquiredNanos)).toList();
        assertThat(byGrant).hasSize(clientsCount * perClient).extracting(Holding::token).doesNotHaveDuplicates().isSorted();
        assertThat(byGrant)
                .allSatisfy(h -> assertThat(h.ownerInEtcd()).as("etcd's oldest lock key is the holder's, for %s", h).isTrue());
        for (int i = 1; i < byGrant.size(); i++) {
            assertThat(byGrant.get(i).acquiredNanos()).as("holding %s starts after %s ended", byGrant.get(i), byGrant.get(i - 1))
                    .isGreaterThan(byGrant.get(i - 1).releasedNanos());
        }
    }

    /** A waiter that gives up while the lock is held is gone for good: the lock passes it by once the holder releases. */
    @Test
    void cancelledWaiterIsNeverGrantedTheLock() throws Exception {
        String resource = "cancelled-waiter";
        try (FencingLeaseClient holder = newClient();
                FencingLeaseClient waiter = newClient();
                FencingLeaseClient next = newClient()) {
            FencingLease held = holder.acquire(resource, TTL, TIMEOUT);
            CompletableFuture<FencingLease> pending = waiter.acquireAsync(resource, TTL);
            await().atMost(Duration.ofSeconds(10)).until(() -> lockKeys(resource).size() == 2);
            long waiterLease = lockKeys(resource).stream().mapToLong(KeyValue::getLease).filter(id -> id != held.leaseId())
                    .findFirst().orElseThrow();

            assertThat(pending.cancel(true)).isTrue();
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
                assertThat(leaseIds()).doesNotContain(waiterLease);
                assertThat(lockKeys(resource)).extracting(KeyValue::getLease).containsExactly(held.leaseId());
            });
            held.close();

            try (FencingLease granted = next.acquire(resource, TTL, Duration.ofSeconds(5))) {
                assertThat(granted.token()).isGreaterThan(held.token());
                assertThat(lockKeys(resource)).extracting(KeyValue::getLease).containsExactly(granted.leaseId());
            }
            assertThat(pending).isCancelled();
        }
    }

    /** Completing the future yourself (here with a timeout value) gives the attempt up just like cancelling it. */
    @Test
    void waiterCompletedByTheCallerIsNeverGrantedTheLock() throws Exception {
        String resource = "completed-waiter";
        try (FencingLeaseClient holder = newClient();
                FencingLeaseClient waiter = newClient();
                FencingLeaseClient next = newClient()) {
            FencingLease held = holder.acquire(resource, TTL, TIMEOUT);
            CompletableFuture<FencingLease> pending = waiter.acquireAsync(resource, TTL);
            await().atMost(Duration.ofSeconds(10)).until(() -> lockKeys(resource).size() == 2);

            assertThat(pending.complete(null)).isTrue();
            await().atMost(Duration.ofSeconds(10)).untilAsserted(
                    () -> assertThat(lockKeys(resource)).extracting(KeyValue::getLease).containsExactly(held.leaseId()));
            held.close();

            try (FencingLease granted = next.acquire(resource, TTL, Duration.ofSeconds(5))) {
                assertThat(lockKeys(resource)).extracting(KeyValue::getLease).containsExactly(granted.leaseId());
            }
        }
    }

    /** A listener that blocks delays no keep-alive: another lease of the same client stays valid well past its TTL. */
    @Test
    void aBlockingLossListenerDoesNotStallRenewals() throws Exception {
        try (FencingLeaseClient client = newClient();
                FencingLease victim = client.acquire("blocking-listener-victim", TTL, TIMEOUT);
                FencingLease other = client.acquire("blocking-listener-other", Duration.ofSeconds(2), TIMEOUT)) {
            CompletableFuture<String> listenerThread = new CompletableFuture<>();
            victim.onLoss((lost, cause) -> {
                listenerThread.complete(Thread.currentThread().getName());
                try {
                    Thread.sleep(6_000); // a listener doing blocking work (e.g. closing resources)
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            reader.getLeaseClient().revoke(victim.leaseId()).get(RPC.toSeconds(), TimeUnit.SECONDS);

            assertThat(listenerThread.get(10, TimeUnit.SECONDS)).isEqualTo("fence-lease-events");
            Thread.sleep(4_000); // twice the other lease's TTL, while the listener still blocks
            assertThat(other.state()).isEqualTo(FencingLease.State.HELD);
        }
    }

    /** Closing the client fails pending acquisitions and reports held leases lost, revoking them. */
    @Test
    void closingTheClientFailsPendingAcquisitionsAndReportsHeldLeasesLost() throws Exception {
        String resource = "client-closed";
        FencingLeaseClient holder = newClient();
        FencingLeaseClient waiter = newClient();
        FencingLease held = holder.acquire(resource, TTL, TIMEOUT);
        CompletableFuture<LeaseLostException> reported = new CompletableFuture<>();
        held.onLoss((lost, cause) -> reported.complete(cause));
        CompletableFuture<FencingLease> pending = waiter.acquireAsync(resource, TTL);
        await().atMost(Duration.ofSeconds(10)).until(() -> lockKeys(resource).size() == 2);

        waiter.close();
        holder.close();

        assertThat(pending).failsWithin(Duration.ofSeconds(1)).withThrowableOfType(ExecutionException.class)
                .havingCause().isInstanceOf(LeaseAcquisitionException.class).withMessageContaining("client was closed");
        assertThat(reported.get(5, TimeUnit.SECONDS).lossCause()).isEqualTo("the lease client was closed");
        assertThat(held.state()).isEqualTo(FencingLease.State.LOST);
        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(lockKeys(resource)).isEmpty());
    }

    /** If the FENCE marker cannot be published, acquire fails and the lock is released, not left held by nobody. */
    @Test
    void failedMarkerReleasesTheLock() throws Exception {
        Map<String, Object> unreachable = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1",
                ProducerConfig.MAX_BLOCK_MS_CONFIG, 500);
        try (FencingLeaseClient client = newClient();
                FencedProducer<String> producer = FencedProducer.create(unreachable, new StringSerializer(), "fenced-writes",
                        "marker-test")) {
            assertThatThrownBy(() -> producer.acquire(client, "marker-fails", TTL, Duration.ofSeconds(5)))
                    .isInstanceOf(LeaseAcquisitionException.class).hasMessageContaining("could not publish its FENCE marker");
            assertThat(lockKeys("marker-fails")).isEmpty();
        }
    }

    @Test
    void timedOutAcquisitionLeavesNoLockKeyOrLease() throws Exception {
        String resource = "timed-out";
        try (FencingLeaseClient a = newClient(); FencingLeaseClient b = newClient()) {
            FencingLease held = a.acquire(resource, TTL, TIMEOUT);
            try {
                assertThatThrownBy(() -> b.acquire(resource, TTL, Duration.ofSeconds(1)))
                        .isInstanceOf(LeaseAcquisitionException.class)
                        .hasMessageContaining("waiting for the lock on timed-out (another holder has it)");

                // The given-up lease is revoked asynchronously (so the timeout holds even if etcd stalls).
                await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
                    assertThat(lockKeys(resource)).extracting(KeyValue::getLease).containsExactly(held.leaseId());
                    assertThat(leaseIds()).containsExactly(held.leaseId());
                });
            } finally {
                held.close();
            }
            try (FencingLease next = b.acquire(resource, TTL, Duration.ofSeconds(2))) {
                assertThat(next.isValid()).isTrue();
            }
        }
    }

    @Test
    void closeReleasesTheLockAndRevokesTheLease() throws Exception {
        String resource = "close-releases";
        try (FencingLeaseClient a = newClient(); FencingLeaseClient b = newClient()) {
            FencingLease lease = a.acquire(resource, TTL, TIMEOUT);
            lease.close();

            assertThat(lease.isValid()).isFalse();
            assertThat(lease.lossCause()).isEqualTo("released");
            assertThat(lockKeys(resource)).isEmpty();
            assertThat(leaseIds()).doesNotContain(lease.leaseId());
            try (FencingLease next = b.acquire(resource, TTL, Duration.ofSeconds(2))) {
                assertThat(next.isValid()).isTrue();
            }
        }
    }

    @Test
    void acquireFailsClearlyWhenEtcdIsUnreachable() {
        try (FencingLeaseClient client = new FencingLeaseClient(List.of("http://127.0.0.1:1"),
                FencingLeaseClient.DEFAULT_LOCK_PREFIX)) {
            long start = System.nanoTime();

            assertThatThrownBy(() -> client.acquire("unreachable", TTL, Duration.ofSeconds(4)))
                    .isInstanceOf(LeaseAcquisitionException.class).hasMessageContaining("grant a lease for unreachable")
                    .hasMessageContaining("etcd is unreachable: is it running at etcd.endpoints=http://127.0.0.1:1");
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
        }
    }

    /** etcd frozen with SIGSTOP under a held lease: the holder reports the loss within TTL + 1 s and refuses to send. */
    @Test
    @Order(Integer.MAX_VALUE)
    void leaseIsLostWithinTheTtlWhenEtcdIsFrozenAndSendsAreRefused() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        Duration ttl = Duration.ofSeconds(2);
        // A real Kafka producer: a refused send never reaches it, so no broker is needed here.
        Map<String, Object> kafka = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1",
                ProducerConfig.MAX_BLOCK_MS_CONFIG, 1000);
        try (FencingLeaseClient client = new FencingLeaseClient(List.of(etcd.address()), FencingLeaseClient.DEFAULT_LOCK_PREFIX,
                meters);
                FencedProducer<String> producer = FencedProducer.create(kafka, new StringSerializer(), "fenced-writes",
                        "frozen-test", FencedProducer.Takeover.NO_MARKER, meters);
                FencingLease lease = producer.acquire(client, "frozen", ttl, TIMEOUT)) {
            assertThat(meters.get("fence.lease.acquired").counter().count()).isEqualTo(1.0);
            assertThat(meters.get("fence.lease.acquisition").tag("outcome", "acquired").timer().count()).isEqualTo(1);
            CompletableFuture<Long> reportedAt = new CompletableFuture<>();
            lease.onLoss((lost, cause) -> reportedAt.complete(System.nanoTime()));
            assertThat(lease.isValid()).isTrue();

            long frozenAt = System.nanoTime();
            etcd.process().signal("STOP");
            try {
                long reported = reportedAt.get(30, TimeUnit.SECONDS); // nobody polls isValid(): the deadline timer reports it
                assertThat(Duration.ofNanos(reported - frozenAt)).isLessThanOrEqualTo(ttl.plusSeconds(1));
                assertThat(lease.state()).isEqualTo(FencingLease.State.LOST);
                assertThat(lease.lossCause()).contains("no keep-alive renewal within the TTL");
                assertThat(meters.get("fence.lease.lost").tag("cause", "deadline").counter().count()).isEqualTo(1.0);
                assertThatThrownBy(() -> producer.sendAndWait(lease, "after the loss")).isInstanceOf(LeaseLostException.class);
                assertThat(meters.get("fence.producer.sends.refused").counter().count()).isEqualTo(1.0);
            } finally {
                etcd.process().signal("CONT");
            }
        } finally {
            await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> Http.ok(etcd.address() + "/health"));
        }
    }

    private record Holding(long token, long acquiredNanos, long releasedNanos, boolean ownerInEtcd) {
    }

    private static FencingLeaseClient newClient() {
        return new FencingLeaseClient(List.of(etcd.address()), FencingLeaseClient.DEFAULT_LOCK_PREFIX);
    }

    private static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }

    /** The keys under the resource's lock name: the holder's and any waiters'. */
    private static List<KeyValue> lockKeys(String resource) throws Exception {
        ByteSequence prefix = bytes(FencingLeaseClient.DEFAULT_LOCK_PREFIX + resource + "/");
        return reader.getKVClient().get(prefix, GetOption.builder().isPrefix(true).build()).get(RPC.toSeconds(), TimeUnit.SECONDS)
                .getKvs();
    }

    /** Every lease etcd knows, via its JSON gateway: jetcd 0.8.6 has no LeaseLeases call. */
    private static List<Long> leaseIds() throws Exception {
        HttpResponse<String> response = HttpClient.newHttpClient()
                .send(HttpRequest.newBuilder(URI.create(etcd.address() + "/v3/lease/leases"))
                        .timeout(RPC).POST(HttpRequest.BodyPublishers.ofString("{}")).build(),
                        HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        List<Long> ids = new ArrayList<>();
        Matcher id = LEASE_ID.matcher(response.body());
        while (id.find()) {
            ids.add(Long.parseLong(id.group(1)));
        }
        return ids;
    }
}
