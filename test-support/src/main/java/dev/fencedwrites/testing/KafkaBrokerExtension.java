package dev.fencedwrites.testing;

import dev.fencedwrites.services.KafkaBroker;
import dev.fencedwrites.services.Log4j2Config;
import dev.fencedwrites.services.Service;
import java.nio.file.Path;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

/**
 * A real single-node Kafka broker on loopback ({@link KafkaBroker}, KRaft combined mode, as a child JVM) as a JUnit 5
 * extension; see {@link ServiceExtension} for its lifecycle. Its log4j2 configuration ({@link #log4j2()}) is there for
 * the other child JVMs a test starts next to it (the enforcer, workers).
 *
 * <pre>{@code
 * @RegisterExtension
 * static final KafkaBrokerExtension kafka = new KafkaBrokerExtension();
 * ... kafka.admin().createTopics(...); props.put("bootstrap.servers", kafka.bootstrapServers()) ...
 * }</pre>
 */
public final class KafkaBrokerExtension extends ServiceExtension<Service> {
    private Admin admin;

    /** An extension that starts one broker. */
    public KafkaBrokerExtension() {
        super("kafka");
    }

    @Override
    Service start(Path dir) throws Exception {
        return KafkaBroker.start(dir.resolve("kafka"), Log4j2Config.write(log4j2File(dir), "INFO"));
    }

    private static Path log4j2File(Path dir) {
        return dir.resolve("log4j2.properties");
    }

    @Override
    synchronized void beforeStop() {
        if (admin != null) {
            admin.close();
            admin = null;
        }
    }

    /** Kafka's {@code bootstrap.servers}: {@code 127.0.0.1:PORT}. */
    public String bootstrapServers() {
        return service().address();
    }

    /** The log4j2 configuration the broker runs with (INFO, Kafka at WARN), for child JVMs started next to it. */
    public Path log4j2() {
        return log4j2File(dir());
    }

    /** An {@link Admin} client of the broker, made on first use and closed when the broker stops. */
    public synchronized Admin admin() {
        if (admin == null) {
            Properties props = new Properties();
            props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
            admin = Admin.create(props);
        }
        return admin;
    }
}
