package dev.fencedwrites.etcd;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import java.nio.charset.StandardCharsets;
import javax.net.ssl.SSLException;

/** Builds jetcd clients from {@link EtcdSettings}. */
public final class EtcdClients {
    private EtcdClients() {
    }

    /**
     * A client for {@code settings}: endpoints, credentials, TLS and connect timeout. It is built
     * with {@code waitForReady(false)}, so with no reachable endpoint a call fails
     * ({@code UNAVAILABLE}) instead of waiting for one; give every call its own timeout.
     *
     * @throws IllegalArgumentException if a TLS file cannot be read as PEM
     */
    public static Client connect(EtcdSettings settings) {
        // No keep-alive pings on an idle connection: etcd's gRPC server refuses them without an open stream
        // (PermitWithoutStream false) and answers GOAWAY too_many_pings (gRFC A8, client-side keepalive); a verifier
        // idle between raises got one every few minutes. Open streams (lease keep-alives, watches) are still pinged.
        ClientBuilder builder = Client.builder().endpoints(settings.endpoints().toArray(String[]::new))
                .connectTimeout(settings.connectTimeout()).waitForReady(false).keepaliveWithoutCalls(false);
        if (settings.user() != null) {
            builder.user(ByteSequence.from(settings.user(), StandardCharsets.UTF_8))
                    .password(ByteSequence.from(settings.password(), StandardCharsets.UTF_8));
        }
        if (settings.tls()) {
            try {
                builder.sslContext(tls -> {
                    if (settings.tlsCaFile() != null) {
                        tls.trustManager(settings.tlsCaFile().toFile());
                    }
                    if (settings.tlsCertFile() != null) {
                        tls.keyManager(settings.tlsCertFile().toFile(), settings.tlsKeyFile().toFile());
                    }
                });
            } catch (SSLException | IllegalArgumentException e) {
                throw new IllegalArgumentException("cannot use the TLS files of " + settings + ": " + e.getMessage(), e);
            }
        }
        return builder.build();
    }
}
