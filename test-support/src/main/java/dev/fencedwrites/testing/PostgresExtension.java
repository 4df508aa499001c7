package dev.fencedwrites.testing;

import dev.fencedwrites.services.PostgresServer;
import java.nio.file.Path;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A real PostgreSQL on loopback ({@link PostgresServer}, zonky's embedded binaries) as a JUnit 5 extension; see
 * {@link ServiceExtension} for its lifecycle. Tests share its {@code postgres} database, so each uses its own tables.
 *
 * <pre>{@code
 * @RegisterExtension
 * static final PostgresExtension postgres = new PostgresExtension();
 * ... try (Connection connection = postgres.dataSource().getConnection()) { ... } ...
 * }</pre>
 */
public final class PostgresExtension extends ServiceExtension<PostgresServer> {
    /** An extension that starts one fresh server. */
    public PostgresExtension() {
        super("postgres");
    }

    @Override
    PostgresServer start(Path dir) throws Exception {
        return PostgresServer.start(dir);
    }

    /** The JDBC URL of the {@code postgres} database with the superuser and its password as query parameters. */
    public String jdbcUrl() {
        return service().jdbcUrl();
    }

    /** A pgjdbc {@link DataSource} for {@link #jdbcUrl()}: a new connection per {@code getConnection()}. */
    public DataSource dataSource() {
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setUrl(jdbcUrl());
        return dataSource;
    }
}
