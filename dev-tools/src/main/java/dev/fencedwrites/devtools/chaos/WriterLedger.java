package dev.fencedwrites.devtools.chaos;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * What the writer processes did, read back from their ledger files: every lock acquisition, every
 * acknowledged write (with its write id, fencing token and seq), every stall and every lease loss
 * their loss listeners reported. Each line starts with the writer's wall-clock time in ms.
 */
public record WriterLedger(List<Acquired> acquired, List<Ack> acks, List<Stall> stalls, List<Lost> lost, int refused,
        List<String> failures, List<Released> released) {

    /** A lock held: {@code token} is the etcd revision at which {@code lease}'s key held {@code key}'s lock. */
    public record Acquired(long millis, String writer, String key, long token, long lease) {
    }

    /**
     * A write the broker acknowledged; {@code stalled}: the process was stopped between the lease check and the send;
     * {@code held}: producer-lib still held the lease once the broker had acknowledged it.
     */
    public record Ack(long millis, String writer, long id, String key, long token, long seq, long lease, int partition,
            long offset, boolean stalled, boolean held) {
    }

    /** A process stopped itself before sending a write of {@code key} under {@code token}. */
    public record Stall(long millis, String key, long token, long lease) {
    }

    /** A lease given up: revoked by its holder after its writes (or after it was lost). */
    public record Released(long millis, String writer, String key, long token, long lease) {
    }

    /** A loss listener's report. */
    public record Lost(long millis, String writer, String key, long token, long lease, String cause) {
    }

    public static WriterLedger read(List<Path> files) throws IOException {
        WriterLedger ledger = new WriterLedger(new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), 0,
                new ArrayList<>(), new ArrayList<>());
        int refused = 0;
        for (Path file : files) {
            for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                try {
                    refused += ledger.add(line.split(" ", 12)) ? 1 : 0;
                } catch (RuntimeException e) {
                    // the last line of a process killed while writing it (fence chaos kills writers with SIGKILL)
                }
            }
        }
        return new WriterLedger(ledger.acquired, ledger.acks, ledger.stalls, ledger.lost, refused, ledger.failures,
                ledger.released);
    }

    /** Adds one line's event; true for a send producer-lib refused under a lost lease. */
    private boolean add(String[] f) {
        if (f.length < 2) {
            return false;
        }
        long millis = Long.parseLong(f[0]);
        switch (f[1]) {
            case "ACQUIRED" -> acquired.add(new Acquired(millis, f[2], f[3], Long.parseLong(f[4]), Long.parseLong(f[5])));
            case "ACK" -> acks.add(new Ack(millis, f[2], Long.parseLong(f[3]), f[4], Long.parseLong(f[5]), Long.parseLong(f[6]),
                    Long.parseLong(f[7]), Integer.parseInt(f[8]), Long.parseLong(f[9]), "1".equals(f[10]),
                    f.length > 11 && "1".equals(f[11])));
            case "STALL" -> stalls.add(new Stall(millis, f[2], Long.parseLong(f[3]), Long.parseLong(f[4])));
            case "LOST" -> lost.add(new Lost(millis, f[2], f[3], Long.parseLong(f[4]), Long.parseLong(f[5]),
                    String.join(" ", Arrays.copyOfRange(f, 6, f.length))));
            case "REFUSED" -> {
                return true;
            }
            case "FAIL", "ACQUIRE_FAILED", "CRASH" -> failures.add(String.join(" ", f));
            case "RELEASED" -> released.add(new Released(millis, f[2], f[3], Long.parseLong(f[4]), Long.parseLong(f[5])));
            default -> {
                // DONE
            }
        }
        return false;
    }

    /** The writes whose process stalled past its lease before sending them. */
    public List<Ack> stalledWrites() {
        return acks.stream().filter(Ack::stalled).toList();
    }

    /**
     * The writes acknowledged while their writer held the lock: not stalled, the lease still valid in producer-lib (whose
     * local deadline passes before etcd's expiry) once the broker had acknowledged the write, and never reported lost.
     * Each reached the broker while its lock key lived, so no later holder's and no expiry floor's fence can be above it
     * when it is decided.
     */
    public List<Ack> heldWrites() {
        Set<Long> lostLeases = new HashSet<>();
        lost.forEach(l -> lostLeases.add(l.lease()));
        return acks.stream().filter(a -> !a.stalled() && a.held() && !lostLeases.contains(a.lease())).toList();
    }
}
