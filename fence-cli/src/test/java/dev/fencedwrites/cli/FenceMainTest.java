package dev.fencedwrites.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import picocli.CommandLine;

/**
 * The operator {@code fence} (the distribution's): its subcommands, version, shared options and exit codes; no service is
 * needed. The checkout's {@code fence}, with the local stack's commands, is DevMainTest's (dev-tools).
 */
class FenceMainTest {
    private record Run(int exit, String out, String err) {
    }

    private static Run fence(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine line = FenceMain.commandLine();
        line.setOut(new PrintWriter(out));
        line.setErr(new PrintWriter(err));
        int exit = line.execute(args);
        return new Run(exit, out.toString(), err.toString());
    }

    @ParameterizedTest
    @ValueSource(strings = {"--version", "enforcer --version", "rejected --version", "consume --version",
            "produce --version", "inspect --version", "verify --version"})
    void everyCommandAnswersVersionWithThePomsVersion(String args) throws Exception {
        Document pom = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(Path.of("pom.xml").toFile());
        String pomVersion = pom.getElementsByTagName("parent").item(0).getChildNodes().getLength() > 0
                ? ((Element) pom.getElementsByTagName("parent").item(0)).getElementsByTagName("version").item(0)
                        .getTextContent()
                : null;

        Run run = fence(args.split(" "));

        assertThat(pomVersion).as("fence-cli's pom.xml names its version in <parent>").isNotBlank();
        assertThat(run.exit()).isZero();
        assertThat(run.out().strip()).isEqualTo("fenced-writes " + pomVersion);
    }

    // A case whose refusal is missing must not start anything long (an accepted `up` would start a whole stack): hence inspect.
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "nope | fence: Unmatched argument at index 0: 'nope'",
            "--nope | fence: Unknown option: '--nope'",
            "demo | fence: Unmatched argument at index 0: 'demo'",
            "up --cluster | fence: Unmatched arguments from index 0: 'up', '--cluster'",
            "inspect customer-7 --bootstrap 127.0.0.1:9092 | fence inspect: Unknown options: '--bootstrap'",
            "--bootstrap 127.0.0.1:9092 inspect customer-7 | fence inspect: --bootstrap does not apply to fence inspect",
            "--etcd http://127.0.0.1:2379 rejected | fence rejected: --etcd does not apply to fence rejected",
            "inspect | fence inspect: Missing required parameter: 'KEY'",
            "consume --since | fence consume: Missing required parameter for option '--since'",
            "consume --since 15x | fence consume: Invalid value for option '--since': '15x' is not a duration like 90s, 15m",
            "rejected --since 15x | fence rejected: Invalid value for option '--since': '15x' is not a duration like 90s",
            "produce customer-7 --amount 1 --ttl 10x | fence produce: Invalid value for option '--ttl': '10x' is not a duration",
            "produce customer-7 --amount 1 --wait abc | fence produce: Invalid value for option '--wait': 'abc' is not a",
            "produce customer-7 --amount 1 --count 0 | fence produce: --count must be at least 1, got 0",
            "produce customer-7 --amount 1 --ttl 999ms | fence produce: --ttl must be at least 1s (etcd grants leases in "
                    + "whole seconds), got 999ms",
            "produce customer-7 | fence produce: give --amount MINOR or --value JSON (or --delete)",
            "produce customer-7 --delete --amount 1 | fence produce: --delete takes no --amount or --value",
            "verify --since yesterday | fence verify: --since 'yesterday' is neither a duration like 90s",
            "chaos | fence: Unmatched argument at index 0: 'chaos'"})
    void everyUsageErrorIsOneLineAndExitsTwo(String args, String message) {
        Run run = fence(args.split(" "));

        assertThat(run.exit()).isEqualTo(FenceMain.USAGE_ERROR).isEqualTo(2);
        assertThat(run.err().strip()).doesNotContain("\n").startsWith(message).endsWith("--help)");
    }

    @ParameterizedTest
    @ValueSource(strings = {"inspect customer-7 --env-file %s", "--env-file %s inspect customer-7"})
    void aSharedOptionWorksBeforeOrAfterItsSubcommandAndARuntimeFailureExitsOne(String args) {
        String missing = Path.of("target", "no-such-stack.env").toString();

        Run run = fence(String.format(args, missing).split(" "));

        assertThat(run.exit()).isEqualTo(1);
        assertThat(run.err().strip())
                .isEqualTo("fence inspect: " + missing + " does not exist; start the stack with ./fence up, or pass --enforcer");
    }

    @ParameterizedTest
    @ValueSource(strings = {"rejected", "consume --schema-registry http://127.0.0.1:1",
            "produce customer-7 --amount 1 --etcd http://127.0.0.1:1 --schema-registry "
                    + "http://127.0.0.1:1"})
    void anUnreadableCommandConfigIsOneLineNamingTheFileNotAStackTrace(String command) {
        String missing = Path.of("target", "no-such-client.properties").toString();

        Run run = fence((command + " --bootstrap 127.0.0.1:1 --command-config " + missing).split(" "));

        assertThat(run.exit()).isEqualTo(1);
        assertThat(run.err().strip()).doesNotContain("\n").doesNotContain("\tat ")
                .startsWith("fence " + command.split(" ")[0] + ": cannot read --command-config " + missing);
    }

    @ParameterizedTest
    @ValueSource(strings = {"produce customer-7 --bootstrap b:1 --etcd http://e:2 --schema-registry http://r:3 --env-file x.env",
            "--bootstrap b:1 --etcd http://e:2 --schema-registry http://r:3 --env-file x.env produce customer-7"})
    void theSharedOptionsLandOnTheRootCommandWhereverTheyAreGiven(String args) {
        CommandLine line = FenceMain.commandLine();

        line.parseArgs(args.split(" "));

        StackOptions stack = ((FenceMain) line.getCommand()).stack();
        assertThat(stack.bootstrap).isEqualTo("b:1");
        assertThat(stack.etcd).isEqualTo("http://e:2");
        assertThat(stack.registry).isEqualTo("http://r:3");
        assertThat(stack.envFileOr(null)).isEqualTo(Path.of("x.env"));
    }

    @Test
    void theRootHelpListsTheOperatorCommandsAndNothingItCannotRun() {
        Run run = fence("--help");

        assertThat(run.exit()).isZero();
        assertThat(run.out()).contains("Usage: fence ", "--env-file", "--bootstrap", "--etcd", "--schema-registry")
                .containsPattern("(?m)^  enforcer ").containsPattern("(?m)^  rejected ").containsPattern("(?m)^  consume ")
                .containsPattern("(?m)^  produce ").containsPattern("(?m)^  inspect ").containsPattern("(?m)^  verify ")
                .containsPattern("(?m)^  help ").containsPattern("(?m)^Exit status: 2 ")
                .doesNotContainPattern("(?m)^  (demo|up|down|chaos|test|test-failover|bench|kafka-configs) ")
                .doesNotContain("Launcher commands");
    }

    @Test
    void withoutASubcommandFencePrintsItsUsageAndExitsZero() {
        Run run = fence();

        assertThat(run.exit()).isZero();
        assertThat(run.out()).startsWith("Usage: fence ");
    }
}
