package dev.fencedwrites.enforcer;

import static dev.fencedwrites.enforcer.EtcdWrites.grant;
import static dev.fencedwrites.enforcer.EtcdWrites.put;
import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.etcd.LockKeys;
import dev.fencedwrites.testing.EtcdNodeExtension;
import io.etcd.jetcd.Client;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Needs real etcd: compaction, and what a range read at a compacted or the current revision answers, exist only there. A
 * compacted token is believed under {@code token.verification.compacted.policy=accept} only from a lease that holds the
 * key's lock now, in a tenure that began at or before the token.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class CompactedTokenVerificationIT {
    private static final String PREFIX = "compacted/locks/";

    @RegisterExtension
    static final EtcdNodeExtension etcdNode = new EtcdNodeExtension();

    static Client etcd;
    static long holder;
    static long holderToken;
    static long otherLease;
    static long lateLease;
    static long beforeLateTenure;

    /** A holder of {@code acct}'s lock, a lease holding {@code late}'s lock since after a compacted revision, then compaction. */
    @BeforeAll
    static void lockThenCompact() throws Exception {
        etcd = Client.builder().endpoints(etcdNode.endpoint()).build();
        holder = grant(etcd);
        holderToken = lock("acct", holder);
        otherLease = grant(etcd);
        beforeLateTenure = put(etcd, "unrelated", 0);
        lateLease = grant(etcd);
        lock("late", lateLease);
        long now = put(etcd, "unrelated", 0);
        etcd.getKVClient().compact(now).get(30, TimeUnit.SECONDS);
    }

    @AfterAll
    static void close() {
        if (etcd != null) {
            etcd.close();
        }
    }

    @Test
    void acceptBelievesACompactedTokenOfTheLeaseThatHoldsTheLockNow() {
        try (TokenVerifier verifier = verifier("accept")) {
            TokenVerifier.Verdict verdict = verifier.verify(key("acct"), holderToken, holder);

            assertThat(verdict.verified()).as(verdict.detail()).isTrue();
            assertThat(verdict.tenureStart()).isEqualTo(holderToken);
        }
    }

    @Test
    void acceptRefusesACompactedTokenUnderALeaseThatDoesNotHoldTheLock() {
        try (TokenVerifier verifier = verifier("accept")) {
            assertThat(verifier.verify(key("acct"), holderToken, otherLease).rejection())
                    .isEqualTo(RejectionReason.UNVERIFIABLE_TOKEN);
            assertThat(verifier.verify(key("acct"), holderToken, lateLease).rejection())
                    .isEqualTo(RejectionReason.UNVERIFIABLE_TOKEN);
        }
    }

    @Test
    void acceptRefusesACompactedRevisionFromBeforeTheHoldersTenure() {
        try (TokenVerifier verifier = verifier("accept")) {
            TokenVerifier.Verdict verdict = verifier.verify(key("late"), beforeLateTenure, lateLease);

            assertThat(verdict.rejection()).isEqualTo(RejectionReason.UNVERIFIABLE_TOKEN);
            assertThat(verdict.detail()).contains("created after the token");
        }
    }

    @Test
    void rejectRefusesEveryCompactedToken() {
        try (TokenVerifier verifier = verifier("reject")) {
            assertThat(verifier.verify(key("acct"), holderToken, holder).rejection())
                    .isEqualTo(RejectionReason.UNVERIFIABLE_TOKEN);
        }
    }

    private static TokenVerifier verifier(String policy) {
        FenceEnforcerConfig config = new FenceEnforcerConfig(Map.of("bootstrap.servers", "127.0.0.1:1", "application.id",
                "compacted", FenceEnforcerConfig.TOKEN_VERIFICATION_COMPACTED_POLICY, policy));
        return TokenVerifier.etcd(EtcdSettings.builder(List.of(etcdNode.endpoint())).lockPrefix(PREFIX).build(), config,
                new SimpleMeterRegistry());
    }

    /** Puts {@code resource}'s lock key under {@code lease} (etcd's Mutex layout, uncontended); returns its revision. */
    private static long lock(String resource, long lease) throws Exception {
        return put(etcd, LockKeys.key(PREFIX, key(resource), lease), lease);
    }

    private static byte[] key(String resource) {
        return resource.getBytes(StandardCharsets.UTF_8);
    }
}
