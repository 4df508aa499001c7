package dev.fencedwrites.sink;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import javax.sql.DataSource;

/** The sink task's default connection pool. */
final class HikariPools {
    private HikariPools() {
    }

    /**
     * A HikariCP pool named {@code fenced-jdbc-sink} for the {@code connection.*} settings: at most
     * {@code connection.pool.size} connections, in manual-commit mode (each {@code put} is one transaction).
     * The caller closes it ({@link HikariDataSource#close()}).
     */
    static DataSource open(FencedJdbcSinkConfig config) {
        HikariConfig hikari = new HikariConfig();
        hikari.setJdbcUrl(config.connectionUrl());
        hikari.setUsername(config.connectionUser());
        hikari.setPassword(config.password());
        hikari.setMaximumPoolSize(config.poolSize());
        hikari.setAutoCommit(false);
        hikari.setPoolName("fenced-jdbc-sink");
        return new HikariDataSource(hikari);
    }
}
