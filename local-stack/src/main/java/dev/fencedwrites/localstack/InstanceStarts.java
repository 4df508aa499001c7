package dev.fencedwrites.localstack;

import dev.fencedwrites.services.ChildProcess;
import dev.fencedwrites.services.Service;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * One start at a time per instance of a stack's service, none once the stack is closing, and an instance that comes up
 * after the close stopped again. A second start of an instance would run two processes on its port and directory; the
 * start itself (a minute on a loaded machine) holds no lock, so the owner answers about every instance meanwhile. Lock
 * order: this, then the owner (in {@code keep}); so the owner calls {@link #close()} before taking its own monitor.
 *
 * @param <S> what a start returns
 */
final class InstanceStarts<S extends AutoCloseable> {
    private final String what;
    private final boolean[] starting;
    private boolean closed;

    /** @param what the instances' name in messages, e.g. {@code "enforcer"} */
    InstanceStarts(String what, int count) {
        this.what = what;
        this.starting = new boolean[count];
    }

    /**
     * Runs {@code start} for instance {@code i} and hands its result to {@code keep} unless the stack closed meanwhile.
     * The instance counts as starting until {@code keep} returned, so a second start sees either that or
     * {@code running}.
     *
     * @param running whether instance {@code i}'s process runs now (the owner's view; called under this object's lock)
     * @throws IllegalStateException when instance {@code i} runs or is starting already, or the stack is closing (a new
     *                               instance that came up after the close is stopped first)
     */
    S start(int i, BooleanSupplier running, Callable<S> start, Consumer<S> keep) throws Exception {
        synchronized (this) {
            if (closed || starting[i]) {
                throw new IllegalStateException(what + " " + i + (closed ? ": the stack was told to stop" : " is starting"));
            }
            if (running.getAsBoolean()) {
                throw new IllegalStateException(what + " " + i + " is still running; kill it first");
            }
            starting[i] = true;
        }
        S started;
        try {
            started = start.call();
        } catch (Exception | Error e) {
            synchronized (this) {
                starting[i] = false;
            }
            throw e;
        }
        synchronized (this) {
            try {
                if (!closed) {
                    keep.accept(started);
                    return started;
                }
            } finally {
                starting[i] = false;
            }
        }
        started.close();
        throw new IllegalStateException(what + " " + i + " came up after the stack was told to stop; stopped it again");
    }

    /** From now on every start is refused, and one under way is stopped as soon as it is up. */
    synchronized void close() {
        closed = true;
    }

    /**
     * Stops every process of {@code services} still running, all at once: SIGCONT first (a paused one must act on
     * SIGTERM), SIGTERM, SIGKILL 20 s later. {@code services} is read under {@code owner}'s lock.
     */
    static void stopRunning(Object owner, Service[] services) {
        List<ChildProcess> running;
        synchronized (owner) {
            running = Arrays.stream(services).filter(Objects::nonNull).map(Service::process).filter(ChildProcess::isAlive)
                    .toList();
        }
        running.forEach(process -> process.signal("CONT"));
        ChildProcess.stopAll(running, Duration.ofSeconds(20));
    }
}
