package dev.fencedwrites.demo;

import java.io.PrintStream;

/** Prints timestamped demo lines: {@code [ 2.3s] actor     what happened}. */
public final class Timeline {
    private final PrintStream out;
    private final long startNanos = System.nanoTime();

    /** Lines go to {@code out}, timed from now. */
    public Timeline(PrintStream out) {
        this.out = out;
    }

    void at(String actor, String what) {
        out.printf("[%5.1fs] %-9s %s%n", (System.nanoTime() - startNanos) / 1e9, actor, what);
        out.flush();
    }

    /** Prints {@code text} as it is. */
    public void line(String text) {
        out.println(text);
        out.flush();
    }
}
