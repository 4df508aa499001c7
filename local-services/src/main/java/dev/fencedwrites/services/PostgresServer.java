package dev.fencedwrites.services;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/** Real PostgreSQL from Maven Central (zonky's embedded binaries), listening on 127.0.0.1 only. */
public final class PostgresServer implements AutoCloseable {
    /** The superuser; the server trusts local connections, so the password is not checked. */
    public static final String USER = "postgres";
    /** The superuser's password (not checked, see {@link #USER}). */
    public static final String PASSWORD = "postgres";

    private final EmbeddedPostgres postgres;

    private PostgresServer(EmbeddedPostgres postgres) {
        this.postgres = postgres;
    }

    /**
     * Starts a fresh cluster (its data directory {@code dir/data} is wiped first) on a free port and waits up to
     * 60 s for it to accept connections.
     *
     * @throws IOException if the binaries cannot be unpacked or the server does not start
     */
    public static PostgresServer start(Path dir) throws IOException {
        Files.createDirectories(dir);
        EmbeddedPostgres postgres = EmbeddedPostgres.builder()
                .setPort(FreePorts.pick())
                .setDataDirectory(dir.resolve("data"))
                .setCleanDataDirectory(true)
                .setServerConfig("listen_addresses", "127.0.0.1")
                .setPGStartupWait(Duration.ofSeconds(60))
                .start();
        return new PostgresServer(postgres);
    }

    /** {@code 127.0.0.1:PORT}, where the server listens. */
    public String address() {
        return "127.0.0.1:" + postgres.getPort();
    }

    /** JDBC URL with user and password. */
    public String jdbcUrl() {
        return "jdbc:postgresql://127.0.0.1:" + postgres.getPort() + "/postgres?user=" + USER + "&password=" + PASSWORD;
    }

    /** Stops the server. */
    @Override
    public void close() throws IOException {
        postgres.close();
    }
}
