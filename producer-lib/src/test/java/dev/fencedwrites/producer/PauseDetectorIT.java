package dev.fencedwrites.producer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.services.ChildProcess;
import dev.fencedwrites.services.Jvm;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs a real process: only a real SIGSTOP of a JVM shows that the detector measures the stall a paused worker does not notice.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class PauseDetectorIT {
    @TempDir
    Path dir;

    @Test
    void reportsAStallAsLongAsASigstopOfItsJvm() throws Exception {
        try (ChildProcess probe = ChildProcess.start("pause-probe",
                Jvm.command(List.of("-Xmx64m"), null, PauseDetectorProbe.class.getName(), List.of()),
                dir, dir.resolve("probe.log"), Map.of())) {
            await().atMost(Duration.ofSeconds(30)).until(() -> largestReported(probe) >= 0);
            assertThat(largestReported(probe)).as("no stall before the pause").isLessThan(1_000);

            probe.signal("STOP");
            try {
                await().pollDelay(Duration.ofMillis(1_500)).atMost(Duration.ofSeconds(5)).until(() -> true);
            } finally {
                probe.signal("CONT");
            }

            await().atMost(Duration.ofSeconds(10))
                    .untilAsserted(() -> assertThat(largestReported(probe)).isGreaterThanOrEqualTo(1_400));
            assertThat(Files.readString(probe.log())).containsPattern("GAUGE 1\\.[4-9]|GAUGE [2-9]\\.");
        }
    }

    /** The last STALL figure the probe printed, in ms; -1 before the first. */
    private static long largestReported(ChildProcess probe) throws Exception {
        List<String> lines = Files.readAllLines(probe.log()).stream().filter(l -> l.startsWith("STALL ")).toList();
        return lines.isEmpty() ? -1 : Long.parseLong(lines.get(lines.size() - 1).split(" ")[1]);
    }
}
