package dev.fencedwrites.devtools.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The zombie-writer check of a chaos run: which leases a writer cut from etcd held, and which writes break the fail-safe. */
class ZombieWritersTest {
    private static final long CUT = 100_000;
    private static final WriterFleet.Load LOAD = new WriterFleet.Load(4, 2, 8, Duration.ofSeconds(3), 0.02, Duration.ZERO);

    @Test
    void aLeaseLostWithinTheTtlOfTheCutIsGivenUpInTime() {
        WriterLedger ledger = ledger(List.of(acquired("w2-0", 7), acquired("w1-0", 8), acquired("w2-1", 9)),
                List.of(ack("w2-0", 7, CUT - 500, true), ack("w2-0", 7, CUT + 2_000, true)),
                List.of(new WriterLedger.Lost(CUT + 2_900, "w2-0", "k", 70, 7, "deadline")),
                List.of(new WriterLedger.Released(CUT - 1, "w2-1", "k", 90, 9)));

        List<ZombieWriters.Lease> leases = ZombieWriters.of(outcome(ledger));

        assertThat(leases).as("writer-2's lease 7 only: lease 8 is writer-1's, lease 9 was released before the cut")
                .containsExactly(new ZombieWriters.Lease(CUT, 7, OptionalLong.of(2_900), 0));
        assertThat(ZombieWriters.heldLate(outcome(ledger))).isZero();
    }

    @Test
    void aWriteAcknowledgedAsHeldPastTheTtlAfterTheCutIsAZombieWrite() {
        WriterLedger ledger = ledger(List.of(acquired("w2.1-0", 7)),
                List.of(ack("w2.1-0", 7, CUT + 3_000 + ZombieWriters.SLACK_MILLIS + 1, true),
                        ack("w2.1-0", 7, CUT + 9_000, false)),
                List.of(), List.of());

        assertThat(ZombieWriters.of(outcome(ledger))).containsExactly(new ZombieWriters.Lease(CUT, 7, OptionalLong.empty(), 1));
        assertThat(ZombieWriters.heldLate(outcome(ledger))).as("the second ack came after the loss: not held").isEqualTo(1);
    }

    @Test
    void aKilledIncarnationsLeaseIsNotHeldAtALaterCut() {
        WriterLedger ledger = ledger(List.of(new WriterLedger.Acquired(CUT - 60_000, "w2-0", "k", 10, 1), // killed holding it
                acquired("w2.1-0", 7)), List.of(), List.of(),
                List.of(new WriterLedger.Released(CUT + 500, "w2.1-0", "k", 70, 7)));

        assertThat(ZombieWriters.of(outcome(ledger))).containsExactly(new ZombieWriters.Lease(CUT, 7, OptionalLong.of(500), 0));
    }

    private static WriterLedger.Acquired acquired(String writer, long lease) {
        return new WriterLedger.Acquired(CUT - 1_000, writer, "k", lease * 10, lease);
    }

    private static WriterLedger.Ack ack(String writer, long lease, long millis, boolean held) {
        return new WriterLedger.Ack(millis, writer, millis, "k", lease * 10, 1, lease, 0, millis, false, held);
    }

    private static WriterLedger ledger(List<WriterLedger.Acquired> acquired, List<WriterLedger.Ack> acks,
            List<WriterLedger.Lost> lost, List<WriterLedger.Released> released) {
        return new WriterLedger(acquired, acks, List.of(), lost, 0, List.of(), released);
    }

    private static ChaosRun.Outcome outcome(WriterLedger ledger) {
        ChaosRun.Settings settings = new ChaosRun.Settings(Path.of("run"), 1, LOAD, Set.of(Fault.WRITER_ETCD_CUT), 0,
                Duration.ofMinutes(1), false, false, null, Map.of(), false, Map.of());
        List<Nemesis.Event> events = List.of(new Nemesis.Event(CUT, CUT + 4_000, Fault.WRITER_ETCD_CUT,
                "writer-2 cut from etcd (ports [2379]) for 4000 ms"),
                new Nemesis.Event(CUT, CUT + 4_000, Fault.SLOW_LINK,
                        "writer-1's link to etcd dropping 25 % of its packets"));
        return new ChaosRun.Outcome(settings, events, ledger, List.of(), null, 0, 0, 0, Map.of(), 0);
    }
}
