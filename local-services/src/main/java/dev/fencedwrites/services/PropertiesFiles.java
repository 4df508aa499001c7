package dev.fencedwrites.services;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;

/** Writes service configuration files (Java properties). */
final class PropertiesFiles {
    private PropertiesFiles() {
    }

    /** Writes {@code entries} to {@code file} as Java properties; returns {@code file}. */
    static Path write(Path file, Map<String, String> entries) {
        Properties props = new Properties();
        props.putAll(entries);
        try (Writer writer = Files.newBufferedWriter(file)) {
            props.store(writer, "written by fenced-writes local-services");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
        return file;
    }
}
