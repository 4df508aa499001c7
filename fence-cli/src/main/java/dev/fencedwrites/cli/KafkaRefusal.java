package dev.fencedwrites.cli;

import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.config.Configurator;

/**
 * The one line an operator command prints when Kafka refuses its client: the cause (authentication,
 * TLS, missing credentials, an ACL) and the setting to check, instead of the client's exception and log lines.
 */
public final class KafkaRefusal {
    private static final Pattern USERNAME = Pattern.compile("username\\s*=\\s*\"([^\"]*)\"");
    private static final String WHERE = " in --command-config (or -X)";

    private KafkaRefusal() {
    }

    /**
     * Turns off the Kafka clients' own logging for an operator command: a refused client logs the refusal (with a stack
     * trace for TLS) on every retry, and the command says it once in its own words ({@link #describe}).
     */
    public static void quietClientLogs() {
        Configurator.setLevel("org.apache.kafka", Level.OFF);
    }

    /**
     * What refused the client, as one line naming the setting to check, or {@code null} when {@code error} is no refusal.
     *
     * @param client the settings the command's clients had ({@code sasl.jaas.config} names the user)
     */
    public static String describe(Throwable error, Map<String, Object> client) {
        for (Throwable e = error; e != null; e = e.getCause()) {
            if (e instanceof SaslAuthenticationException) {
                return "authentication failed for user " + user(client) + ": check " + SaslConfigs.SASL_JAAS_CONFIG
                        + " (username, password) and sasl.mechanism" + WHERE;
            }
            if (e instanceof SslAuthenticationException) {
                return "TLS handshake with Kafka failed (" + root(e) + "): check ssl.truststore.location" + WHERE;
            }
            if (e instanceof AuthenticationException) {
                return "authentication failed for user " + user(client) + " (" + e.getMessage() + "): check security.protocol "
                        + "and sasl.mechanism" + WHERE;
            }
            if (e instanceof TopicAuthorizationException topics) {
                return "user " + user(client) + " is not authorized to access topic(s) " + String.join(", ",
                        topics.unauthorizedTopics()) + ": it needs READ on a topic it reads, WRITE on one it writes "
                        + "(kafka-acls; docs/operate/security.md)";
            }
            if (e instanceof AuthorizationException) {
                return "user " + user(client) + " is not authorized: " + e.getMessage() + " (docs/operate/security.md)";
            }
            if (e.getMessage() != null && e.getMessage().contains("JAAS configuration")) {
                return "no credentials: security.protocol " + client.get("security.protocol") + " needs "
                        + SaslConfigs.SASL_JAAS_CONFIG + WHERE;
            }
        }
        return null;
    }

    private static String user(Map<String, Object> client) {
        Object jaas = client.get(SaslConfigs.SASL_JAAS_CONFIG);
        Matcher m = USERNAME.matcher(jaas == null ? "" : jaas.toString());
        return m.find() ? m.group(1) : "(none: no " + SaslConfigs.SASL_JAAS_CONFIG + ")";
    }

    private static String root(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null) {
            root = root.getCause();
        }
        String message = root.getMessage() == null ? root.toString() : root.getMessage();
        return message.lines().findFirst().orElse(message);
    }
}
