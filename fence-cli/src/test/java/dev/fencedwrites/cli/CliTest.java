package dev.fencedwrites.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/**
 * Wrong options and arguments: one line naming the problem, exit status 2 (one usage-error code), no usage dump; no
 * service is needed.
 */
class CliTest {
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "produce | --amount 5 | Missing required parameter: 'KEY'",
            "produce | customer-7 --amount abc | Invalid value for option '--amount': 'abc' is not a long",
            "inspect | customer-7 --nope | Unknown option: '--nope'",
            "rejected | --since | Missing required parameter for option '--since'",
            "consume | extra | Unmatched argument at index 1: 'extra'"})
    void aParameterErrorIsOneLineAndExitTwo(String command, String args, String message) {
        StringWriter err = new StringWriter();
        CommandLine line = FenceMain.commandLine();
        line.setErr(new PrintWriter(err));

        int exit = line.execute((command + " " + args).split(" "));

        assertThat(exit).isEqualTo(2);
        assertThat(err.toString().strip()).doesNotContain("\n")
                .startsWith("fence " + command + ": " + message).endsWith("(see ./fence " + command + " --help)");
    }
}
