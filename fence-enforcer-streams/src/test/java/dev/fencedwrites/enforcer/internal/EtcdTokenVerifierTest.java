package dev.fencedwrites.enforcer.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.enforcer.TokenVerifier;
import dev.fencedwrites.etcd.EtcdSettings;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What the verifier does while etcd does not answer (here: nothing listens on the endpoint): it
 * waits and retries, counts the failed reads, decides nothing, and stops waiting when closed. The
 * answers of a real etcd are proven by the ITs.
 */
class EtcdTokenVerifierTest {

    @Test
    void waitsAndRetriesWhileEtcdIsUnreachableAndThrowsWhenClosed() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        EtcdSettings unreachable = EtcdSettings.builder(List.of("http://127.0.0.1:1")).connectTimeout(Duration.ofMillis(200))
                .requestTimeout(Duration.ofMillis(300)).build();
        EtcdTokenVerifier verifier = new EtcdTokenVerifier(unreachable,
                new EtcdTokenVerifier.Options(EtcdTokenVerifier.CompactedPolicy.REJECT, Duration.ofMillis(10),
                        Duration.ofMillis(50), 100),
                meters);

        CompletableFuture<Object> call = CompletableFuture
                .supplyAsync(() -> verifier.verify("k".getBytes(StandardCharsets.UTF_8), 5, 7));

        await().atMost(Duration.ofSeconds(30))
                .until(() -> meters.get("fence.enforcer.token.verification.etcd.errors").counter().count() >= 3);
        assertThat(call).isNotDone();
        assertThat(meters.get("fence.enforcer.token.verification.waiting").gauge().value()).isEqualTo(1.0);

        verifier.close();

        assertThat(call).failsWithin(10, TimeUnit.SECONDS).withThrowableOfType(ExecutionException.class)
                .withCauseInstanceOf(IllegalStateException.class).withMessageContaining("closed while waiting for etcd");
        assertThat(meters.get("fence.enforcer.token.verifications").tag("outcome", "verified").counter().count()).isZero();
        assertThat(meters.get("fence.enforcer.token.verification.waiting").gauge().value()).isZero();
    }

    /**
     * A 400 KB key of bytes that each encode to {@code %XX} makes a 1.2 MB lock name,
     * which no Mutex acquisition fits in one request to an etcd with the default --max-request-bytes;
     * asked anyway, the range read (the name twice) broke etcd's 2 MiB gRPC limit and the verifier
     * retried forever, stopping the stream thread. Here etcd is unreachable, so only an answer
     * without a read can come back.
     */
    @Test
    void aKeyWhoseLockKeyIsLongerThanEtcdTakesIsRefusedLockNotHeldWithoutAskingEtcdAndItsDetailStaysShort() {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        EtcdSettings unreachable = EtcdSettings.builder(List.of("http://127.0.0.1:1")).connectTimeout(Duration.ofMillis(200))
                .requestTimeout(Duration.ofMillis(300)).build();
        byte[] key = new byte[400_000];
        Arrays.fill(key, (byte) 0xFF);
        try (EtcdTokenVerifier verifier = new EtcdTokenVerifier(unreachable,
                new EtcdTokenVerifier.Options(EtcdTokenVerifier.CompactedPolicy.REJECT, Duration.ofMillis(10),
                        Duration.ofMillis(50), 100),
                meters)) {
            CompletableFuture<TokenVerifier.Verdict> call = CompletableFuture.supplyAsync(() -> verifier.verify(key, 5, 7));

            assertThat(call).succeedsWithin(30, TimeUnit.SECONDS).satisfies(verdict -> {
                assertThat(verdict.rejection()).isEqualTo(RejectionReason.LOCK_NOT_HELD);
                assertThat(verdict.detail()).contains("--max-request-bytes").hasSizeLessThan(1_000);
            });
            assertThat(meters.get("fence.enforcer.token.verification.etcd.reads").counter().count()).isZero();
            assertThat(meters.get("fence.enforcer.token.verifications").tag("outcome", "lock_not_held").counter().count())
                    .isEqualTo(1.0);
        }
    }

    @Test
    void aDetailNameIsCutPastItsLimitSayingHowLongItWas() {
        String limit = "k".repeat(EtcdTokenVerifier.DETAIL_NAME_MAX_CHARS);

        assertThat(EtcdTokenVerifier.abbreviated(limit)).isEqualTo(limit);
        assertThat(EtcdTokenVerifier.abbreviated(limit + "x")).isEqualTo(limit + "... (201 chars)");
        assertThat(EtcdTokenVerifier.abbreviated("")).isEmpty();
    }

    @Test
    void itsTextNamesTheLockPrefixAndTheOptions() {
        EtcdSettings settings = EtcdSettings.builder(List.of("http://127.0.0.1:1")).lockPrefix("app/locks/").build();
        EtcdTokenVerifier.Options options = new EtcdTokenVerifier.Options(EtcdTokenVerifier.CompactedPolicy.REJECT,
                Duration.ofMillis(10), Duration.ofMillis(50), 100);
        try (EtcdTokenVerifier verifier = new EtcdTokenVerifier(settings, options, new SimpleMeterRegistry())) {
            assertThat(verifier.toString()).isEqualTo("EtcdTokenVerifier{prefix=app/locks/, " + options + "}");
        }
    }
}
