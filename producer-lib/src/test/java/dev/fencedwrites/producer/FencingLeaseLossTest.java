package dev.fencedwrites.producer;

import static org.assertj.core.api.Assertions.assertThat;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A loss and a release racing: the writer's {@code close()} (a send it made was just refused) against the renewal
 * thread telling the listeners. No etcd is needed: the revoke goes to a closed port and fails, which a release allows.
 */
class FencingLeaseLossTest {
    private final Client client = Client.builder().endpoints("http://127.0.0.1:9").build();
    private final ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1);
    private final List<String> told = new CopyOnWriteArrayList<>();

    @AfterEach
    void close() {
        timer.shutdownNow();
        client.close();
    }

    private FencingLease lease(Executor events) {
        FencingLease lease = new FencingLease(client, timer, events, Duration.ofMillis(200), "customer-1", 0x1b6eL,
                Duration.ofSeconds(3), System.nanoTime() + Duration.ofSeconds(30).toNanos(),
                new LeaseMetrics(new SimpleMeterRegistry()), finished -> {
                });
        lease.locked(7, ByteSequence.from("fence/customer-1/1b6e", StandardCharsets.UTF_8));
        return lease;
    }

    private void listen(FencingLease lease, String... names) {
        for (String name : names) {
            lease.onLoss((lost, cause) -> told.add(name + ": " + cause.lossCause()));
        }
    }

    @Test
    void aReleaseWhileTheListenersAreBeingToldLeavesNoneUntold() {
        AtomicBoolean released = new AtomicBoolean();
        FencingLease[] lease = new FencingLease[1];
        // the first listener's turn is when the writer, refused, closes the lease
        Executor events = tell -> {
            if (released.compareAndSet(false, true)) {
                lease[0].abandon();
            }
            tell.run();
        };
        lease[0] = lease(events);
        listen(lease[0], "ledger", "side effects", "metrics");

        lease[0].markLost("deadline", "no keep-alive renewal within the TTL of 3 s");

        assertThat(released).isTrue();
        assertThat(lease[0].state()).isEqualTo(FencingLease.State.LOST);
        assertThat(told).containsExactlyInAnyOrder("ledger: no keep-alive renewal within the TTL of 3 s",
                "side effects: no keep-alive renewal within the TTL of 3 s",
                "metrics: no keep-alive renewal within the TTL of 3 s");
    }

    @Test
    void aLossAfterTheReleaseIsNoLossAndTellsNobody() {
        FencingLease lease = lease(Runnable::run);
        listen(lease, "ledger");

        lease.abandon();
        lease.markLost("deadline", "no keep-alive renewal within the TTL of 3 s");

        assertThat(lease.state()).isEqualTo(FencingLease.State.RELEASED);
        assertThat(lease.lossCause()).isEqualTo("released");
        assertThat(told).isEmpty();
    }

    @Test
    void aListenerAddedAfterTheLossIsToldAtOnceAndOnlyOnce() {
        FencingLease lease = lease(Runnable::run);
        listen(lease, "ledger");
        lease.markLost("expired", "etcd reports the lease expired");
        lease.markLost("deadline", "no keep-alive renewal within the TTL of 3 s");

        listen(lease, "late");
        lease.abandon();

        assertThat(told).containsExactly("ledger: etcd reports the lease expired", "late: etcd reports the lease expired");
    }
}
