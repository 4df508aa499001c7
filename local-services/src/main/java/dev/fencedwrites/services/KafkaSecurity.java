package dev.fencedwrites.services;

import java.io.IOException;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * How a secured {@link KafkaBroker} authenticates and authorizes: its TLS material ({@link KafkaCertificates}), SCRAM
 * users with random passwords, and the client settings each user connects with. The broker serves one {@code SASL_SSL}
 * listener ({@value #MECHANISM} over TLS) to clients and to itself, authorizes with KRaft's {@code StandardAuthorizer}
 * with {@code allow.everyone.if.no.acl.found=false}, and makes {@value #ADMIN} its only super user: every other user
 * can do only what its ACLs allow (Kafka docs, "Authorization and ACLs"; KIP-554 for SCRAM in KRaft).
 */
public final class KafkaSecurity {
    /** The SASL mechanism of the client listener. */
    public static final String MECHANISM = "SCRAM-SHA-512";
    /** The super user: the broker itself, and tests and tools that set things up. */
    public static final String ADMIN = "admin";
    private static final String SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule";
    private static final String PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule";

    private final KafkaCertificates certificates;
    private final Map<String, String> passwords;

    private KafkaSecurity(KafkaCertificates certificates, Map<String, String> passwords) {
        this.certificates = certificates;
        this.passwords = passwords;
    }

    /**
     * Makes the certificates in {@code dir} and a random password for {@value #ADMIN} and each of {@code users}.
     *
     * @throws IllegalArgumentException if a user name is not made of letters, digits, {@code -} and {@code _}
     */
    public static KafkaSecurity create(Path dir, Collection<String> users) throws IOException {
        Map<String, String> passwords = new LinkedHashMap<>();
        passwords.put(ADMIN, randomPassword());
        for (String user : users) {
            if (!user.matches("[A-Za-z0-9_-]+")) {
                throw new IllegalArgumentException("user name '" + user + "' must be letters, digits, - and _");
            }
            passwords.putIfAbsent(user, randomPassword());
        }
        return new KafkaSecurity(KafkaCertificates.create(dir, randomPassword()), passwords);
    }

    /** The TLS material. */
    public KafkaCertificates certificates() {
        return certificates;
    }

    /** Every SCRAM user, {@value #ADMIN} first. */
    public Set<String> users() {
        return passwords.keySet();
    }

    /** {@code user}'s password. */
    public String password(String user) {
        String password = passwords.get(user);
        if (password == null) {
            throw new IllegalArgumentException("no SCRAM user " + user + "; users are " + passwords.keySet());
        }
        return password;
    }

    /**
     * The client settings of {@code user}: {@code security.protocol=SASL_SSL}, {@code sasl.mechanism},
     * {@code sasl.jaas.config} and the trust store ({@code ssl.truststore.*}); add {@code bootstrap.servers}.
     */
    public Map<String, String> client(String user) {
        return client(user, password(user));
    }

    /** Like {@link #client(String)} with any user name and password, e.g. a wrong one, to see a client refused. */
    public Map<String, String> client(String user, String password) {
        Map<String, String> client = new LinkedHashMap<>();
        client.put("security.protocol", "SASL_SSL");
        client.put("sasl.mechanism", MECHANISM);
        client.put("sasl.jaas.config", jaas(SCRAM_MODULE, user, password, ""));
        client.put("ssl.truststore.location", certificates.truststore().toString());
        client.put("ssl.truststore.password", certificates.password());
        client.put("ssl.truststore.type", "PKCS12");
        return client;
    }

    /** Writes {@link #client(String)} with {@code bootstrap.servers} to {@code file}, as a client properties file. */
    public Path writeClientProperties(String user, String bootstrap, Path file) {
        Map<String, String> client = new LinkedHashMap<>(client(user));
        client.put("bootstrap.servers", bootstrap);
        return PropertiesFiles.write(file, client);
    }

    /** The broker's security settings: listener protocols, SASL, TLS and the authorizer. */
    Map<String, String> brokerProperties() {
        Map<String, String> broker = new LinkedHashMap<>();
        broker.put("listener.security.protocol.map", "SASL_SSL:SASL_SSL,CONTROLLER:SASL_PLAINTEXT");
        broker.put("inter.broker.listener.name", "SASL_SSL");
        broker.put("sasl.enabled.mechanisms", MECHANISM);
        broker.put("sasl.mechanism.inter.broker.protocol", MECHANISM);
        broker.put("listener.name.sasl_ssl." + MECHANISM.toLowerCase() + ".sasl.jaas.config",
                jaas(SCRAM_MODULE, ADMIN, password(ADMIN), ""));
        // KRaft keeps SCRAM credentials in the metadata log, so the controller listener cannot use SCRAM: PLAIN, admin only.
        broker.put("sasl.mechanism.controller.protocol", "PLAIN");
        broker.put("listener.name.controller.sasl.enabled.mechanisms", "PLAIN");
        broker.put("listener.name.controller.plain.sasl.jaas.config",
                jaas(PLAIN_MODULE, ADMIN, password(ADMIN), " user_" + ADMIN + "=\"" + password(ADMIN) + "\""));
        broker.put("ssl.keystore.location", certificates.keystore().toString());
        broker.put("ssl.keystore.password", certificates.password());
        broker.put("ssl.key.password", certificates.password());
        broker.put("ssl.keystore.type", "PKCS12");
        broker.put("ssl.truststore.location", certificates.truststore().toString());
        broker.put("ssl.truststore.password", certificates.password());
        broker.put("ssl.truststore.type", "PKCS12");
        broker.put("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer");
        broker.put("super.users", "User:" + ADMIN);
        broker.put("allow.everyone.if.no.acl.found", "false");
        return broker;
    }

    /** {@code kafka-storage format} arguments that create every user's SCRAM credential in the metadata log. */
    List<String> formatArguments() {
        List<String> arguments = new ArrayList<>();
        passwords.forEach((user, password) -> {
            arguments.add("--add-scram");
            arguments.add(MECHANISM + "=[name=" + user + ",password=" + password + "]");
        });
        return arguments;
    }

    private static String jaas(String module, String user, String password, String more) {
        return module + " required username=\"" + user + "\" password=\"" + password + "\"" + more + ";";
    }

    private static String randomPassword() {
        String alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
        SecureRandom random = new SecureRandom();
        StringBuilder password = new StringBuilder();
        for (int i = 0; i < 24; i++) {
            password.append(alphabet.charAt(random.nextInt(alphabet.length())));
        }
        return password.toString();
    }
}
