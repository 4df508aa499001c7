package dev.fencedwrites.services;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/** A service running as a child process, its stdout and stderr going to a log file. */
public final class ChildProcess implements AutoCloseable {
    /**
     * The first group id given to a child under {@link #ownGroupEach()}: above the ids of /etc/group's users and
     * systemd's dynamic ranges, one block of 1,000 per JVM.
     */
    private static final int FIRST_GROUP = 100_000 + (int) (ProcessHandle.current().pid() % 20_000) * 1_000;
    private static final AtomicInteger NEXT_GROUP = new AtomicInteger();
    private static volatile boolean ownGroups;

    private final String name;
    private final Process process;
    private final Path log;

    private ChildProcess(String name, Process process, Path log) {
        this.name = name;
        this.process = process;
        this.log = log;
    }

    /**
     * From now on, every child of this JVM runs with a group id of its own ({@code setpriv --regid}, the user stays),
     * which {@link NetworkLinks} matches to cut its links. Needs root and setpriv ({@link NetworkLinks#unavailable()}).
     */
    public static void ownGroupEach() {
        ownGroups = true;
    }

    /**
     * Starts {@code command} in {@code workDir}, appending its output to {@code log}.
     *
     * @throws IllegalStateException if the program cannot be started
     */
    public static ChildProcess start(String name, List<String> command, Path workDir, Path log, Map<String, String> env) {
        return start(name, command, workDir, log, env, List.of());
    }

    /**
     * Like {@link #start(String, List, Path, Path, Map)}, without the inherited environment variables whose names start
     * with one of {@code dropped} (settings the child would take over its own configuration file).
     */
    public static ChildProcess start(String name, List<String> command, Path workDir, Path log, Map<String, String> env,
            List<String> dropped) {
        List<String> run = command;
        if (ownGroups) {
            int group = FIRST_GROUP + NEXT_GROUP.getAndIncrement() % 1_000;
            run = new ArrayList<>(List.of("setpriv", "--regid=" + group, "--clear-groups", "--"));
            run.addAll(command);
        }
        ProcessBuilder builder = new ProcessBuilder(run).directory(workDir.toFile()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        builder.environment().keySet().removeIf(variable -> dropped.stream().anyMatch(variable::startsWith));
        builder.environment().putAll(env);
        try {
            return new ChildProcess(name, builder.start(), log);
        } catch (IOException e) {
            throw new IllegalStateException("cannot start " + name + " (" + command.get(0) + "): " + e.getMessage(), e);
        }
    }

    /** Runs {@code command} to completion; fails with the log's tail unless it exits 0 within {@code timeout}. */
    public static void run(String name, List<String> command, Path workDir, Path log, Duration timeout)
            throws InterruptedException {
        try (ChildProcess child = start(name, command, workDir, log, Map.of())) {
            if (!child.process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException(name + " did not finish within " + timeout.toSeconds() + " s" + child.tail());
            }
            if (child.process.exitValue() != 0) {
                throw new IllegalStateException(name + " failed with exit code " + child.process.exitValue() + child.tail());
            }
        }
    }

    /**
     * Waits until {@code check} passes and returns the ready service; on failure stops the process
     * and rethrows, so a service that never became ready does not linger.
     */
    public Service awaitReady(String address, Duration timeout, Callable<Boolean> check) throws InterruptedException {
        try {
            Await.until(name + " at " + address, timeout, this, check);
        } catch (InterruptedException | RuntimeException e) {
            close();
            throw e;
        }
        return new Service(this, address);
    }

    /** The name given at start, used in logs and error messages. */
    public String name() {
        return name;
    }

    /** The operating system's process id. */
    public long pid() {
        return process.pid();
    }

    /** Whether the process is still running. */
    public boolean isAlive() {
        return process.isAlive();
    }

    /** The file its stdout and stderr are appended to. */
    public Path log() {
        return log;
    }

    /** Sends a signal by name (e.g. {@code STOP}, {@code CONT}, {@code KILL}) with {@code kill(1)}. */
    public void signal(String signal) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid())).inheritIO().start();
            if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
                throw new IllegalStateException("kill -" + signal + " " + pid() + " failed");
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot run kill: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while signalling " + name, e);
        }
    }

    /** Waits for the process to exit; returns its exit code, or -1 if it is still running after {@code timeout}. */
    public int waitFor(Duration timeout) throws InterruptedException {
        return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS) ? process.exitValue() : -1;
    }

    /** The last lines of the log, prefixed for an error message. */
    public String tail() {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            List<String> last = lines.subList(Math.max(0, lines.size() - 25), lines.size());
            return "\n--- last lines of " + log + " ---\n" + String.join("\n", last);
        } catch (IOException e) {
            return " (log " + log + " unreadable: " + e.getMessage() + ")";
        }
    }

    /** SIGTERM, then SIGKILL if it has not exited within 20 s. */
    @Override
    public void close() {
        terminate(process.toHandle(), Duration.ofSeconds(20));
    }

    /** Sends {@code process} SIGTERM and, if it has not exited within {@code grace}, SIGKILL. */
    public static void terminate(ProcessHandle process, Duration grace) {
        terminateAll(List.of(process), grace);
    }

    /**
     * Stops those of {@code children} still running, all at once, as {@link #terminateAll} does; {@code null} entries (a
     * service never started) are skipped. The close of a set of services (brokers, etcd members, enforcers, Connect workers).
     */
    public static void stopAll(Collection<ChildProcess> children, Duration grace) {
        terminateAll(children.stream().filter(child -> child != null && child.isAlive()).map(child -> child.process.toHandle())
                .toList(), grace);
    }

    /**
     * Sends every one of {@code processes} SIGTERM, waits until all have exited or {@code grace} has passed since, then
     * SIGKILLs those still running and waits up to 10 s more for them: a set of services stops in one grace period, not in one
     * per process. Processes already gone are skipped. If interrupted, SIGKILLs those still running and returns with the
     * interrupt flag set.
     */
    public static void terminateAll(Collection<ProcessHandle> processes, Duration grace) {
        List<ProcessHandle> running = processes.stream().filter(ProcessHandle::isAlive).toList();
        running.forEach(ProcessHandle::destroy);
        long deadline = System.nanoTime() + grace.toNanos();
        try {
            for (ProcessHandle process : running) {
                long left = Math.max(0, deadline - System.nanoTime());
                process.onExit().get(left, TimeUnit.NANOSECONDS);
            }
        } catch (InterruptedException e) {
            running.forEach(ProcessHandle::destroyForcibly);
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            List<ProcessHandle> left = running.stream().filter(ProcessHandle::isAlive).toList();
            left.forEach(ProcessHandle::destroyForcibly);
            left.forEach(process -> process.onExit().completeOnTimeout(process, 10, TimeUnit.SECONDS).join());
        }
    }
}
