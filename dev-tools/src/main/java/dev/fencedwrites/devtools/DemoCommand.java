package dev.fencedwrites.devtools;

import dev.fencedwrites.cli.BuildVersion;
import dev.fencedwrites.cli.DurationConverter;
import dev.fencedwrites.cli.EnvFile;
import dev.fencedwrites.cli.FenceMain;
import dev.fencedwrites.demo.BillingScenario;
import dev.fencedwrites.demo.ScenarioResult;
import dev.fencedwrites.demo.Timeline;
import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.localstack.LocalStack;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code fence demo}: a paused worker's stale write, fenced, on real services (the scenario is the demo module's {@link
 * BillingScenario}).
 */
@Command(name = "demo", header = "Run the billing scenario on a fresh local stack: a paused worker's stale write, fenced.",
        usageHelpWidth = 130, mixinStandardHelpOptions = true, versionProvider = BuildVersion.class, description = {
                "Runs the billing scenario on a fresh local stack: worker A takes the lease for customer-42 and is frozen with "
                        + "a real SIGSTOP past its TTL; worker B takes over with a higher fencing token and writes; A resumes "
                        + "and writes its stale summary.",
                "Exits 0 only if A's write was rejected (STALE_TOKEN) and B's data is in the row; 1 otherwise, naming what went "
                        + "wrong. "
                        + "Service logs stay in the data directory."},
        footer = {"", "Examples:",
                "  ./fence demo                       the scenario with a 5 s lease",
                "  ./fence demo --ttl 10s             a longer lease: B waits longer for A's to expire",
                "  ./fence rejected --follow          in another terminal: the stale write as the enforcer rejects it",
                "",
                "While it runs it writes .fence/demo.env (KAFKA_BOOTSTRAP ...), which ./fence rejected, consume, "
                        + "produce and inspect read;",
                "the file is removed when the demo ends."})
public final class DemoCommand implements Callable<Integer> {
    /** Where the demo writes its stack's settings while it runs, unless {@code --env-file} says otherwise. */
    static final Path DEFAULT_ENV_FILE = Path.of(".fence/demo.env");

    @Option(names = "--ttl", defaultValue = "5s", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "The workers' lease TTL, at least 1s; a fraction of a second is rounded up, as etcd grants "
                    + "whole seconds (default: ${DEFAULT-VALUE}).")
    Duration ttl;

    @Spec
    CommandSpec spec;

    @Option(names = "--dir", paramLabel = "DIR", description = "Data and log directory (default: a new temporary directory).")
    Path dir;

    @ParentCommand
    FenceMain fence;

    @Override
    public Integer call() throws Exception {
        long ttlSeconds;
        try {
            ttlSeconds = (DurationConverter.leaseTtl("--ttl", ttl).toMillis() + 999) / 1000;
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage(), e);
        }
        Path envFile = fence.stack().envFileOr(DEFAULT_ENV_FILE);
        Path stackDir = dir != null ? dir : Files.createTempDirectory("fenced-writes-demo-");
        Timeline timeline = new Timeline(System.out);
        timeline.line("fenced-writes demo: can a paused worker overwrite good data?");
        timeline.line("Starting the local stack (logs in " + stackDir + ") ...");
        ScenarioResult result;
        try (LocalStack stack = LocalStack.builder(stackDir).connectors(BillingConnectors.set(true))
                .progress(line -> timeline.line("  " + line)).start()) {
            // The stack's settings for fence rejected, consume, produce and inspect (read when ./fence up is not running).
            EnvFile.write(envFile, EnvFile.lines(stack.env()));
            timeline.line("");
            result = new BillingScenario(stack, timeline, ttlSeconds).run();
            timeline.line("");
            timeline.line("Result");
            timeline.line("  " + BillingConnectors.TABLE + " row " + BillingScenario.CUSTOMER + ":  " + result.fencedRow());
            timeline.line("  rejected record for " + BillingScenario.WORKER_A + ":  reason=" + result.rejectedReason() + " stage="
                    + result.rejectedStage()
                    + " highest=" + result.rejectedHighest() + " token=" + result.tokenA());
            timeline.line("  enforcer counter:  fence_enforcer_records_fenced_total{reason=\"STALE_TOKEN\"} = "
                    + (long) result.staleCounter());
            timeline.line("  without fencing (" + BillingConnectors.UNFENCED_TABLE + ": enforcer bypassed, guard off):  "
                    + result.unfencedRow());
            if (result.unfencedRow() != null && BillingScenario.WORKER_A.equals(result.unfencedRow().computedBy())) {
                timeline.line("    -> there the stale write won: B's correct summary was overwritten by A's.");
            }
        } catch (Exception e) {
            System.err.println("fence demo: FAILED: " + e.getMessage());
            System.err.println("  logs: " + stackDir);
            return 1;
        } finally {
            EnvFile.deleteQuietly(envFile);
        }
        timeline.line("");
        if (result.fenced()) {
            timeline.line("OK: " + BillingScenario.WORKER_A + "'s stale write was rejected with STALE_TOKEN and "
                    + BillingScenario.WORKER_B + "'s data is in the row.");
            return 0;
        }
        System.err
                .println("fence demo: FAILED: expected A's write rejected with STALE_TOKEN and B's data (token " + result.tokenB()
                        + ") in the row; see the result above and the logs in " + stackDir);
        return 1;
    }
}
