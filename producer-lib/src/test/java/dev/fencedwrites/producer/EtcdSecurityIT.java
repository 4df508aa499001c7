package dev.fencedwrites.producer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.enforcer.FenceEnforcerConfig;
import dev.fencedwrites.enforcer.TokenVerifier;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.services.EtcdNode;
import dev.fencedwrites.services.Service;
import dev.fencedwrites.services.Tools;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.auth.Permission;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Needs real services: etcd's authentication and TLS handshakes are etcd's and gRPC's behaviour.
 * Certificates are made per run with openssl ({@code ./fence test} installs it when missing).
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class EtcdSecurityIT {
    private static final Duration TTL = Duration.ofSeconds(5);
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    @TempDir
    Path dir;

    @Test
    void authenticatesWithUserAndPasswordAndNamesTheSettingWhenRefused() throws Exception {
        try (Service etcd = EtcdNode.start(dir.resolve("etcd"))) {
            try (Client admin = Client.builder().endpoints(etcd.address()).build()) {
                var auth = admin.getAuthClient();
                auth.userAdd(bytes("root"), bytes("root-secret")).get(10, TimeUnit.SECONDS);
                auth.userGrantRole(bytes("root"), bytes("root")).get(10, TimeUnit.SECONDS);
                auth.authEnable().get(10, TimeUnit.SECONDS);
            }

            try (FencingLeaseClient client = client(
                    EtcdSettings.builder(List.of(etcd.address())).credentials("root", "root-secret"));
                    FencingLease lease = client.acquire("with-auth", TTL, TIMEOUT)) {
                assertThat(lease.token()).isPositive();
                assertThat(lease.isValid()).isTrue();
                // The enforcer verifies the token as a user that may only read the lock prefix.
                try (Client admin = Client.builder().endpoints(etcd.address()).user(bytes("root")).password(bytes("root-secret"))
                        .build()) {
                    var auth = admin.getAuthClient();
                    auth.roleAdd(bytes("lock-reader")).get(10, TimeUnit.SECONDS);
                    auth.roleGrantPermission(bytes("lock-reader"), bytes(FencingLeaseClient.DEFAULT_LOCK_PREFIX),
                            bytes(FencingLeaseClient.DEFAULT_LOCK_PREFIX.substring(0,
                                    FencingLeaseClient.DEFAULT_LOCK_PREFIX.length() - 1) + "0"),
                            Permission.Type.READ).get(10, TimeUnit.SECONDS);
                    auth.userAdd(bytes("enforcer"), bytes("enforcer-secret")).get(10, TimeUnit.SECONDS);
                    auth.userGrantRole(bytes("enforcer"), bytes("lock-reader")).get(10, TimeUnit.SECONDS);
                }
                assertVerifies(EtcdSettings.builder(List.of(etcd.address())).credentials("enforcer", "enforcer-secret"), lease);
            }
            try (FencingLeaseClient client = client(EtcdSettings.builder(List.of(etcd.address())).credentials("root", "wrong"))) {
                assertThatThrownBy(() -> client.acquire("wrong-password", TTL, TIMEOUT))
                        .isInstanceOf(LeaseAcquisitionException.class)
                        .hasMessageContaining("etcd refused the credentials of user 'root' (etcd.user, etcd.password)");
            }
            try (FencingLeaseClient client = client(EtcdSettings.builder(List.of(etcd.address())))) {
                assertThatThrownBy(() -> client.acquire("no-credentials", TTL, TIMEOUT))
                        .isInstanceOf(LeaseAcquisitionException.class)
                        .hasMessageContaining("etcd requires authentication; set etcd.user and etcd.password");
            }
        }
    }

    @Test
    void talksTlsWithTheConfiguredCaAndNamesTheSettingOnAWrongOne() throws Exception {
        Certificates certs = Certificates.make(dir.resolve("certs"));
        try (Service etcd = EtcdNode.startTls(dir.resolve("etcd"), certs.serverCert, certs.serverKey, null)) {
            assertThat(etcd.address()).startsWith("https://");

            try (FencingLeaseClient client = client(EtcdSettings.builder(List.of(etcd.address())).tlsCa(certs.caCert));
                    FencingLease lease = client.acquire("over-tls", TTL, TIMEOUT)) {
                assertThat(lease.token()).isPositive();
                assertVerifies(EtcdSettings.builder(List.of(etcd.address())).tlsCa(certs.caCert), lease);
            }
            try (FencingLeaseClient client = client(EtcdSettings.builder(List.of(etcd.address())).tlsCa(certs.otherCaCert))) {
                assertThatThrownBy(() -> client.acquire("wrong-ca", TTL, TIMEOUT)).isInstanceOf(LeaseAcquisitionException.class)
                        .hasMessageContaining("TLS with etcd failed; check etcd.tls.ca.file");
            }
        }
    }

    @Test
    void presentsAClientCertificateWhenEtcdRequiresOne() throws Exception {
        Certificates certs = Certificates.make(dir.resolve("certs"));
        try (Service etcd = EtcdNode.startTls(dir.resolve("etcd"), certs.serverCert, certs.serverKey, certs.caCert)) {
            try (FencingLeaseClient client = client(EtcdSettings.builder(List.of(etcd.address())).tlsCa(certs.caCert)
                    .tlsClientCertificate(certs.clientCert, certs.clientKey));
                    FencingLease lease = client.acquire("mutual-tls", TTL, TIMEOUT)) {
                assertThat(lease.token()).isPositive();
                assertVerifies(EtcdSettings.builder(List.of(etcd.address())).tlsCa(certs.caCert)
                        .tlsClientCertificate(certs.clientCert, certs.clientKey), lease);
            }
            try (FencingLeaseClient client = client(EtcdSettings.builder(List.of(etcd.address())).tlsCa(certs.caCert))) {
                assertThatThrownBy(() -> client.acquire("no-client-certificate", TTL, TIMEOUT))
                        .isInstanceOf(LeaseAcquisitionException.class)
                        .hasMessageContaining("TLS with etcd failed");
            }
        }
    }

    /**
     * The enforcer's token verifier, reaching etcd with {@code settings} (the same names
     * and client code as producer-lib; its index's snapshot and watch too), confirms the lease's token, and refuses it
     * for another lease.
     */
    private static void assertVerifies(EtcdSettings.Builder settings, FencingLease lease) {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        FenceEnforcerConfig config = new FenceEnforcerConfig(Map.of(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1",
                StreamsConfig.APPLICATION_ID_CONFIG, "etcd-security",
                FenceEnforcerConfig.TOKEN_VERIFICATION_COMPACTED_POLICY, "reject"));
        try (TokenVerifier verifier = TokenVerifier.etcd(settings.build(), config, meters)) {
            byte[] key = lease.resource().getBytes(StandardCharsets.UTF_8);
            assertThat(verifier.verify(key, lease.token(), lease.leaseId()).verified()).isTrue();
            assertThat(verifier.verify(key, lease.token(), lease.leaseId() + 1).rejection())
                    .isEqualTo(RejectionReason.LOCK_NOT_HELD);
            // Asked again (a record decided again after a replay or an aborted transaction): answered from the cache, no etcd
            // read.
            for (int i = 0; i < 3; i++) {
                assertThat(verifier.verify(key, lease.token(), lease.leaseId()).verified()).isTrue();
            }
            // Each question asked once: read from etcd, or answered by the index of lock holders, which starts at etcd's
            // revision when the verifier does (here often the token itself), once its snapshot is in.
            assertThat(meters.get("fence.enforcer.token.verification.etcd.reads").counter().count()
                    + meters.get("fence.enforcer.token.verification.index.lookups").tag("result", "answered").counter().count())
                    .isEqualTo(2.0);
            assertThat(meters.get("fence.enforcer.token.verification.cache.hits").counter().count()).isEqualTo(3.0);
        }
    }

    private static FencingLeaseClient client(EtcdSettings.Builder settings) {
        return new FencingLeaseClient(settings.build(), new SimpleMeterRegistry());
    }

    private static ByteSequence bytes(String text) {
        return ByteSequence.from(text, StandardCharsets.UTF_8);
    }

    /**
     * A test CA, a server certificate for 127.0.0.1 and a client certificate signed by it, and an unrelated CA; PEM, keys in
     * PKCS#8.
     */
    private record Certificates(Path caCert, Path serverCert, Path serverKey, Path clientCert, Path clientKey, Path otherCaCert) {
        static Certificates make(Path dir) throws Exception {
            Files.createDirectories(dir);
            openssl(dir, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=fenced-writes-test-ca",
                    "-keyout", "ca.key", "-out", "ca.crt");
            openssl(dir, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=some-other-ca",
                    "-keyout", "other-ca.key", "-out", "other-ca.crt");
            signed(dir, "server", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
            signed(dir, "client", "extendedKeyUsage=clientAuth\n");
            return new Certificates(dir.resolve("ca.crt"), dir.resolve("server.crt"), dir.resolve("server.key"),
                    dir.resolve("client.crt"),
                    dir.resolve("client.key"), dir.resolve("other-ca.crt"));
        }

        private static void signed(Path dir, String name, String extensions) throws Exception {
            Files.writeString(dir.resolve(name + ".ext"), extensions);
            openssl(dir, "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + name, "-keyout", name + ".key", "-out",
                    name + ".csr");
            openssl(dir, "x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days",
                    "2",
                    "-extfile", name + ".ext", "-out", name + ".crt");
        }

        private static void openssl(Path dir, String... args) throws IOException, InterruptedException {
            List<String> command = new ArrayList<>(List.of(Tools.require("openssl", "apt-get install -y openssl").toString()));
            command.addAll(List.of(args));
            Process process = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
                throw new IllegalStateException("openssl " + String.join(" ", args) + " failed:\n" + output);
            }
        }
    }
}
