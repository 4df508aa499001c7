package dev.fencedwrites.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.KafkaException;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/** The options the topic-reading operator commands share ({@code ./fence rejected}, {@code ./fence consume}). */
final class ReaderOptions {
    @Option(names = "--since", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "Only records newer than this, e.g. 90s, 15m, 2h, 1d (default: from the beginning).")
    Duration since;
    @Option(names = {"-f", "--follow"}, description = "Keep reading new records until Ctrl-C.")
    boolean follow;

    /** Makes the line printer for each record, once the settings are known; may read more settings. */
    @FunctionalInterface
    interface Printer {
        Function<ConsumerRecord<String, byte[]>, String> open(PrintWriter err) throws IOException;
    }

    /**
     * The operator commands' common run: reads {@code topic} with these options and the shared {@code stack} options
     * ({@code --bootstrap}, {@code --env-file}) and prints one line per record.
     *
     * @return 0 when done (or stopped with Ctrl-C); 1 after printing {@code "<command>: <reason>"} on one line
     */
    int print(String command, String topic, StackOptions stack, CommandSpec spec, Printer printer) {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        KafkaRefusal.quietClientLogs();
        try {
            while (true) {
                String servers = stack.bootstrap(follow, err);
                Function<ConsumerRecord<String, byte[]>, String> line = printer.open(err);
                StackSettings.Source source = follow && stack.bootstrap == null && !stack.hasEnvFile()
                        ? StackSettings.Source.current()
                        : null;
                if (follow) { // a quiet topic would otherwise print nothing at all
                    err.println("[fence] following " + topic + " at " + servers
                            + (since == null
                                    ? " from its beginning"
                                    : " from "
                                            + since + " back")
                            + "; new records print as they come (Ctrl-C to stop)");
                    err.flush();
                }
                boolean stackGone = TopicReader.read(servers, stack.kafkaClient(), topic, since, follow,
                        record -> out.println(line.apply(record)),
                        out::flush,
                        () -> source == null || source.unchanged());
                if (!stackGone) {
                    return 0;
                }
                // ./fence demo (or up) ended and removed its env file: follow the next stack from its beginning.
                err.println("[fence] the stack stopped (" + source.file() + " is gone or changed); waiting for the next one ...");
                err.flush();
            }
        } catch (IllegalArgumentException | IllegalStateException | KafkaException | IOException e) {
            String refusal = KafkaRefusal.describe(e, stack.kafkaClientForErrors());
            err.println(command + ": " + (refusal != null ? refusal : e.getMessage()));
            err.flush();
            return 1;
        }
    }
}
