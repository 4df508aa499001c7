package dev.fencedwrites.localstack.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;

/** Writes service configuration files. */
public final class PropertiesFiles {
    private PropertiesFiles() {
    }

    public static Path write(Path file, Map<String, String> entries) {
        Properties props = new Properties();
        props.putAll(entries);
        try (Writer writer = Files.newBufferedWriter(file)) {
            props.store(writer, "written by fenced-writes local-stack");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
        return file;
    }

    /** A log4j2 properties file: console (captured to the service's log file) at {@code level}, Kafka at WARN. */
    public static Path log4j2(Path file, String level) {
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
