package dev.fencedwrites.devtools;

import dev.fencedwrites.cli.BuildVersion;
import dev.fencedwrites.cli.DurationConverter;
import dev.fencedwrites.cli.EnvFile;
import dev.fencedwrites.cli.FenceMain;
import dev.fencedwrites.cli.StackSettings;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code fence down}: stops the {@code ./fence up} whose env file is here, as Ctrl-C in its terminal would (a new user ran
 * {@code up} in the background and found no command to stop it).
 *
 * <p>The env file names up's process ({@value #PID}) and when it started ({@value #STARTED}, ISO-8601): both must match
 * a live process, so a process id the system gave to another program after up died is never signalled.
 */
@Command(name = "down", header = "Stop the ./fence up whose env file is .fence/stack.env (or --env-file), as Ctrl-C would.",
        usageHelpWidth = 130, mixinStandardHelpOptions = true, versionProvider = BuildVersion.class, description = {
                "Sends SIGTERM to the ./fence up process named in the env file (" + DownCommand.PID + ", with its start time "
                        + DownCommand.STARTED + " to make sure it is still that process), then waits until it has stopped "
                        + "every service it started and exited. up removes the env file as it stops; data and logs stay in up's "
                        + "--dir. up writes the file once the stack is ready: while it starts, stop it with Ctrl-C.",
                "Nothing running (no env file): nothing to do. An env file whose process is gone (up was killed with "
                        + "SIGKILL, or the machine restarted): the file is removed, and the services up had started, if any "
                        + "still run, are named by the pid files in up's --dir/pids/. A live process with that id but another "
                        + "start time is never signalled. The two settings are read from the file only, not from a shell "
                        + "that sourced an earlier one.",
                "Exit status: 0 when up stopped or nothing was running, 1 when up still runs after --timeout, the live "
                        + "process is not that up, or the env file names no up process (one written by ./fence demo, or by an "
                        + "up older than this command)."},
        footer = {"", "Example:", "  ./fence up > up.log 2>&1 &     # ready once .fence/stack.env exists",
                "  ./fence down"})
public final class DownCommand implements Callable<Integer> {
    /** The env file's setting that names up's process id. */
    static final String PID = "FENCE_UP_PID";
    /** The env file's setting that gives up's process start time (ISO-8601), as the system reports it. */
    static final String STARTED = "FENCE_UP_STARTED";

    @Option(names = "--timeout", paramLabel = "DURATION", defaultValue = "3m", converter = DurationConverter.class,
            description = "How long to wait for up to "
                    + "stop every service (default: ${DEFAULT-VALUE}; up stops them one after another, each within 30 s).")
    Duration timeout;

    @ParentCommand
    FenceMain fence;
    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        PrintWriter err = spec.commandLine().getErr();
        Path envFile = fence.stack().envFileOr(UpCommand.DEFAULT_ENV_FILE);
        if (!Files.isRegularFile(envFile)) {
            err.println("[fence down] nothing to stop: no " + envFile + " (./fence up writes it once the stack is ready, and "
                    + "removes it when it stops; an up still starting is stopped with Ctrl-C or kill -TERM)");
            return 0;
        }
        // From the file only: a shell that sourced an earlier up's file still has that up's values in its environment.
        String pidText = StackSettings.fromFile(envFile, PID);
        String startedText = StackSettings.fromFile(envFile, STARTED);
        long pid;
        Instant started;
        try {
            pid = Long.parseLong(pidText == null ? "" : pidText.strip());
            started = Instant.parse(startedText == null ? "" : startedText.strip());
        } catch (RuntimeException e) {
            err.println("fence down: " + envFile + " names no ./fence up process (" + PID + "=" + pidText + ", " + STARTED
                    + "=" + startedText + "): written by ./fence demo or by an up older than this command; stop that one "
                    + "with Ctrl-C or kill -TERM");
            return 1;
        }
        Optional<ProcessHandle> alive = ProcessHandle.of(pid).filter(ProcessHandle::isAlive);
        if (alive.isEmpty()) {
            EnvFile.deleteQuietly(envFile);
            err.println("[fence down] ./fence up (pid " + pid + ") is not running any more; removed its stale " + envFile
                    + ". If it was killed with SIGKILL, the services it started may still run: their process ids are in the "
                    + "pid files of its --dir/pids/");
            return 0;
        }
        if (!startedAt(alive.get(), started)) {
            err.println("fence down: process " + pid + " runs, but did not start at " + started + " as " + envFile + " says "
                    + "./fence up did (started: " + alive.get().info().startInstant().map(Instant::toString).orElse("unknown")
                    + "): not signalled, and the file is kept. If it is that up, stop it with kill -TERM " + pid);
            return 1;
        }
        return stop(alive.get(), timeout, err);
    }

    private static Integer stop(ProcessHandle up, Duration wait, PrintWriter err) throws InterruptedException {
        err.println("[fence down] stopping ./fence up (pid " + up.pid() + ") with SIGTERM ...");
        err.flush();
        long begin = System.nanoTime();
        if (!up.destroy() && up.isAlive()) {
            err.println("fence down: could not send SIGTERM to ./fence up (pid " + up.pid() + "): is it another user's?");
            return 1;
        }
        try {
            up.onExit().get(wait.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            err.println("fence down: ./fence up (pid " + up.pid() + ") still runs after " + wait.toSeconds() + " s; its log says "
                    + "which service it is stopping. kill -KILL " + up.pid() + " would leave the services it started running");
            return 1;
        } catch (ExecutionException e) {
            throw new IllegalStateException("waiting for ./fence up to exit failed", e);
        }
        err.printf("[fence down] ./fence up stopped every service and exited in %.1f s%n", (System.nanoTime() - begin) / 1e9);
        return 0;
    }

    /**
     * Whether {@code process} started at {@code started}, as far as the system tells: Linux reports start times in clock
     * ticks after a boot time it gives in whole seconds, read once per JVM, so a clock step in between moves it by up to a
     * second or more; 2 s of slack keep a live up from being taken for another process. A process id is reused only after
     * its process exited, and a new process with it started after that.
     */
    static boolean startedAt(ProcessHandle process, Instant started) {
        return process.info().startInstant()
                .map(start -> Math.abs(Duration.between(start, started).toMillis()) <= 2_000).orElse(false);
    }

    /**
     * The settings up writes into its env file about itself: {@value #PID} and {@value #STARTED}; none on a system that does
     * not report this process's start time (then {@code ./fence down} says the file names no up process, and Ctrl-C or
     * kill -TERM stop it), so that up runs there all the same.
     */
    static Map<String, String> selfSettings() {
        ProcessHandle self = ProcessHandle.current();
        return self.info().startInstant()
                .map(started -> Map.of(PID, Long.toString(self.pid()), STARTED, started.toString()))
                .orElse(Map.of());
    }
}
