package dev.fencedwrites.producer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.services.EtcdNode;
import dev.fencedwrites.services.Service;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The first keep-alive must go out before the local deadline even when the grant was slow: the
 * deadline counts from before the grant request, so a first renewal scheduled TTL/3 after the
 * grant's answer comes after the deadline once the grant took more than 2/3 of the TTL.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class FirstKeepAliveIT {
    @TempDir
    static Path dir;

    @Test
    void aSlowGrantStillGetsItsFirstRenewalBeforeTheDeadline() throws Exception {
        ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1);
        ExecutorService events = Executors.newSingleThreadExecutor();
        try (Service etcd = EtcdNode.start(dir.resolve("etcd"));
                Client client = Client.builder().endpoints(etcd.address()).build()) {
            // Warm the keep-alive path (a cold client's first keep-alive stream can take about a
            // second here), so the test measures the scheduling, not the JIT.
            long warm = client.getLeaseClient().grant(3).get(10, TimeUnit.SECONDS).getID();
            client.getLeaseClient().keepAliveOnce(warm).get(10, TimeUnit.SECONDS);
            long startNanos = System.nanoTime();
            LeaseGrantResponse grant = client.getLeaseClient().grant(3).get(10, TimeUnit.SECONDS);
            Duration ttl = Duration.ofSeconds(grant.getTTL());
            // As if the grant request had been sent 70 % of the TTL ago (a slow etcd or a loaded
            // machine): FencingLeaseClient passes startNanos + TTL as the first deadline.
            long slowGrant = ttl.toNanos() * 7 / 10;
            FencingLease lease = new FencingLease(client, timer, events, Duration.ofSeconds(5), "slow-grant", grant.getID(), ttl,
                    startNanos - slowGrant + ttl.toNanos(), new LeaseMetrics(new SimpleMeterRegistry()), l -> {
                    });
            lease.startKeepAlive();

            // Past the first deadline (30 % of the TTL from now) with room for one keep-alive round trip.
            Thread.sleep(ttl.toMillis() * 6 / 10);

            assertThat(lease.lossCause()).as("etcd still has the lease, and there was time to renew it").isNull();
            assertThat(lease.isValid()).isTrue();
            lease.close();
        } finally {
            timer.shutdownNow();
            events.shutdownNow();
        }
    }
}
