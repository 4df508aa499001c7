package dev.fencedwrites.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.fencedwrites.contract.Fence;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code ./fence inspect} against an enforcer with fence expiry on: its answer names the floor of the key's partition, and
 * a row whose token is below it reads as an expired fence, not as a write around the enforcer.
 */
class InspectFloorTest {
    private HttpServer enforcer;
    private int port;

    @BeforeEach
    void start() throws Exception {
        enforcer = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        enforcer.createContext("/fences/", exchange -> {
            boolean expired = exchange.getRequestURI().getPath().endsWith("/expired");
            String key = expired ? "expired" : "live";
            byte[] body = (expired
                    ? "{\"key\":\"" + key + "\",\"error\":\"no fence for this key: never written, or expired\",\"floor\":41,"
                            + "\"floor_partition\":0,\"served_by\":\"e:1\"}"
                    : "{\"key\":\"" + key + "\",\"token\":50,\"seq\":3,\"floor\":41,\"floor_partition\":0,\"served_by\":\"e:1\"}")
                    .getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(expired ? 404 : 200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        enforcer.start();
        port = enforcer.getAddress().getPort();
    }

    @AfterEach
    void stop() {
        enforcer.stop(0);
    }

    @Test
    void anExpiredKeyReadsAsExpiredAtTheFloor() throws Exception {
        InspectCommand.EnforcerView view = InspectCommand.askEnforcer("http://127.0.0.1:" + port, "expired");

        assertThat(view.fence()).isNull();
        assertThat(view.floor()).isEqualTo(41L);
        assertThat(InspectCommand.verdict(view.fence(), new Fence(40, 7), view.floor())).startsWith("fence expired")
                .contains("floor 41");
        assertThat(InspectCommand.verdict(view.fence(), null, view.floor())).startsWith("no fence and no row")
                .contains("expired below the enforcer's floor 41");
        assertThat(InspectCommand.verdict(view.fence(), new Fence(41, 1), view.floor()))
                .as("a row at the floor without a fence is not explained by expiry").startsWith("the row has a fence");
    }

    @Test
    void aKeyWithAFenceCarriesTheFloorToo() throws Exception {
        InspectCommand.EnforcerView view = InspectCommand.askEnforcer("http://127.0.0.1:" + port, "live");

        assertThat(view.fence()).isEqualTo(new Fence(50, 3));
        assertThat(view.floor()).isEqualTo(41L);
        assertThat(InspectCommand.verdict(view.fence(), new Fence(50, 3), view.floor())).startsWith("in step");
    }
}
