package dev.fencedwrites.devtools;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The env file {@code ./fence up} writes, read the way the README uses it: {@code source FILE} in bash, then the
 * environment a program started from that shell sees. A Java parser would not prove that the shell reads the quoting
 * (the JDBC URL's {@code &}) as meant, so the tests ask bash.
 */
final class SourcedEnvFile {
    /** The variables {@code ./fence up} writes, with and without {@code --cluster}, in the order it writes them. */
    static final List<String> UP_VARIABLES = List.of("KAFKA_BOOTSTRAP", "ETCD_ENDPOINTS", "SCHEMA_REGISTRY_URL", "POSTGRES_URL",
            "CONNECT_URL", "CONNECT_METRICS_URL", "ENFORCER_URL", "CONNECT_URLS", "ENFORCER_URLS",
            "CONNECT_METRICS_URLS", "FENCE_FAULT_ENFORCER_KILL", "FENCE_FAULT_ENFORCER_PAUSE", "FENCE_FAULT_CONNECT_KILL",
            "FENCE_FAULT_ETCD_PAUSE", "FENCE_UP_PID", "FENCE_UP_STARTED");

    private SourcedEnvFile() {
    }

    /** The values of {@code names} in the environment of {@code env} run after {@code source file}; absent names are left out. */
    static Map<String, String> sourced(Path file, Collection<String> names) throws Exception {
        Process bash = new ProcessBuilder("bash", "-c", "source \"$1\" && env", "bash", file.toString())
                .redirectErrorStream(true).start();
        List<String> lines = new String(bash.getInputStream().readAllBytes(), StandardCharsets.UTF_8).lines().toList();
        assertThat(bash.waitFor()).as("bash sourcing %s", file).isZero();
        Map<String, String> vars = new LinkedHashMap<>();
        for (String name : names) {
            lines.stream().filter(l -> l.startsWith(name + "=")).findFirst()
                    .ifPresent(l -> vars.put(name, l.substring(name.length() + 1)));
        }
        return vars;
    }

    /** Whether something accepts a TCP connection at {@code url}'s host and port within a second. */
    static boolean listening(URI url) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(url.getHost(), url.getPort()), 1000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
