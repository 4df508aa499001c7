package dev.fencedwrites.devtools.chaos;

import dev.fencedwrites.history.VerifyReport;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/** {@code fence chaos}'s text report: the run, its faults, what the writers did and what {@code fence verify} found. */
public final class ChaosReport {
    private ChaosReport() {
    }

    /**
     * The summary a person reads first.
     *
     * @param fates per stalled write's input position ({@code partition@offset}), the enforcer's decision
     * @param replay the command line that runs the same schedule again
     */
    /** The writer processes ({@code writer-2}) none of whose incarnations acquired a lock. */
    public static List<String> idleProcesses(ChaosRun.Outcome outcome) {
        List<String> idle = new ArrayList<>();
        for (int p = 0; p < outcome.settings().load().processes(); p++) {
            String name = "w" + p;
            if (outcome.ledger().acquired().stream().noneMatch(a -> a.writer().startsWith(name + "-")
                    || a.writer().startsWith(name + "."))) {
                idle.add("writer-" + p);
            }
        }
        return idle;
    }

    static String text(ChaosRun.Outcome outcome, Map<String, String> fates, String replay) {
        StringWriter text = new StringWriter();
        PrintWriter out = new PrintWriter(text);
        ChaosRun.Settings settings = outcome.settings();
        out.printf("fence chaos: seed %d, %d s of load and faults, then %d s for the restarts in progress to finish%n",
                settings.seed(), (outcome.loadEndedMillis() - outcome.startedMillis()) / 1000,
                (outcome.stoppedMillis() - outcome.loadEndedMillis()) / 1000);
        out.println("Faults");
        Map<Fault, Long> counts = new EnumMap<>(Fault.class);
        outcome.events().forEach(e -> counts.merge(e.fault(), 1L, Long::sum));
        for (Fault fault : settings.faults()) {
            row(out, fault.option() + " (" + fault.description() + ")", counts.getOrDefault(fault, 0L));
        }
        WriterLedger ledger = outcome.ledger();
        out.println("Writers");
        row(out, "lock acquisitions", ledger.acquired().size());
        row(out, "writes acknowledged by the broker", ledger.acks().size());
        row(out, "stalls past the lease TTL (process stopped between lease check and send)", outcome.resumed().size());
        row(out, "  of which another writer took the key over first", outcome.resumed().stream().filter(
                WriterFleet.Resumed::tookOver).count());
        List<WriterLedger.Ack> stale = staleWrites(outcome);
        row(out, "stale writes that reached the broker (sent after another writer took the key)", stale.size());
        Map<String, Long> byFate = stale.stream().collect(Collectors.groupingBy(
                ack -> fates.getOrDefault(ack.partition() + "@" + ack.offset(), "ACCEPTED"), Collectors.counting()));
        byFate.forEach((fate, n) -> row(out, "  decided " + fate, n));
        Set<String> stalePositions = new HashSet<>();
        stale.forEach(a -> stalePositions.add(a.partition() + "@" + a.offset()));
        List<WriterLedger.Ack> notStale = ledger.stalledWrites().stream()
                .filter(a -> !stalePositions.contains(a.partition() + "@" + a.offset())).toList();
        row(out, "stalled writes sent while still the key's newest holder (not stale)", notStale.size());
        notStale.stream().collect(Collectors.groupingBy(ack -> fates.getOrDefault(ack.partition() + "@" + ack.offset(),
                "ACCEPTED"), Collectors.counting())).forEach((fate, n) -> row(out, "  decided " + fate
                        + (fate.equals("STALE_TOKEN") ? " (its lease had ended: below an expiry floor)" : ""), n));
        List<WriterLedger.Ack> held = ledger.heldWrites();
        row(out, "writes acknowledged while their writer held the lock (not stalled, lease never lost)", held.size());
        held.stream().collect(Collectors.groupingBy(ack -> fates.getOrDefault(ack.partition() + "@" + ack.offset(),
                "ACCEPTED"), Collectors.counting())).forEach((fate, n) -> row(out, "  decided " + fate, n));
        row(out, "leases lost (reported by producer-lib)", ledger.lost().size());
        row(out, "sends refused under a lost lease", ledger.refused());
        row(out, "acquisitions or sends that failed (etcd or Kafka unavailable)", ledger.failures().size());
        row(out, "records injected with kcat (forged, borrowed, stale, duplicate: in verify's decisions below)",
                outcome.injected());
        zombies(outcome, out);
        List<String> idle = idleProcesses(outcome);
        if (!idle.isEmpty()) {
            out.println("  writer processes that acquired no lock (their logs are in writers/): " + String.join(", ", idle));
        }
        out.println();
        out.println("Pipeline afterwards (fence verify)");
        VerifyReport.text(outcome.verify(), out);
        out.println();
        out.println(verdict(outcome, replay));
        out.flush();
        return text.toString();
    }

