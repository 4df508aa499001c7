package dev.fencedwrites.services;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The log4j2 configuration handed to child JVMs (broker, enforcer, Connect worker, workers) with {@code
 * -Dlog4j2.configurationFile}.
 */
public final class Log4j2Config {
    private Log4j2Config() {
    }

    /**
     * Writes a log4j2 properties file: console (captured to the service's log file) at {@code level}, Kafka at WARN but
     * Kafka Streams' task assignments ({@code TaskManager}: active and standby tasks at each rebalance) at INFO,
     * {@code dev.fencedwrites} at INFO.
     *
     * @param level a log4j2 level name, e.g. {@code INFO} or {@code WARN}
     * @return {@code file}
     * @throws UncheckedIOException if the file cannot be written
     */
    public static Path write(Path file, String level) {
        String text = String.join("\n",
                "status = error",
                "appender.console.type = Console",
                "appender.console.name = console",
                "appender.console.layout.type = PatternLayout",
                "appender.console.layout.pattern = %d{HH:mm:ss.SSS} %-5p [%t] %c{1.}: %m%n",
                "rootLogger.level = " + level,
                "rootLogger.appenderRef.console.ref = console",
                "logger.kafka.name = org.apache.kafka",
                "logger.kafka.level = WARN",
                "logger.kafkaserver.name = kafka",
                "logger.kafkaserver.level = WARN",
                // One block per rebalance: the tasks, active and standby, a Kafka Streams instance was given.
                "logger.streamstasks.name = org.apache.kafka.streams.processor.internals.TaskManager",
                "logger.streamstasks.level = INFO",
                "logger.fenced.name = dev.fencedwrites",
                "logger.fenced.level = INFO",
                "");
        try {
            Files.writeString(file, text);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
        return file;
    }
}
