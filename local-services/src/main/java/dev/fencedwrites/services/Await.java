package dev.fencedwrites.services;

import java.time.Duration;
import java.util.concurrent.Callable;

/** Polls a readiness check until it passes, failing early when the service's process dies. */
public final class Await {
    private static final long POLL_MS = 100;

    /** Thrown by a check to stop waiting at once: the awaited state can no longer come. */
    public static final class GiveUp extends RuntimeException {
        /** @param message why the awaited state can no longer come */
        public GiveUp(String message) {
            super(message);
        }
    }

    private Await() {
    }

    /**
     * @param what    what is awaited, for the error message
     * @param process the process that must stay alive meanwhile, or {@code null}
     * @param check   returns true when ready; exceptions count as not ready yet, except {@link GiveUp}
     * @throws IllegalStateException on timeout or when the process exits (with its exit code), with the log's tail
     */
    public static void until(String what, Duration timeout, ChildProcess process, Callable<Boolean> check)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        Exception last = null;
        while (System.nanoTime() - deadline < 0) {
            if (process != null && !process.isAlive()) {
                throw new IllegalStateException(
                        process.name() + " exited (exit code " + process.waitFor(Duration.ZERO) + ") while waiting for " + what
                                + process.tail());
            }
            try {
                if (Boolean.TRUE.equals(check.call())) {
                    return;
                }
            } catch (InterruptedException | GiveUp e) {
                throw e;
            } catch (Exception e) {
                last = e;
            }
            Thread.sleep(POLL_MS);
        }
        throw new IllegalStateException("timed out after " + timeout.toSeconds() + " s waiting for " + what
                + (last == null ? "" : " (last error: " + last + ")") + (process == null ? "" : process.tail()));
    }
}
