package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.localstack.internal.Await;
import dev.fencedwrites.localstack.internal.EnforcerProcess;
import dev.fencedwrites.localstack.internal.KafkaBroker;
import dev.fencedwrites.localstack.internal.PropertiesFiles;
import dev.fencedwrites.localstack.internal.Service;
import dev.fencedwrites.schemas.RejectionReason;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: exactly-once across {@code kill -9} is a property of the real broker's
 * transactions and of the state store restored from its real changelog, which no test driver has.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class EnforcerCrashIT {
    private static final int RECORDS = 100_000;
    private static final int BATCHES = 4;
    private static final int PARTITIONS = 3;
    /** A killed member leaves the group after this; the default 45 s would only slow the test. */
    static final Map<String, String> FAST_FAILOVER = Map.of("streams.session.timeout.ms", "6000", "streams.heartbeat.interval.ms", "1000");

    @TempDir
    Path dir;

    @Test
    void everyInputRecordIsDecidedExactlyOnceAcrossThreeKillNineRestarts() throws Exception {
        Path log4j2 = PropertiesFiles.log4j2(dir.resolve("log4j2.properties"), "INFO");
        try (Service kafka = KafkaBroker.start(dir.resolve("kafka"), log4j2)) {
            Workload.createTopics(kafka.address(), PARTITIONS);
            try (Workload workload = new Workload(kafka.address(), 200, 42);
                 Workload.Outputs outputs = new Workload.Outputs(kafka.address(), PARTITIONS)) {
                Service enforcer = EnforcerProcess.start(dir.resolve("enforcer"), log4j2, kafka.address(), FAST_FAILOVER);
                try {
                    for (int batch = 0; batch < BATCHES; batch++) {
                        workload.produceUntil((batch + 1) * RECORDS / BATCHES);
                        if (batch == BATCHES - 1) {
                            break;
                        }
                        int killAt = batch * RECORDS / BATCHES + 5_000;
                        Await.until(killAt + " outputs before the kill", Duration.ofMinutes(3), enforcer.process(), () -> outputs.poll() >= killAt);
                        enforcer.process().signal("KILL");
                        enforcer.process().waitFor(Duration.ofSeconds(30));
                        System.out.printf("killed the enforcer mid-stream with %d of %d inputs decided%n", outputs.poll(), workload.sent().size());
                        enforcer = EnforcerProcess.start(dir.resolve("enforcer"), log4j2, kafka.address(), FAST_FAILOVER);
                    }
                    Await.until("all " + RECORDS + " inputs decided", Duration.ofMinutes(5), enforcer.process(),
                            () -> outputs.poll() >= workload.expectedOutputs());
                    outputs.settle(Duration.ofSeconds(3));
                } finally {
                    enforcer.close();
                }
                assertThat(workload.sent()).hasSize(RECORDS);
                outputs.assertMatches(workload.sent());
                long stale = workload.sent().stream().filter(s -> s.expected().reason() == RejectionReason.STALE_TOKEN).count();
                assertThat(stale).as("the workload holds stale writes").isGreaterThan(RECORDS / 20);
            }
        }
    }
}
