package dev.fencedwrites.services;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** One etcd member (the {@code etcd} binary from Debian's etcd-server) on loopback. */
public final class EtcdNode {
    /** What to run when etcd is missing. */
    public static final String INSTALL_HINT = "apt-get install -y etcd-server etcd-client";

    private EtcdNode() {
    }

    /**
     * Locates the etcd binary: {@code ETCD_BINARY}, then PATH, then /usr/bin/etcd.
     *
     * @throws MissingToolException when there is none
     */
    public static Path binary() {
        String configured = System.getenv("ETCD_BINARY");
        if (configured != null && !configured.isBlank()) {
            return Path.of(configured);
        }
        Path debian = Path.of("/usr/bin/etcd");
        return Tools.onPath("etcd").or(() -> Files.isExecutable(debian) ? Optional.of(debian) : Optional.empty())
                .orElseThrow(() -> new MissingToolException("etcd", INSTALL_HINT + " (or set ETCD_BINARY)"));
    }

    /** Starts a single-member cluster and waits until {@code /health} reports healthy; the address is the client URL. */
    public static Service start(Path dir) throws Exception {
        return start(dir, "http", List.of(), client -> Http.get(client + "/health").body().contains("\"true\""));
    }

    /**
     * Starts a single member that serves clients over TLS only, with the PEM {@code cert} and
     * {@code key}; with a {@code clientCa}, it also requires client certificates signed by that CA
     * ({@code --client-cert-auth}). Ready when its log says it serves clients; the address is the
     * {@code https://} client URL.
     */
    public static Service startTls(Path dir, Path cert, Path key, Path clientCa) throws Exception {
        List<String> tls = new ArrayList<>(List.of("--cert-file", cert.toString(), "--key-file", key.toString()));
        if (clientCa != null) {
            tls.addAll(List.of("--client-cert-auth", "--trusted-ca-file", clientCa.toString()));
        }
        Path log = dir.resolve("etcd.log");
        return start(dir, "https", tls,
                client -> Files.exists(log) && Files.readString(log).contains("serving client requests on"));
    }

    private static Service start(Path dir, String scheme, List<String> extraArgs, Check ready) throws Exception {
        Files.createDirectories(dir);
        Path etcd = binary();
        int clientPort = FreePorts.pick();
        int peerPort = FreePorts.pick();
        String client = scheme + "://127.0.0.1:" + clientPort;
        String peer = "http://127.0.0.1:" + peerPort;
        List<String> command = new ArrayList<>(List.of(etcd.toString(),
                "--name", "local", "--data-dir", dir.resolve("data").toString(),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", "local=" + peer, "--initial-cluster-state", "new"));
        command.addAll(extraArgs);
        ChildProcess process = ChildProcess.start("etcd", command, dir, dir.resolve("etcd.log"), Map.of());
        return process.awaitReady(client, Duration.ofSeconds(30), () -> ready.test(client));
    }

    @FunctionalInterface
    private interface Check {
        boolean test(String clientUrl) throws Exception;
    }
}
