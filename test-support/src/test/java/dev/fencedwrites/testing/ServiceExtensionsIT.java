package dev.fencedwrites.testing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.Service;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Needs real services: each extension starts a real etcd, broker, PostgreSQL, registry or Connect worker and must hand it over
 * answering.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class ServiceExtensionsIT {
    private static final Path NO_PLUGINS = emptyDirectory();

    @RegisterExtension
    static final EtcdNodeExtension etcd = new EtcdNodeExtension();
    @RegisterExtension
    @Order(1)
    static final KafkaBrokerExtension kafka = new KafkaBrokerExtension();
    @RegisterExtension
    @Order(2) // after the broker: started after it, stopped before it
    static final ConnectWorkerExtension connect = ConnectWorkerExtension.builder(kafka, NO_PLUGINS).build();
    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();
    @RegisterExtension
    static final SchemaRegistryExtension registry = new SchemaRegistryExtension();

    private static Path emptyDirectory() {
        try {
            return Files.createTempDirectory("fenced-writes-no-plugins-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void theEtcdNodeAnswersHealthy() throws Exception {
        assertThat(Http.get(etcd.endpoint() + "/health").body()).contains("\"health\":\"true\"");
    }

    @Test
    void theKafkaBrokerServesItsAdminClient() throws Exception {
        assertThat(kafka.admin().describeCluster().nodes().get(30, TimeUnit.SECONDS)).hasSize(1);
        assertThat(kafka.bootstrapServers()).startsWith("127.0.0.1:");
        assertThat(kafka.log4j2()).isRegularFile();
    }

    @Test
    void theConnectWorkerAnswersOnItsRestApi() throws Exception {
        assertThat(Http.get(connect.url() + "/connectors").body()).isEqualTo("[]");
    }

    @Test
    void postgresAcceptsQueriesThroughItsDataSource() throws Exception {
        try (Connection connection = postgres.dataSource().getConnection();
                Statement statement = connection.createStatement();
                ResultSet result = statement.executeQuery("SELECT 6 * 7")) {
            assertThat(result.next()).isTrue();
            assertThat(result.getInt(1)).isEqualTo(42);
        }
    }

    @Test
    void theSchemaRegistryServesTheConfluentApi() throws Exception {
        assertThat(registry.url()).endsWith("/apis/ccompat/v7");
        assertThat(Http.get(registry.url() + "/subjects").statusCode()).isEqualTo(200);
    }

    /** Its own class, so that the cluster on an instance field starts for its one test, not for each test above. */
    @Nested
    class OnAnInstanceField {
        @RegisterExtension
        final EtcdClusterExtension cluster = EtcdClusterExtension.withMembers(1);

        @Test
        void anEtcdClusterOnAnInstanceFieldRunsForTheTestWithAnAgreedLeader() throws Exception {
            assertThat(cluster.endpoints()).hasSize(1);
            assertThat(cluster.cluster().leader()).isZero();
        }
    }

    @Test
    void afterAllStopsTheServiceAndDeletesItsDirectory() throws Exception {
        EtcdNodeExtension own = new EtcdNodeExtension();
        own.beforeAll(null);
        Service service = own.service();
        Path dir = own.dir();
        assertThat(service.process().isAlive()).isTrue();

        own.afterAll(null);

        assertThat(service.process().isAlive()).isFalse();
        assertThat(dir).doesNotExist();
    }
}
