package dev.fencedwrites.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.BasicAuthenticator;
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code ./fence inspect --enforcer http://USER:PASSWORD@host:port} against an enforcer whose /fences/{key} asks for HTTP
 * Basic credentials (http.auth.basic.*): sent when given, a clear reason when missing, the password never in a message.
 */
class InspectCredentialsTest {
    private HttpServer enforcer;
    private int port;

    @BeforeEach
    void start() throws Exception {
        enforcer = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        enforcer.createContext("/fences/", exchange -> {
            byte[] body = "{\"key\":\"acct\",\"token\":7,\"seq\":2,\"served_by\":\"e:1\"}".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        }).setAuthenticator(new BasicAuthenticator("fence-enforcer") {
            @Override
            public boolean checkCredentials(String user, String password) {
                return user.equals("ops") && password.equals("p@ss:word+1");
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
    void credentialsInTheUrlAreSentAsBasicAuthentication() throws Exception {
        InspectCommand.EnforcerView view = InspectCommand.askEnforcer("http://ops:p%40ss%3Aword+1@127.0.0.1:" + port, "acct");

        assertThat(view.fence().token()).isEqualTo(7);
        assertThat(view.servedBy()).isEqualTo("e:1");
    }

    @Test
    void anEnforcerThatAsksForCredentialsIsNamedWithoutThem() {
        assertThatThrownBy(() -> InspectCommand.askEnforcer("http://127.0.0.1:" + port, "acct"))
                .hasMessageContaining("asks for credentials").hasMessageContaining("http.auth.basic.user")
                .hasMessageContaining("http://USER:PASSWORD@host:port");
        assertThatThrownBy(() -> InspectCommand.askEnforcer("http://ops:wrong-pw@127.0.0.1:" + port, "acct"))
                .hasMessageContaining("asks for credentials").hasMessageNotContaining("wrong-pw");
        assertThatThrownBy(() -> InspectCommand.askEnforcer("http://ops:s3cret pw@127.0.0.1:" + port, "acct"))
                .hasMessageContaining("is not a URL").hasMessageNotContaining("s3cret");
    }
}
