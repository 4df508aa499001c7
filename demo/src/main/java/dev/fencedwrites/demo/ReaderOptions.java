package dev.fencedwrites.demo;

import java.nio.file.Path;
import picocli.CommandLine.Option;

/** The options the topic-reading operator commands share ({@code ./fence rejected}, {@code ./fence consume}). */
final class ReaderOptions {
    @Option(names = "--bootstrap", paramLabel = "HOST:PORT", description = "Kafka bootstrap servers (default: KAFKA_BOOTSTRAP from the environment or the env file).")
    String bootstrap;
    @Option(names = "--since", paramLabel = "DURATION", description = "Only records newer than this, e.g. 90s, 15m, 2h, 1d (default: from the beginning).")
    String since;
    @Option(names = {"-f", "--follow"}, description = "Keep reading new records until Ctrl-C.")
    boolean follow;
    @Option(names = "--env-file", paramLabel = "FILE",
            description = "Settings of a running stack (default: .fence/stack.env from ./fence up, else .fence/demo.env from ./fence demo).")
    Path envFile;
}
