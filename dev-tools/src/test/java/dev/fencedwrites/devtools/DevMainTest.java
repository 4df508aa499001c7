package dev.fencedwrites.devtools;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.cli.FenceMain;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/**
 * The checkout's {@code fence} ({@link DevMain}): the operator commands and the local stack's, with the shared options each
 * takes; no service is needed.
 */
class DevMainTest {
    private static FenceRun fence(String... args) {
        return FenceRun.of(args);
    }

    @ParameterizedTest
    @ValueSource(strings = {"demo --version", "up --version", "down --version", "chaos --version", "produce --version"})
    void theStacksCommandsAnswerVersionAsTheOperatorsDo(String args) {
        FenceRun run = fence(args.split(" "));

        assertThat(run.exit()).isZero();
        assertThat(run.out().strip()).isEqualTo(fence("--version").out().strip()).startsWith("fenced-writes ");
    }

    // A case whose refusal is missing must not start anything long (an accepted `up` would start a whole stack).
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "demo --ttl 5 | fence demo: Invalid value for option '--ttl': '5' is not a duration like 90s",
            "demo --ttl 500ms | fence demo: --ttl must be at least 1s (etcd grants leases in whole seconds), got 500ms",
            "chaos --ttl 0s | fence chaos: --ttl must be at least 1s (etcd grants leases in whole seconds), got 0s",
            "--bootstrap 127.0.0.1:9092 up | fence up: --bootstrap does not apply to fence up",
            "up --etcd http://127.0.0.1:2379 | fence up: Unknown options: '--etcd'",
            "down --schema-registry http://127.0.0.1:1 | fence down: Unknown options: '--schema-registry'",
            "chaos --command-config x.properties | fence chaos: Unknown options: '--command-config'",
            "chaos --fault-command etcd-pause=x | fence chaos: --fault-command and --postgres go with --stack",
            "chaos --stack --faults enforcer-kill | fence chaos: --faults enforcer-kill with --stack needs --fault-command "
                    + "enforcer-kill=COMMAND",
            "chaos --stack --fault-command worker-pause=x | fence chaos: --fault-command worker-pause: only the service faults",
            "chaos --stack --cluster | fence chaos: --stack runs against a stack that is already there",
            "chaos --faults broker-kill | fence chaos: --faults broker-kill needs --cluster",
            "chaos --faults etcd-member-cut | fence chaos: --faults etcd-member-cut needs --cluster",
            "chaos --stack --faults writer-etcd-cut | fence chaos: --faults writer-etcd-cut with --stack: network faults need a "
                    + "stack chaos starts itself",
            "chaos --processing-guarantee at_least_once --enforcer-setting fence.expiry.enable=true | fence chaos: "
                    + "--enforcer-setting: fence.expiry.enable=true needs processing.guarantee=exactly_once_v2",
            "chaos --enforcer-setting fence.expiry.interval.ms=10 | fence chaos: --enforcer-setting: Invalid value 10 for "
                    + "configuration fence.expiry.interval.ms",
            "chaos --enforcer-setting processing.guarantee=at_least_once | fence chaos: --enforcer-setting "
                    + "processing.guarantee: use --processing-guarantee",
            "chaos --stack --enforcer-setting fence.expiry.enable=true | fence chaos: --stack runs against a stack that is "
                    + "already there: --cluster, --control and --enforcer-setting start their own",
            "up --enforcer-setting etcd.endpoints=http://x:1 | fence up: --enforcer-setting etcd.endpoints: the stack sets "
                    + "this itself",
            "up --enforcer-setting application.id=x | fence up: --enforcer-setting application.id: the stack sets this itself",
            "up --enforcer-setting streams.sasl.mechanism=PLAIN | fence up: --enforcer-setting streams.sasl.mechanism: the stack "
                    + "sets this itself",
            "up --enforcer-setting processing.guarantee=at_least_once | fence up: --enforcer-setting processing.guarantee: "
                    + "./fence up runs exactly_once_v2",
            "up --enforcer-setting fence.expiry.enabled=true | fence up: --enforcer-setting: ",
            "inspect customer-7 --bootstrap 127.0.0.1:9092 | fence inspect: Unknown options: '--bootstrap'"})
    void everyUsageErrorIsOneLineAndExitsTwo(String args, String message) {
        FenceRun run = fence(args.split(" "));

        assertThat(run.exit()).isEqualTo(FenceMain.USAGE_ERROR).isEqualTo(2);
        assertThat(run.err().strip()).doesNotContain("\n").startsWith(message).endsWith("--help)");
    }

    @Test
    void theRootHelpListsEveryCommandThenTheLauncherCommands() {
        FenceRun run = fence("--help");

        assertThat(run.exit()).isZero();
        assertThat(run.out()).contains("Usage: fence ", "--env-file", "--bootstrap", "--etcd", "--schema-registry")
                .containsPattern("(?m)^  demo ").containsPattern("(?m)^  up ").containsPattern("(?m)^  down ")
                .containsPattern("(?m)^  chaos ").containsPattern("(?m)^  enforcer ").containsPattern("(?m)^  rejected ")
                .containsPattern("(?m)^  consume ").containsPattern("(?m)^  produce ").containsPattern("(?m)^  inspect ")
                .containsPattern("(?m)^  verify ").containsPattern("(?m)^  test ").containsPattern("(?m)^  bench ")
                .containsPattern("(?ms)^  help .*^Launcher commands.*^Exit status: 2 ");
    }

    @Test
    void upAndDemoWriteTheirEnvFileWhereEnvFileSaysElseTheirOwnDefault() {
        CommandLine line = DevMain.commandLine();
        line.parseArgs("up");
        assertThat(((FenceMain) line.getCommand()).stack().envFileOr(UpCommand.DEFAULT_ENV_FILE))
                .isEqualTo(Path.of(".fence/stack.env"));

        CommandLine other = DevMain.commandLine();
        other.parseArgs("demo", "--env-file", "mine.env");
        assertThat(((FenceMain) other.getCommand()).stack().envFileOr(DemoCommand.DEFAULT_ENV_FILE))
                .isEqualTo(Path.of("mine.env"));
    }
}
