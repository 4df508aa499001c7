package dev.fencedwrites.docker;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** The compose stack's files, read from the working tree (surefire runs in the docker module's directory). */
final class StackFiles {
    static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    static final ObjectMapper JSON = new ObjectMapper();
    /** The docker/ directory: relative paths in compose.yaml are relative to it. */
    static final Path DIR = Path.of("").toAbsolutePath();
    static final Path ROOT = DIR.getParent();

    private StackFiles() {
    }

    static JsonNode yaml(String relative) {
        return read(YAML, DIR.resolve(relative));
    }

    static JsonNode json(String relative) {
        return read(JSON, DIR.resolve(relative));
    }

    static JsonNode read(ObjectMapper mapper, Path file) {
        try {
            return mapper.readTree(file.toFile());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot parse " + file, e);
        }
    }

    static String text(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static JsonNode compose() {
        return yaml("compose.yaml");
    }

    static List<String> services(JsonNode compose) {
        List<String> names = new ArrayList<>();
        compose.path("services").fieldNames().forEachRemaining(names::add);
        return names;
    }

    /** A service's short-syntax volume entries as {source, target}; named volumes are skipped. */
    static List<String[]> bindMounts(JsonNode service) {
        List<String[]> mounts = new ArrayList<>();
        for (JsonNode volume : service.path("volumes")) {
            String[] parts = volume.asText().split(":");
            if (parts[0].startsWith(".") || parts[0].startsWith("/")) {
                mounts.add(new String[]{parts[0], parts[1]});
            }
        }
        return mounts;
    }

    /** Where a service mounts a host path (relative to docker/), if it does. */
    static Optional<String> mountTarget(JsonNode service, String source) {
        return bindMounts(service).stream().filter(m -> m[0].equals(source)).map(m -> m[1]).findFirst();
    }

    /** Published host ports of all services, e.g. {@code 127.0.0.1:9092:9092} gives 9092. */
    static Map<String, List<Integer>> publishedPorts(JsonNode compose) {
        Map<String, List<Integer>> ports = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = compose.path("services").fields(); it.hasNext();) {
            Map.Entry<String, JsonNode> service = it.next();
            List<Integer> list = new ArrayList<>();
            for (JsonNode port : service.getValue().path("ports")) {
                String[] parts = port.asText().split(":");
                list.add(Integer.parseInt(parts[parts.length - 2]));
            }
            ports.put(service.getKey(), list);
        }
        return ports;
    }
}
