package dev.fencedwrites.cli;

import dev.fencedwrites.cli.chaos.Fault;
import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.localstack.LocalStack;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: {@code ./fence chaos --stack} against a stack it did not start, as against a user's own (issue 18).
 * The writers' faults need nothing of the stack; the service faults are the shell commands an operator would give
 * ({@code kill -STOP} and {@code kill -CONT} of the enforcer's and etcd's processes).
 */
@Timeout(value = 8, unit = TimeUnit.MINUTES)
class ChaosStackIT {
    @TempDir
    Path dir;

    @Test
    void aChaosRunAgainstARunningStackWithFaultCommandsPassesVerify() throws Exception {
        try (LocalStack stack = LocalStack.builder(dir.resolve("users-stack")).connectors(BillingConnectors.set(false))
                .progress(line -> System.out.println("[stack] " + line)).start()) {
            Path runDir = dir.resolve("run");
            // One fault command from the env file (as ./fence up writes them), one on the command line.
            Path envFile = dir.resolve("users-stack.env");
            Map<String, String> settings = new LinkedHashMap<>(stack.env());
            settings.put(ChaosCommand.FAULT_SETTING + "ETCD_PAUSE", pause(stack.etcdPid()));
            Files.writeString(envFile, EnvFile.lines(settings));
            FenceRun run = FenceRun.of("chaos", "--stack", "--env-file", envFile.toString(), "--postgres", stack.postgresUrl(),
                    "--duration", "30s", "--seed", "20261204", "--dir", runDir.toString(),
                    // clock-jump is ChaosIT's: a libfaketime writer takes about 10 s more to start, a third of this run.
                    "--skewed", "0", "--faults", "worker-pause,worker-kill,enforcer-pause,etcd-pause,inject",
                    "--fault-command", "enforcer-pause=" + pause(stack.enforcerPid(0)));

            Set<Fault> faults = EnumSet.of(Fault.WORKER_PAUSE, Fault.WORKER_KILL, Fault.ENFORCER_PAUSE, Fault.ETCD_PAUSE,
                    Fault.INJECT);
            ChaosIT.assertPassed(run, runDir, faults);
        }
    }

    /** The command an operator would give: stop the process for the fault's length, then let it run again. */
    private static String pause(long pid) {
        return "trap 'kill -CONT " + pid + "' EXIT INT TERM HUP && kill -STOP " + pid + " && sleep $FENCE_FAULT_SECONDS";
    }
}
