package dev.fencedwrites.failover;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.devtools.chaos.WriterLedger;
import dev.fencedwrites.devtools.chaos.WriterLedger.Ack;
import dev.fencedwrites.devtools.chaos.WriterLedger.Acquired;
import dev.fencedwrites.devtools.chaos.WriterLedger.Lost;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link GrantOrder} on ledgers written by hand: what the etcd failover test may and may not accept. */
class GrantOrderTest {
    private static final Acquired B_HIGHER = new Acquired(1_000, "w1-0", "k", 1145, 2);
    private static final Acquired A_LOWER_LATER = new Acquired(1_100, "w0-0", "k", 1120, 1);

    @Test
    void tokensRisingInLogOrderPass() {
        assertThat(check(List.of(A_LOWER_LATER, new Acquired(1_200, "w1-0", "k", 1145, 2)), List.of(), List.of()).problems())
                .isEmpty();
    }

    /** Seen in a clean run (an etcd leader killed under the granting transaction): lost later, nothing written. */
    @Test
    void aLowerTokenLoggedLateWhoseLeaseWasLostAndWroteNothingPasses() {
        assertThat(check(List.of(B_HIGHER, A_LOWER_LATER), List.of(), List.of(lost(1))).problems()).isEmpty();
    }

    @Test
    void aLowerTokenLoggedLateUnderALeaseNeverLostFails() {
        assertThat(check(List.of(B_HIGHER, A_LOWER_LATER), List.of(), List.of()).problems()).hasSize(1);
    }

    /** The break-it reviewer's case: a double grant whose lease wrote and was lost only at a later leader kill. */
    @Test
    void aLowerTokenLoggedLateWhoseLeaseWroteFailsThoughItWasLostLater() {
        Ack write = new Ack(1_150, "w0-0", 1, "k", 1120, 1, 1, 0, 0, false, true);
        assertThat(check(List.of(B_HIGHER, A_LOWER_LATER), List.of(write), List.of(lost(1))).problems()).hasSize(1);
    }

    @Test
    void equalTokensFailEvenUnderALostLease() {
        Acquired same = new Acquired(1_100, "w0-0", "k", 1145, 1);
        assertThat(check(List.of(B_HIGHER, same), List.of(), List.of(lost(1))).problems()).hasSize(1);
    }

    @Test
    void aGrantLoggedAlreadyLostIsLeftOut() {
        GrantOrder order = check(List.of(B_HIGHER, A_LOWER_LATER), List.of(), List.of(new Lost(1_100, "w0-0", "k", 1120, 1,
                "expired")));
        assertThat(order.problems()).isEmpty();
        assertThat(order.leftOut()).isEqualTo(1);
    }

    private static Lost lost(long lease) {
        return new Lost(20_000, "w0-0", "k", 1120, lease, "expired");
    }

    private static GrantOrder check(List<Acquired> acquired, List<Ack> acks, List<Lost> lost) {
        return GrantOrder.check(new WriterLedger(acquired, acks, List.of(), lost, 0, List.of(), List.of()));
    }
}