    /**
     * Writes {@code report.txt}, {@code report.html} (the timeline) and {@code verify.json} into the run's directory.
     *
     * @param replay the command line that draws the same schedule again
     * @return the text report
     */
    public static String write(ChaosRun.Outcome outcome, String replay) throws IOException {
        String text = text(outcome, outcome.fates(), replay);
        List<Fault> missing = missing(outcome);
        if (!missing.isEmpty()) {
            text += "note: the run was too short for " + missing + " to happen\n";
        }
        Path dir = outcome.settings().dir();
        Files.writeString(dir.resolve("report.txt"), text, StandardCharsets.UTF_8);
        Files.writeString(dir.resolve("report.html"), ChaosTimeline.html(outcome, outcome.fates(), text), StandardCharsets.UTF_8);
        Files.writeString(dir.resolve("verify.json"), VerifyReport.json(outcome.verify()), StandardCharsets.UTF_8);
        return text;
    }

    /** The stalled writes sent after another writer had taken their key over: stale when they reached the broker. */
    static List<WriterLedger.Ack> staleWrites(ChaosRun.Outcome outcome) {
        Set<String> takenOver = new HashSet<>();
        outcome.resumed().stream().filter(WriterFleet.Resumed::tookOver).forEach(r -> takenOver.add(r.key() + "@" + r.token()));
        return outcome.ledger().stalledWrites().stream().filter(a -> takenOver.contains(a.key() + "@" + a.token())).toList();
    }

    /**
     * The stale writes the enforcer did not reject (no rejected copy names them): each one a fencing failure, whatever verify
     * says, so the run fails on them too.
     */
    public static long staleAccepted(ChaosRun.Outcome outcome) {
        return staleWrites(outcome).stream().filter(a -> !outcome.fates().containsKey(a.partition() + "@" + a.offset())).count();
    }

    /** The writers cut from etcd: the leases they held at the cut, and how soon producer-lib gave each up. */
    private static void zombies(ChaosRun.Outcome outcome, PrintWriter out) {
        if (outcome.events().stream().noneMatch(e -> e.fault() == Fault.WRITER_ETCD_CUT)) {
            return;
        }
        List<ZombieWriters.Lease> leases = ZombieWriters.of(outcome);
        long[] gaveUp = leases.stream().filter(l -> l.gaveUpAfter().isPresent()).mapToLong(l -> l.gaveUpAfter().getAsLong())
                .sorted().toArray();
        row(out, "leases held by a writer when it was cut from etcd (writer-etcd-cut)", leases.size());
        row(out, "  given up by producer-lib (lost or released)", gaveUp.length);
        if (gaveUp.length > 0) {
            row(out, "  ms from the cut to giving it up, median (lease TTL " + outcome.settings().load().ttl().toMillis() + ")",
                    gaveUp[gaveUp.length / 2]);
            row(out, "  ms from the cut to giving it up, max", gaveUp[gaveUp.length - 1]);
        }
        row(out, "  writes acknowledged under one still held more than the TTL + 1 s after the cut", zombieWrites(outcome));
    }

    /** The run's last line: PASS, or FAIL with what failed and how to draw the same schedule again. */
    private static String verdict(ChaosRun.Outcome outcome, String replay) {
        long zombies = zombieWrites(outcome);
        long failures = outcome.verify().violations() + staleAccepted(outcome) + heldRejected(outcome).size() + zombies;
        if (failures == 0) {
            return outcome.ledger().acks().isEmpty() ? "0 violations, but no writer wrote anything" : "PASS: 0 violations";
        }
        return "FAIL: " + outcome.verify().violations() + " violations, " + staleAccepted(outcome) + " stale writes accepted, "
                + heldRejected(outcome).size() + " writes under a held lock rejected, " + zombies
                + " writes of a writer cut from etcd past its lease; run the same schedule again with: " + replay;
    }

    /**
     * The writes acknowledged while their writer held the lock that the enforcer rejected as stale or as not holding it: no
     * later holder's fence and no expiry floor can be above such a write (docs/concepts/fence-expiry.md), so each one is a
     * liveness failure of the fencing, and the run fails on them. Not with token verification off: then any positive
     * token is believed, and a forged one ({@code inject}) may raise a key's fence above its live holder, as documented.
     */
    public static List<WriterLedger.Ack> heldRejected(ChaosRun.Outcome outcome) {
        if ("false".equalsIgnoreCase(outcome.settings().enforcer().getOrDefault("token.verification.enable", "true").strip())) {
            return List.of();
        }
        return outcome.ledger().heldWrites().stream().filter(a -> {
            String fate = outcome.fates().get(a.partition() + "@" + a.offset());
            return "STALE_TOKEN".equals(fate) || "LOCK_NOT_HELD".equals(fate);
        }).toList();
    }

    /**
     * Writes acknowledged to a writer cut from etcd that still believed it held its lease more than the TTL (+ 1 s) after
     * the cut: producer-lib's fail-safe failed, so the run fails on them.
     */
    public static long zombieWrites(ChaosRun.Outcome outcome) {
        return ZombieWriters.heldLate(outcome);
    }

    /** The faults that the run chose but that never happened (too short a run). */
    public static List<Fault> missing(ChaosRun.Outcome outcome) {
        List<Fault> missing = new ArrayList<>(outcome.settings().faults());
        outcome.events().forEach(e -> missing.remove(e.fault()));
        return missing;
    }

    private static void row(PrintWriter out, String what, long n) {
        out.printf("  %-96s %,12d%n", what, n);
    }
}
