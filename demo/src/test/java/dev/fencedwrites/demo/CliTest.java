package dev.fencedwrites.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import picocli.CommandLine;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Wrong options and arguments: one line naming the problem, exit status 1, no usage dump; no service is needed to get there. */
class CliTest {
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "produce | --amount 5 | Missing required parameter: 'KEY'",
        "produce | customer-7 --amount abc | Invalid value for option '--amount': 'abc' is not a long",
        "inspect | customer-7 --nope | Unknown option: '--nope'",
        "rejected | --since | Missing required parameter for option '--since'",
        "consume | extra | Unmatched argument at index 0: 'extra'"})
    void aParameterErrorIsOneLineAndExitOne(String command, String args, String message) {
        Object target = switch (command) {
            case "produce" -> new ProduceCommand();
            case "inspect" -> new InspectCommand();
            case "rejected" -> new RejectedCommand();
            default -> new ConsumeCommand();
        };
        StringWriter err = new StringWriter();
        CommandLine line = Cli.commandLine("fence " + command, target);
        line.setErr(new PrintWriter(err));

        int exit = line.execute(args.split(" "));

        assertThat(exit).isEqualTo(1);
        assertThat(err.toString().strip()).doesNotContain("\n")
                .startsWith("fence " + command + ": " + message).endsWith("(see ./fence " + command + " --help)");
    }
}
