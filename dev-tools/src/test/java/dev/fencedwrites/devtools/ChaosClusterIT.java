package dev.fencedwrites.devtools;

import dev.fencedwrites.devtools.chaos.Fault;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: {@code ./fence chaos --cluster --duration 2m} against the clustered stack (3 brokers, 3 etcd members, 2
 * enforcers, 2 Connect workers), broker kills among the faults. Runs in {@code ./fence test-failover}, not in
 * {@code ./fence test} (the stack alone costs about a minute and 5 GiB).
 */
@Tag("failover")
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class ChaosClusterIT {
    @TempDir
    Path dir;

    @Test
    void aTwoMinuteChaosRunOnTheClusteredStackPassesVerify() throws Exception {
        StackTools.requireChaos();
        FenceRun run = FenceRun.of("chaos", "--cluster", "--duration", "2m", "--seed", "20261203", "--dir", dir.toString());

        ChaosIT.assertPassed(run, dir, Fault.parse(Fault.all(true)));
    }
}
