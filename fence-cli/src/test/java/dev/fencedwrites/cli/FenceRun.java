package dev.fencedwrites.cli;

import java.io.PrintWriter;
import java.io.StringWriter;

/**
 * One {@code fence <args>} run in this JVM through the one entry point ({@link FenceMain#commandLine()}), with its exit
 * status and output captured: what the command-line ITs check.
 */
record FenceRun(int exit, String out, String err) {
    static FenceRun of(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        picocli.CommandLine line = FenceMain.commandLine();
        line.setOut(new PrintWriter(out));
        line.setErr(new PrintWriter(err));
        int exit = line.execute(args);
        return new FenceRun(exit, out.toString(), err.toString());
    }
}
