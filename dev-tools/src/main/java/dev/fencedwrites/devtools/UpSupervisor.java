package dev.fencedwrites.devtools;

import dev.fencedwrites.cli.EnvFile;
import dev.fencedwrites.localstack.LocalStack;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;

/**
 * What {@code fence up} does while it runs: restarts an enforcer instance or a Connect worker whose process has
 * exited (a crash, or a kill by {@code fence chaos --stack}), as a container's restart policy would, and keeps one file per
 * process id in {@code <dir>/pids} up to date. The {@code FENCE_FAULT_*} commands it gives for the env file signal those
 * processes, so {@code fence chaos --stack} can inject every service fault into the stack {@code up} started.
 */
final class UpSupervisor implements AutoCloseable {
    private static final Duration TICK = Duration.ofSeconds(1);
    private static final Duration RETRY = Duration.ofSeconds(5);
    private final LocalStack stack;
    private final Path pids;
    private final int enforcers;
    private final int workers;
    private final Consumer<String> log;
    private final Thread thread;
    private volatile boolean closing;

    /** Writes the pid files; {@link #start()} starts watching. */
    UpSupervisor(LocalStack stack, Path dir, Consumer<String> log) throws IOException {
        this.stack = stack;
        this.pids = Files.createDirectories(dir.resolve("pids"));
        this.enforcers = stack.enforcerUrls().size();
        this.workers = stack.connectUrls().size();
        this.log = log;
        this.thread = new Thread(this::watch, "fence-up-supervisor");
        this.thread.setDaemon(true);
        for (int i = 0; i < enforcers; i++) {
            writePid("enforcer-" + i, stack.enforcerPid(i));
        }
        for (int i = 0; i < workers; i++) {
            writePid("connect-" + i, stack.connectPid(i));
        }
        writePid("etcd", stack.etcdPid());
    }

    /**
     * The fault commands for the env file, by setting name ({@code FENCE_FAULT_ENFORCER_KILL}): shell commands in the form
     * {@code fence chaos --stack} runs them, on the first enforcer, Connect worker and etcd (member).
     */
    Map<String, String> faultCommands() {
        Map<String, String> commands = new LinkedHashMap<>();
        commands.put("FENCE_FAULT_ENFORCER_KILL", killAndWait(pidFile("enforcer-0")));
        commands.put("FENCE_FAULT_ENFORCER_PAUSE", pause(pidFile("enforcer-0")));
        commands.put("FENCE_FAULT_CONNECT_KILL", killAndWait(pidFile("connect-0")));
        commands.put("FENCE_FAULT_ETCD_PAUSE", pause(pidFile("etcd")));
        return commands;
    }

    void start() {
        thread.start();
    }

    @Override
    public void close() {
        closing = true;
        thread.interrupt();
        try {
            thread.join(Duration.ofSeconds(30).toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void watch() {
        try {
            while (!closing) {
                Thread.sleep(TICK.toMillis());
                for (int i = 0; i < enforcers && !closing; i++) {
                    if (!stack.enforcerAlive(i)) {
                        restart("enforcer " + i, "enforcer-" + i, i, true);
                    } else {
                        refreshPid("enforcer-" + i, stack.enforcerPid(i));
                    }
                }
                for (int i = 0; i < workers && !closing; i++) {
                    if (!stack.connectAlive(i)) {
                        restart("Connect worker " + i, "connect-" + i, i, false);
                    } else {
                        refreshPid("connect-" + i, stack.connectPid(i)); // a restart that started it and then failed
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // closing
        }
    }

    private void restart(String what, String pidName, int i, boolean enforcer) throws InterruptedException {
        log.accept(what + " exited; restarting it ...");
        long started = System.nanoTime();
        try {
            if (enforcer) {
                stack.restartEnforcer(i);
                writePid(pidName, stack.enforcerPid(i));
            } else {
                stack.restartConnect(i);
                writePid(pidName, stack.connectPid(i));
            }
            log.accept(String.format("%s is back after %.1f s", what, (System.nanoTime() - started) / 1e9));
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception e) {
            if (!closing) {
                log.accept("restarting " + what + " failed: " + e.getMessage() + "; trying again in " + RETRY.toSeconds() + " s");
                Thread.sleep(RETRY.toMillis());
            }
        }
    }

    /** Writes the pid file when the running process is not the one it names. */
    private void refreshPid(String name, long pid) {
        try {
            if (!Files.readString(pidFile(name)).strip().equals(Long.toString(pid))) {
                writePid(name, pid);
            }
        } catch (IOException | IllegalStateException e) {
            writePid(name, pid); // missing or unreadable: write it
        }
    }

    private Path pidFile(String name) {
        return pids.resolve(name + ".pid");
    }

    /** Replaces the file at once, so a reader sees the old pid or the new one. */
    private void writePid(String name, long pid) {
        try {
            Path next = pids.resolve(name + ".pid.next");
            Files.writeString(next, Long.toString(pid));
            Files.move(next, pidFile(name), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** SIGKILL, then wait until the supervisor has written the restarted process's pid (it is ready then). */
    private static String killAndWait(Path pidFile) {
        String file = EnvFile.shellQuoted(pidFile.toString());
        return "old=$(cat " + file + ") && kill -KILL \"$old\" && while [ \"$(cat " + file
                + ")\" = \"$old\" ]; do sleep 0.5; done";
    }

    /** SIGSTOP for the fault's length, then SIGCONT, also when the command is stopped early (SIGINT, SIGTERM, SIGHUP). */
    private static String pause(Path pidFile) {
        String file = EnvFile.shellQuoted(pidFile.toString());
        return "pid=$(cat " + file + ") && trap 'kill -CONT \"$pid\"' EXIT INT TERM HUP && kill -STOP \"$pid\" && sleep "
                + "\"$FENCE_FAULT_SECONDS\"";
    }
}
