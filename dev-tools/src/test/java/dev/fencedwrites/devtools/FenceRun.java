package dev.fencedwrites.devtools;

import java.io.PrintWriter;
import java.io.StringWriter;

/**
 * One {@code ./fence <args>} run in this JVM through the checkout's entry point ({@link DevMain#commandLine()}), with its
 * exit status and output captured.
 */
record FenceRun(int exit, String out, String err) {
    static FenceRun of(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        picocli.CommandLine line = DevMain.commandLine();
        line.setOut(new PrintWriter(out));
        line.setErr(new PrintWriter(err));
        int exit = line.execute(args);
        return new FenceRun(exit, out.toString(), err.toString());
    }
}
