package dev.fencedwrites.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencedwrites.services.KafkaSecurity;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Needs a real broker: SASL, TLS and ACLs are decided by the broker's listener and authorizer, nothing less. */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class SecuredKafkaBrokerIT {
    @RegisterExtension
    static final KafkaBrokerExtension kafka = KafkaBrokerExtension.secured("alice");

    @Test
    void theSuperUserConnectsOverSaslSslAndCreatesTopics() throws Exception {
        kafka.admin().createTopics(List.of(new NewTopic("secured-admin-topic", 1, (short) 1))).all().get(60, TimeUnit.SECONDS);

        assertThat(kafka.admin().listTopics().names().get(30, TimeUnit.SECONDS)).contains("secured-admin-topic");
    }

    @Test
    void aUserWithoutAclsIsNotAuthorized() {
        try (Admin alice = admin(kafka.clientSettings("alice"))) {
            assertThatThrownBy(() -> alice.createTopics(List.of(new NewTopic("alice-topic", 1, (short) 1))).all()
                    .get(30, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(TopicAuthorizationException.class);
        }
    }

    @Test
    void aWrongPasswordIsRefusedWithAnAuthenticationError() {
        try (Admin impostor = admin(kafka.security().client("alice", "not-her-password"))) {
            assertThatThrownBy(() -> impostor.describeCluster().nodes().get(30, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(SaslAuthenticationException.class);
        }
    }

    @Test
    void aClientThatDoesNotTrustTheProjectsCaIsRefusedAtTheTlsHandshake() {
        Map<String, String> settings = new HashMap<>(kafka.clientSettings("alice"));
        settings.keySet().removeIf(key -> key.startsWith("ssl.truststore."));
        try (Admin untrusting = admin(settings)) {
            assertThatThrownBy(() -> untrusting.describeCluster().nodes().get(30, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(SslAuthenticationException.class);
        }
    }

    @Test
    void everyUserHasAScramCredentialAndTheAdminIsFirst() {
        assertThat(kafka.security().users()).containsExactly(KafkaSecurity.ADMIN, "alice");
    }

    private static Admin admin(Map<String, String> settings) {
        Map<String, Object> props = new HashMap<>(settings);
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        return Admin.create(props);
    }
}
