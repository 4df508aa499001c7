package dev.fencedwrites.devtools;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.devtools.chaos.Fault;
import dev.fencedwrites.testing.ShippedSchemas;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: {@code ./fence chaos --duration 2m} starts the default stack, real writer processes with real etcd
 * leases, and a nemesis that kills and stops real processes; only the real pipeline can show that the fence held.
 */
@Tag("failover")
@Timeout(value = 8, unit = TimeUnit.MINUTES)
class ChaosIT {
    @TempDir
    Path dir;

    @Test
    void aTwoMinuteChaosRunWithEveryFaultPassesVerify() throws Exception {
        StackTools.requireChaos();
        FenceRun run = FenceRun.of("chaos", "--duration", "2m", "--seed", "20261202", "--dir", dir.toString());

        assertPassed(run, dir, Fault.parse(Fault.all(false)));
    }

    /**
     * A chaos run's checks: exit 0, every fault in {@code faults} happened, stale writes reached the broker and were
     * rejected, verify found 0 violations with rows compared, and the timeline marks stale writes.
     */
    static void assertPassed(FenceRun run, Path dir, Set<Fault> faults) throws IOException {
        int exit = run.exit();
        String report = run.out();
        System.out.println(report);
        assertThat(exit).as(report + run.err()).isZero();
        assertThat(report).contains("PASS: 0 violations").doesNotContain("too short")
                .as("every writer process, the ones on a libfaketime clock too, acquired locks")
                .doesNotContain("writer processes that acquired no lock");
        for (Fault fault : faults) {
            Matcher count = Pattern.compile("(?m)^  " + fault.option() + " \\(.*?\\) +([0-9,]+)$").matcher(report);
            assertThat(count.find()).as(fault.option() + " in the report").isTrue();
            assertThat(Long.parseLong(count.group(1).replace(",", ""))).as(fault.option() + " happened").isPositive();
        }
        Matcher stale = Pattern.compile("(?m)^    decided STALE_TOKEN +([0-9,]+)$").matcher(report);
        assertThat(stale.find()).as("stale writes reached the broker and were rejected").isTrue();
        JsonNode verify = new ObjectMapper().readTree(dir.resolve("verify.json").toFile());
        ShippedSchemas.assertMatches(ShippedSchemas.VERIFY, Files.readString(dir.resolve("verify.json")));
        assertThat(verify.path("total").asLong()).isZero();
        assertThat(verify.path("counts").path("rows compared").asLong()).isPositive();
        assertThat(Files.readString(dir.resolve("report.html"))).contains("<svg").contains("stale write by");
    }
}
