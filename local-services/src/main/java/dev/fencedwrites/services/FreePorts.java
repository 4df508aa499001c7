package dev.fencedwrites.services;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.IntSupplier;

/**
 * Picks free TCP ports on 127.0.0.1 for the services a process starts.
 *
 * <p>A port is free when picked, and bound by a child process a moment later: two stacks starting at the same moment (two
 * JVMs, e.g. a test run and {@code ./fence up}) could be handed the same port by the kernel and one of them would fail with
 * "Address already in use" (seen when a test run and a user's stack started together). So each pick also takes an
 * advisory lock on a file named after the port under {@value #LOCK_DIR_NAME}{@code -<user.name>} in
 * {@code java.io.tmpdir}; a port whose file
 * another process holds locked is passed over. The lock lives as long as the picking process (the operating system drops
 * it when the process ends, even on {@code kill -9}), which is as long as the services it starts: no file is ever deleted,
 * and a stale file is never a lock.
 */
public final class FreePorts {
    /** The directory of the per-port lock files, under {@code java.io.tmpdir}. */
    public static final String LOCK_DIR_NAME = "fenced-writes-ports";
    /** The picks a process tries before it gives up. */
    private static final int ATTEMPTS = 100;
    /** The locks this process holds: kept open for its lifetime. */
    private static final List<FileChannel> HELD = new ArrayList<>();
    /**
     * The ports whose lock this process holds. A held port's file is never opened again: closing a second channel on it
     * would drop the process's POSIX lock ({@link FileLock}'s documentation: locks are held per process, and any close of
     * the file releases them).
     */
    private static final Set<Integer> HELD_PORTS = new HashSet<>();

    private FreePorts() {
    }

    /**
     * A port that was free a moment ago and that no other process using this class picked while it lives; services bind
     * it soon after.
     *
     * @throws UncheckedIOException when no port can be bound on 127.0.0.1, or none of {@value #ATTEMPTS} could be locked
     */
    public static int pick() {
        return pick(FreePorts::bindable);
    }

    /** {@link #pick()} with the candidate ports from {@code candidates}: for tests. */
    static synchronized int pick(IntSupplier candidates) {
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            int port = candidates.getAsInt();
            if (reserve(port)) {
                return port;
            }
        }
        throw new UncheckedIOException(new IOException("no port on 127.0.0.1 could be reserved in " + ATTEMPTS
                + " picks: every one was locked by another process under " + lockDir()));
    }

    private static int bindable() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("no free port on 127.0.0.1", e);
        }
    }

    /** Locks {@code port}'s file for this process's lifetime; {@code false} when another process (or this one) has it. */
    private static boolean reserve(int port) {
        if (HELD_PORTS.contains(port)) {
            return false;
        }
        FileChannel channel = null;
        try {
            Path dir = Files.createDirectories(lockDir());
            channel = FileChannel.open(dir.resolve(port + ".lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            FileLock lock = channel.tryLock();
            if (lock != null) {
                HELD.add(channel);
                HELD_PORTS.add(port);
                return true;
            }
        } catch (OverlappingFileLockException e) {
            // Not expected (held ports are skipped above); the port stays this process's.
            return false;
        } catch (IOException e) {
            // A lock directory that cannot be used (read-only tmp): the pick stays as good as an unlocked one.
            System.err.printf("[fenced-writes] port %d picked without a lock (%s): a stack starting at the same moment could "
                    + "pick it too%n", port, e);
            closeQuietly(channel);
            return true;
        }
        closeQuietly(channel);
        return false;
    }

    private static void closeQuietly(FileChannel channel) {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // Nothing held.
            }
        }
    }

    static Path lockDir() {
        return Path.of(System.getProperty("java.io.tmpdir"), LOCK_DIR_NAME + "-" + System.getProperty("user.name"));
    }
}
