package dev.fencedwrites.services;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.opentest4j.TestAbortedException;

/**
 * A link cut with real iptables rules between a real child process (its own group id, by setpriv) and a listener in this
 * JVM: its connections stop, this JVM's own do not, and healing brings them back.
 */
@Tag("process")
class NetworkLinksTest {
    @TempDir
    Path dir;
    private ServerSocket server;
    private final AtomicInteger accepted = new AtomicInteger();
    private NetworkLinks links;
    private ChildProcess child;

    @BeforeEach
    void listen() throws IOException {
        NetworkLinks.unavailable().ifPresent(reason -> {
            if (Boolean.getBoolean("fence.tools.required")) {
                throw new IllegalStateException(reason);
            }
            throw new TestAbortedException("skipped: " + reason);
        });
        server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(() -> {
            try {
                while (true) {
                    server.accept().close();
                    accepted.incrementAndGet();
                }
            } catch (IOException closed) {
                // the test is over
            }
        });
        acceptor.setDaemon(true);
        acceptor.start();
        ChildProcess.ownGroupEach();
        links = NetworkLinks.open();
    }

    @AfterEach
    void stop() throws IOException {
        if (child != null) {
            child.close();
        }
        if (links != null) {
            links.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void aCutStopsOneProcesssConnectionsUntilHealed() throws Exception {
        int port = server.getLocalPort();
        child = ChildProcess.start("dialer",
                List.of("bash", "-c", "while true; do if timeout 1 bash -c 'echo > /dev/tcp/127.0.0.1/"
                        + port + "'; then echo ok; else echo cut; fi; sleep 0.1; done"),
                dir, dir.resolve("dialer.log"), Map.of());
        int ours = NetworkLinks.groupOf(ProcessHandle.current().pid());
        // setpriv changes its group, then runs the command: wait for the change
        int group = await().atMost(Duration.ofSeconds(20)).until(() -> NetworkLinks.groupOf(child.pid()), g -> g != ours);
        assertThat(NetworkLinks.listeningPorts(ProcessHandle.current().pid())).contains(port);
        await().atMost(Duration.ofSeconds(20)).until(() -> accepted.get() >= 3);

        links.cut("dialer|server", group, Set.of(port));
        await().atMost(Duration.ofSeconds(20)).until(() -> Files.readString(child.log()).contains("cut"));
        int duringCut = accepted.get();
        Thread.sleep(2_000);
        assertThat(accepted.get()).as("no connection of the cut process arrives").isEqualTo(duringCut);
        try (Socket own = new Socket(InetAddress.getLoopbackAddress(), port)) {
            assertThat(own.isConnected()).as("another process's connection still does").isTrue();
        }
        assertThat(links.active()).containsExactly("dialer|server");

        links.heal("dialer|server");
        int healed = accepted.get();
        await().atMost(Duration.ofSeconds(20)).until(() -> accepted.get() >= healed + 3);
        assertThat(links.active()).isEmpty();
    }

    @Test
    void connectionPortsAreTheLocalPortsOfAProcesssConnectionsToAPort() throws Exception {
        try (ServerSocket other = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
                Socket client = new Socket(InetAddress.getLoopbackAddress(), other.getLocalPort());
                Socket accepted = other.accept()) {
            long ours = ProcessHandle.current().pid();
            assertThat(NetworkLinks.connectionPorts(ours, other.getLocalPort())).as("to the port it dialled")
                    .containsExactly(client.getLocalPort());
            assertThat(NetworkLinks.connectionPorts(ours, server.getLocalPort())).as("to another port")
                    .doesNotContain(client.getLocalPort());
            assertThat(accepted.getPort()).isEqualTo(client.getLocalPort());

            NetworkLinks.Sockets once = NetworkLinks.sockets();
            assertThat(once.listening(ours)).as("both servers, from one look").contains(other.getLocalPort(),
                    server.getLocalPort());
            assertThat(once.connectionPorts(ours, List.of(server.getLocalPort(), other.getLocalPort())))
                    .as("to either port").contains(client.getLocalPort())
                    .doesNotContain(other.getLocalPort(), server.getLocalPort());
            assertThat(once.connectionPorts(ours, List.of(server.getLocalPort()))).doesNotContain(client.getLocalPort());
        }
    }
}
