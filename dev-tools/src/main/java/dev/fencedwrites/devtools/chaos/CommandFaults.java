package dev.fencedwrites.devtools.chaos;

import java.io.File;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The service faults on a stack {@code fence chaos} did not start: each one is a shell command the user names
 * ({@code --fault-command enforcer-kill='...'}), run with {@code sh -c} and these variables: {@code FENCE_FAULT} (the fault's
 * name), {@code FENCE_FAULT_MILLIS} and {@code FENCE_FAULT_SECONDS} (how long the pause or the time down should last). The
 * command does the whole fault, e.g. {@code docker pause etcd; sleep $FENCE_FAULT_SECONDS; docker unpause etcd}, and returns
 * once the service is back; its output is appended to {@code faults.log}. It runs in a session of its own ({@code setsid}),
 * so a Ctrl-C meant for chaos does not cut a pause short before the command resumes what it stopped.
 */
final class CommandFaults implements ServiceFaults {
    /** The longest a fault command may take. */
    static final Duration TIMEOUT = Duration.ofMinutes(5);
    private final Map<Fault, String> commands;
    private final File log;
    private final Map<Fault, Process> running = new EnumMap<>(Fault.class);

    /** @param dir where {@code faults.log} goes */
    CommandFaults(Map<Fault, String> commands, Path dir) {
        this.commands = new EnumMap<>(commands);
        this.log = dir.resolve("faults.log").toFile();
    }

    @Override
    public int instances(Fault fault) {
        return commands.containsKey(fault) ? 1 : 0;
    }

    @Override
    public synchronized void begin(Fault fault, int instance, long millis) throws Exception {
        // In a session of its own: Ctrl-C on chaos's terminal does not stop a pause before it resumes what it stopped.
        ProcessBuilder command = new ProcessBuilder("setsid", "--wait", "sh", "-c", commands.get(fault)).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log));
        command.environment().put("FENCE_FAULT", fault.option());
        command.environment().put("FENCE_FAULT_MILLIS", Long.toString(millis));
        command.environment().put("FENCE_FAULT_SECONDS", Long.toString((millis + 999) / 1000));
        running.put(fault, command.start());
    }

    @Override
    public void end(Fault fault, int instance) throws Exception {
        Process process;
        synchronized (this) {
            process = running.remove(fault);
        }
        if (process == null) {
            return;
        }
        if (!process.waitFor(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
            process.destroy(); // SIGTERM first: a command's trap may undo its fault
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
            throw new IllegalStateException("--fault-command " + fault.option() + " still ran after " + TIMEOUT.toMinutes()
                    + " minutes; its output is in " + log);
        }
        if (process.exitValue() != 0) {
            throw new IllegalStateException("--fault-command " + fault.option() + " exited with " + process.exitValue()
                    + "; its output is in " + log);
        }
    }
}
