package dev.fencedwrites.devtools.chaos;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.LongStream;

/**
 * What the writers cut from etcd ({@link Fault#WRITER_ETCD_CUT}) did with the leases they held at the cut. producer-lib's
 * fail-safe must give each one up (lost at its local deadline, or released) within the TTL of the cut, as its last
 * keep-alive went out before it; a write acknowledged later while the writer still believed it held the lease would be a
 * zombie's write that only the fence stops, and the run fails on it.
 */
public final class ZombieWriters {
    /** Scheduling slack on the deadline: the renewal timer and the ledger's clock reads. */
    public static final long SLACK_MILLIS = 1_000;
    private static final Pattern CUT_WRITER = Pattern.compile("^writer-(\\d+) cut from etcd");

    /**
     * One lease held at a cut.
     *
     * @param cutMillis   when the cut began
     * @param gaveUpAfter ms from the cut to the lease's loss or release; empty when the ledger has neither (the process
     *                    was killed, or stopped, or the run ended first)
     * @param heldLate    writes acknowledged under it, the writer still holding it, later than the cut + TTL + slack
     */
    public record Lease(long cutMillis, long lease, OptionalLong gaveUpAfter, long heldLate) {
    }

    private ZombieWriters() {
    }

    /** The leases held by each cut writer at its cut. */
    static List<Lease> of(ChaosRun.Outcome outcome) {
        long ttl = outcome.settings().load().ttl().toMillis();
        List<Lease> leases = new ArrayList<>();
        for (Nemesis.Event cut : outcome.events()) {
            Matcher writer = CUT_WRITER.matcher(cut.detail());
            if (cut.fault() == Fault.WRITER_ETCD_CUT && writer.find()) {
                leases.addAll(heldAtCut(outcome.ledger(), Integer.parseInt(writer.group(1)), cut.startMillis(), ttl));
            }
        }
        return leases;
    }

    /**
     * The leases {@link WriterFleet} process {@code process} held when it was cut from etcd at {@code cutMillis} (wall
     * clock, ms), each with when it was given up and its writes acknowledged later than the cut + {@code ttlMillis} +
     * {@link #SLACK_MILLIS} while still held.
     */
    public static List<Lease> heldAtCut(WriterLedger ledger, int process, long cutMillis, long ttlMillis) {
        // writer-2's threads are w2-0 and w2-1, and w2.1-0 once restarted: the cut hit the incarnation running then
        // (an earlier one was killed, and its leases never released)
        String incarnation = incarnation(ledger, "w" + process, cutMillis);
        List<Lease> leases = new ArrayList<>();
        for (WriterLedger.Acquired held : ledger.acquired()) {
            if (held.millis() > cutMillis || incarnation == null || !held.writer().startsWith(incarnation + "-")) {
                continue;
            }
            long gaveUp = LongStream.concat(
                    ledger.lost().stream().filter(l -> l.lease() == held.lease()).mapToLong(WriterLedger.Lost::millis),
                    ledger.released().stream().filter(r -> r.lease() == held.lease()).mapToLong(WriterLedger.Released::millis))
                    .min().orElse(Long.MAX_VALUE);
            if (gaveUp < cutMillis) {
                continue; // not held at the cut
            }
            long late = ledger.acks().stream().filter(a -> a.lease() == held.lease() && a.held()
                    && a.millis() > cutMillis + ttlMillis + SLACK_MILLIS).count();
            leases.add(new Lease(cutMillis, held.lease(),
                    gaveUp == Long.MAX_VALUE ? OptionalLong.empty() : OptionalLong.of(gaveUp - cutMillis), late));
        }
        return leases;
    }

    /** Writes acknowledged to a cut writer that still believed it held its lease past the cut + TTL: each a failure. */
    static long heldLate(ChaosRun.Outcome outcome) {
        return of(outcome).stream().mapToLong(Lease::heldLate).sum();
    }

    /** The incarnation of {@code process} ({@code w2}, {@code w2.1}) that made the last acquisition before {@code millis}. */
    private static String incarnation(WriterLedger ledger, String process, long millis) {
        return ledger.acquired().stream().filter(a -> a.millis() <= millis)
                .filter(a -> a.writer().startsWith(process + "-") || a.writer().startsWith(process + "."))
                .max(Comparator.comparingLong(WriterLedger.Acquired::millis))
                .map(a -> a.writer().substring(0, a.writer().lastIndexOf('-'))).orElse(null);
    }
}
