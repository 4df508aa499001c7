package dev.fencedwrites.enforcer.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

/**
 * The fence store changelog's offset ranges that may hold a record below the store's value of its key (written by an
 * instance that had lost the task), until the task has read them back, written such keys' fences again, and committed.
 * Kept in a file of the task's state directory ({@value #FILE}, one {@code from to} line per range), because a commit can
 * move the task's checkpoint past them: a restart from that checkpoint would never restore them again. Thread-safe (the
 * restore runs on the state updater thread, the rest on the stream thread).
 */
final class UnrepairedRanges {
    static final String FILE = "fence-changelog-unrepaired";

    private final Path file;
    /** Found, not read yet; oldest first. */
    private final List<long[]> waiting = new ArrayList<>();
    /** Read and their keys written again, until the next commit flushes those writes. */
    private final List<long[]> repaired = new ArrayList<>();

    /** Ranges kept in {@code file} (loaded from it if it exists), or only in memory when {@code file} is {@code null}. */
    UnrepairedRanges(Path file) {
        this.file = file;
        if (file != null && Files.exists(file)) {
            try {
                for (String line : Files.readAllLines(file)) {
                    String[] parts = line.trim().split(" ");
                    if (parts.length == 2) {
                        waiting.add(new long[]{Long.parseLong(parts[0]), Long.parseLong(parts[1])});
                    }
                }
            } catch (IOException | NumberFormatException e) {
                throw new IllegalStateException("cannot read " + file + ": " + e.getMessage(), e);
            }
        }
    }

    /** Offsets {@code from} to {@code to} (inclusive) may hold records below the store's values. */
    synchronized void add(long from, long to) {
        waiting.add(new long[]{from, to});
        save();
    }

    synchronized boolean hasWaiting() {
        return !waiting.isEmpty();
    }

    /** The ranges to read now, oldest first; each stays kept until {@link #repaired}, {@link #giveBack} and a commit. */
    synchronized List<long[]> take() {
        List<long[]> taken = new ArrayList<>(waiting);
        waiting.clear();
        repaired.addAll(taken);
        return taken;
    }

    /** {@code range}, taken, could not be read: it waits again. */
    synchronized void giveBack(long[] range) {
        repaired.remove(range);
        waiting.add(range);
    }

    /** A commit flushed every write made before it: the ranges repaired so far are done. */
    synchronized void committed() {
        if (!repaired.isEmpty()) {
            repaired.clear();
            save();
        }
    }

    synchronized List<long[]> all() {
        List<long[]> all = new ArrayList<>(repaired);
        all.addAll(waiting);
        return all;
    }

    private void save() {
        if (file == null) {
            return;
        }
        try {
            List<long[]> all = all();
            if (all.isEmpty()) {
                Files.deleteIfExists(file);
                return;
            }
            List<String> lines = all.stream().map(range -> range[0] + " " + range[1]).toList();
            Path written = file.resolveSibling(file.getFileName() + ".tmp");
            Files.write(written, lines);
            Files.move(written, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }
}
