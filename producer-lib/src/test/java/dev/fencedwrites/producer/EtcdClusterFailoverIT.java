package dev.fencedwrites.producer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.services.EtcdCluster;
import dev.fencedwrites.testing.EtcdClusterExtension;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Needs real services: a 3-member etcd cluster on loopback whose leader is killed with SIGKILL
 * (and restarted) again and again while 3 clients compete for one lock, then loses its quorum
 * under a held lease. Elections, lease promotion on a new leader and client fail-over are etcd's
 * and jetcd's behaviour, not something a fake could show.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class EtcdClusterFailoverIT {
    private static final Logger LOG = LoggerFactory.getLogger(EtcdClusterFailoverIT.class);
    private static final Duration TTL = Duration.ofSeconds(2);
    private static final String PREFIX = "failover/locks/";
    private static final String RESOURCE = "contended";
    private static final int LEADER_KILLS = 5;

    @RegisterExtension
    final EtcdClusterExtension etcd = EtcdClusterExtension.withMembers(3);

    @Test
    void tokensStayMonotonicThroughLeaderKillsAndLossesAreReportedInTime() throws Exception {
        EtcdCluster cluster = etcd.cluster();
        try (Client observer = Client.builder().endpoints(cluster.endpoints().toArray(String[]::new)).build()) {
            // Ground truth from etcd itself: when each lock key was deleted, by our release or by etcd.
            Map<Long, Long> keyDeletedAt = new ConcurrentHashMap<>();
            ByteSequence prefix = ByteSequence.from(PREFIX, StandardCharsets.UTF_8);
            try (Watch.Watcher ignored = observer.getWatchClient().watch(prefix, WatchOption.builder().isPrefix(true).build(),
                    response -> {
                        for (WatchEvent event : response.getEvents()) {
                            if (event.getEventType() == WatchEvent.EventType.DELETE) {
                                String key = event.getKeyValue().getKey().toString(StandardCharsets.UTF_8);
                                keyDeletedAt.putIfAbsent(Long.parseUnsignedLong(key.substring(key.lastIndexOf('/') + 1), 16),
                                        System.nanoTime());
                            }
                        }
                    })) {
                // One lease held through every election: it either survives, and then etcd still has its key,
                // or it is lost, and then etcd's deletion of its key was reported in time (checked below).
                FencingLeaseClient longClient = new FencingLeaseClient(settings(cluster), new SimpleMeterRegistry());
                FencingLease longHeld = longClient.acquire("held-through-elections", TTL, Duration.ofSeconds(20));
                long longAcquired = System.nanoTime();
                CompletableFuture<Long> longLost = new CompletableFuture<>();
                longHeld.onLoss((l, cause) -> longLost.complete(System.nanoTime()));

                List<Holding> holdings = new ArrayList<>(contendWhileKillingLeaders(cluster));

                boolean believedHeld = longHeld.isValid();
                long keys = observer.getKVClient()
                        .get(ByteSequence.from(PREFIX + "held-through-elections/", StandardCharsets.UTF_8),
                                GetOption.builder().isPrefix(true).build())
                        .get(10, TimeUnit.SECONDS).getCount();
                if (believedHeld) {
                    assertThat(keys).as("the surviving lease's lock key is still in etcd").isEqualTo(1);
                }
                LOG.info("the lease held through {} leader kills: {}", LEADER_KILLS,
                        believedHeld ? "survived" : "lost: " + longHeld.lossCause());
                long longClosing = System.nanoTime();
                longHeld.close();
                longClient.close();
                Holding longHolding = new Holding(longHeld.token(), longHeld.leaseId(), longAcquired, longClosing,
                        longLost.getNow(-1L));
                assertThat(holdings).as("acquisitions that succeeded").hasSizeGreaterThan(20);

                List<Holding> byGrant = holdings.stream().sorted(Comparator.comparingLong(Holding::acquiredNanos)).toList();
                assertThat(byGrant).extracting(Holding::token).as("tokens in grant order").isSorted().doesNotHaveDuplicates();
                List<Holding> kept = byGrant.stream().filter(h -> h.lostNanos() < 0).toList();
                for (int i = 1; i < kept.size(); i++) {
                    assertThat(kept.get(i).acquiredNanos()).as("%s starts after %s ended", kept.get(i), kept.get(i - 1))
                            .isGreaterThan(kept.get(i - 1).closingNanos());
                }
                Thread.sleep(1_000); // let the watch deliver the last deletions
                holdings.add(longHolding);
                for (Holding holding : holdings) {
                    Long deleted = keyDeletedAt.get(holding.leaseId());
                    if (deleted != null && deleted < holding.closingNanos()) {
                        // etcd dropped the key while the client still held it: it must have said so in time.
                        assertThat(holding.lostNanos()).as("loss of %s, whose key etcd deleted while held", holding).isPositive();
                        assertThat(Duration.ofNanos(holding.lostNanos() - deleted)).isLessThanOrEqualTo(Duration.ofSeconds(1));
                    }
                }
                LOG.info("{} holdings, {} lost while held, {} lock keys deleted", holdings.size(),
                        holdings.stream().filter(h -> h.lostNanos() > 0).count(),
                        keyDeletedAt.size());
            }

            quorumLossUnderAHeldLeaseIsReportedWithinTheTtl(cluster);
        }
    }

    /** 3 clients acquire {@value #RESOURCE} in a loop while the leader is killed and restarted {@value #LEADER_KILLS} times. */
    private List<Holding> contendWhileKillingLeaders(EtcdCluster cluster) throws Exception {
        List<Holding> holdings = Collections.synchronizedList(new ArrayList<>());
        AtomicBoolean running = new AtomicBoolean(true);
        AtomicInteger failures = new AtomicInteger();
        ExecutorService threads = Executors.newFixedThreadPool(3);
        List<FencingLeaseClient> clients = new ArrayList<>();
        try {
            List<Future<?>> workers = new ArrayList<>();
            for (int c = 0; c < 3; c++) {
                FencingLeaseClient client = new FencingLeaseClient(settings(cluster), new SimpleMeterRegistry());
                clients.add(client);
                workers.add(threads.submit(() -> {
                    while (running.get()) {
                        try {
                            FencingLease lease = client.acquire(RESOURCE, TTL, Duration.ofSeconds(20));
                            long acquired = System.nanoTime();
                            CompletableFuture<Long> lost = new CompletableFuture<>();
                            lease.onLoss((l, cause) -> lost.complete(System.nanoTime()));
                            Thread.sleep(150); // the holder's work
                            long closing = System.nanoTime();
                            lease.close();
                            holdings.add(new Holding(lease.token(), lease.leaseId(), acquired, closing, lost.getNow(-1L)));
                        } catch (LeaseAcquisitionException e) {
                            failures.incrementAndGet();
                            LOG.info("acquisition failed during failover: {}", e.getMessage());
                        }
                    }
                    return null;
                }));
            }
            for (int kill = 0; kill < LEADER_KILLS; kill++) {
                Thread.sleep(2_000);
                int leader = cluster.leader();
                LOG.info("killing etcd leader m{}", leader);
                cluster.kill(leader);
                Thread.sleep(3_000);
                cluster.restart(leader);
            }
            Thread.sleep(2_000);
            running.set(false);
            for (Future<?> worker : workers) {
                worker.get(2, TimeUnit.MINUTES);
            }
        } finally {
            running.set(false);
            threads.shutdownNow();
            clients.forEach(FencingLeaseClient::close);
        }
        LOG.info("{} acquisitions, {} failed during failover", holdings.size(), failures.get());
        return new ArrayList<>(holdings);
    }

    /**
     * Two of three members killed under a held lease: no renewal can succeed, so the holder reports the loss within TTL + 1 s and
     * refuses to send.
     */
    private void quorumLossUnderAHeldLeaseIsReportedWithinTheTtl(EtcdCluster cluster) throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        Map<String, Object> kafka = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1",
                ProducerConfig.MAX_BLOCK_MS_CONFIG, 1000);
        try (FencingLeaseClient client = new FencingLeaseClient(settings(cluster), meters);
                FencedProducer<String> producer = FencedProducer.create(kafka, new StringSerializer(), "fenced-writes",
                        "quorum-test", FencedProducer.Takeover.NO_MARKER, meters)) {
            FencingLease lease = producer.acquire(client, "quorum", TTL, Duration.ofSeconds(20));
            CompletableFuture<Long> reported = new CompletableFuture<>();
            lease.onLoss((l, cause) -> reported.complete(System.nanoTime()));
            int leader = cluster.leader();
            long quorumLostAt = System.nanoTime();
            cluster.kill(leader);
            cluster.kill((leader + 1) % 3);

            long lostAt = reported.get(30, TimeUnit.SECONDS);
            assertThat(Duration.ofNanos(lostAt - quorumLostAt)).isLessThanOrEqualTo(TTL.plusSeconds(1));
            assertThat(lease.lossCause()).contains("no keep-alive renewal within the TTL");
            assertThatThrownBy(() -> producer.sendAndWait(lease, "without quorum")).isInstanceOf(LeaseLostException.class);
            assertThat(meters.get("fence.lease.lost").tag("cause", "deadline").counter().count()).isEqualTo(1.0);
            // The deadline can report the loss before a keep-alive against the dead members has timed out (2 s requests).
            await().atMost(Duration.ofSeconds(30)).untilAsserted(
                    () -> assertThat(meters.get("fence.lease.keepalive.failures").counter().count()).isPositive());
        }
    }

    private static EtcdSettings settings(EtcdCluster cluster) {
        return EtcdSettings.builder(cluster.endpoints()).lockPrefix(PREFIX).requestTimeout(Duration.ofSeconds(2)).build();
    }

    private record Holding(long token, long leaseId, long acquiredNanos, long closingNanos, long lostNanos) {
    }
}
