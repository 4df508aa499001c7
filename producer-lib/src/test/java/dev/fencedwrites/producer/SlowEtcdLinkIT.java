package dev.fencedwrites.producer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.testing.EtcdNodeExtension;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A writer on a slow link to etcd keeps a short lease, also while it waits for the lock: the first
 * deadline does not pay for the channel's setup, and each renewal goes out TTL/3 after the previous
 * one was sent, not after its answer. Both ran against a real etcd behind {@link DelayingProxy}.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class SlowEtcdLinkIT {
    /** etcd's shortest lease: 1.5 election timeouts (1 s by default), rounded up to whole seconds. */
    private static final Duration TTL = Duration.ofSeconds(2);
    @RegisterExtension
    static final EtcdNodeExtension etcdNode = new EtcdNodeExtension();

    @Test
    void aSlowFirstConnectionDoesNotSpendTheFirstLeasesTtl() throws Exception {
        // 3 s to open a connection (a cold channel in a fresh JVM on a loaded machine took 4.6 s) against a TTL of 2 s.
        try (DelayingProxy proxy = new DelayingProxy(etcdAddress(), 3_000, 0);
                FencingLeaseClient client = client(proxy)) {
            FencingLease lease = client.acquire("cold-channel", TTL, Duration.ofSeconds(30));

            assertThat(lease.lossCause()).isNull();
            assertThat(lease.isValid()).isTrue();
            lease.close();
        }
    }

    @Test
    void aWaiterOnASlowLinkKeepsItsLeaseUntilTheLockIsFree() throws Exception {
        try (FencingLeaseClient holderClient = new FencingLeaseClient(
                EtcdSettings.builder(List.of(etcdNode.service().address())).build(), new SimpleMeterRegistry());
                FencingLease holder = holderClient.acquire("slow-waiter", Duration.ofSeconds(10), Duration.ofSeconds(30));
                // 400 ms each way: a renewal takes 800 ms of a 2 s TTL. Sent 667 ms after the last was sent, the
                // next is answered 1.47 s after it; sent 667 ms after the last was answered, 2.27 s: past the deadline.
                DelayingProxy proxy = new DelayingProxy(etcdAddress(), 0, 400);
                FencingLeaseClient waiterClient = client(proxy)) {
            var waiting = waiterClient.acquireAsync("slow-waiter", TTL);
            Thread.sleep(6_000); // about nine renewals while the lock is held by the other

            assertThat(waiting).as("still waiting, its lease alive").isNotDone();
            holder.close();
            FencingLease lease = waiting.get(30, TimeUnit.SECONDS);
            assertThat(lease.isValid()).isTrue();
            assertThat(lease.token()).isGreaterThan(holder.token());
            lease.close();
        }
    }

    private static InetSocketAddress etcdAddress() {
        URI uri = URI.create(etcdNode.service().address());
        return new InetSocketAddress(uri.getHost(), uri.getPort());
    }

    private static FencingLeaseClient client(DelayingProxy proxy) {
        return new FencingLeaseClient(EtcdSettings.builder(List.of(proxy.endpoint())).connectTimeout(Duration.ofSeconds(10))
                .requestTimeout(Duration.ofSeconds(10)).build(), new SimpleMeterRegistry());
    }
}
