package dev.fencedwrites.testing;

import dev.fencedwrites.services.KafkaBroker;
import dev.fencedwrites.services.KafkaSecurity;
import dev.fencedwrites.services.Log4j2Config;
import dev.fencedwrites.services.Service;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
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
    private final List<String> users;
    private KafkaSecurity security;
    private Admin admin;

    /** An extension that starts one broker with a {@code PLAINTEXT} listener. */
    public KafkaBrokerExtension() {
        this(null);
    }

    private KafkaBrokerExtension(List<String> users) {
        super("kafka");
        this.users = users;
    }

    /**
     * An extension that starts one broker secured by {@link KafkaSecurity}: {@code SASL_SSL}, the SCRAM super user
     * {@link KafkaSecurity#ADMIN} (whom {@link #admin()} connects as) and {@code users}, who can do nothing until given ACLs.
     */
    public static KafkaBrokerExtension secured(String... users) {
        return new KafkaBrokerExtension(List.of(users));
    }

    @Override
    Service start(Path dir) throws Exception {
        security = users == null ? null : KafkaSecurity.create(dir.resolve("tls"), users);
        return KafkaBroker.start(dir.resolve("kafka"), Log4j2Config.write(log4j2File(dir), "INFO"), security);
    }

    /**
     * The broker's users, certificates and client settings.
     *
     * @throws IllegalStateException if the broker is not secured
     */
    public KafkaSecurity security() {
        service();
        if (security == null) {
            throw new IllegalStateException("this broker is not secured: use KafkaBrokerExtension.secured(...)");
        }
        return security;
    }

    /** The client settings {@code user} connects with ({@link KafkaSecurity#client(String)}); none on a plaintext broker. */
    public Map<String, String> clientSettings(String user) {
        service();
        return security == null ? Map.of() : security.client(user);
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

    /**
     * An {@link Admin} client of the broker (as the super user when secured), made on first use and closed when the broker
     * stops.
     */
    public synchronized Admin admin() {
        if (admin == null) {
            Properties props = new Properties();
            props.putAll(clientSettings(KafkaSecurity.ADMIN));
            props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
            admin = Admin.create(props);
        }
        return admin;
    }
}
