package dev.fencedwrites.enforcer.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.enforcer.TokenVerifier;
import dev.fencedwrites.etcd.EtcdSettings;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;
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

    /**
     * An endpoint that takes connections and never answers keeps every read out until the request timeout: the verifier
     * sends at most {@code token.verification.read.ahead.max} reads ahead, counts the records it sent none for, reads
     * nothing ahead for a key longer than it reads ahead, and a decision waits for the read sent ahead for it rather than
     * sending its own.
     */
    @Test
    void readsAheadNoMoreThanItsBoundAndADecisionWaitsForTheReadSentForIt() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            EtcdTokenVerifier verifier = silentVerifier(silent, Duration.ofSeconds(60), 2, meters);
            byte[] key = "k".getBytes(StandardCharsets.UTF_8);
            verifier.readAhead(
                    LongStream.rangeClosed(1, 5).mapToObj(token -> new TokenVerifier.Question(key, token, 7)).toList());
            verifier.readAhead(List.of(new TokenVerifier.Question(key, 1, 7)));
            byte[] longKey = "k".repeat(EtcdTokenVerifier.READ_AHEAD_KEY_MAX_BYTES + 1).getBytes(StandardCharsets.UTF_8);
            verifier.readAhead(List.of(new TokenVerifier.Question(longKey, 9, 7)));

            assertThat(readAhead(meters, "sent")).isEqualTo(2.0);
            assertThat(readAhead(meters, "full")).isEqualTo(3.0);
            assertThat(meters.get("fence.enforcer.token.verification.etcd.reads").counter().count()).isEqualTo(2.0);
            assertThat(meters.get("fence.enforcer.token.verification.etcd.reads.in.flight").gauge().value()).isEqualTo(2.0);

            CompletableFuture<TokenVerifier.Verdict> decision = CompletableFuture.supplyAsync(() -> verifier.verify(key, 1, 7));
            Thread.sleep(500);
            assertThat(decision).isNotDone();
            assertThat(meters.get("fence.enforcer.token.verification.etcd.reads").counter().count())
                    .as("the decision sent no read of its own").isEqualTo(2.0);

            verifier.close();
            assertThat(decision).failsWithin(30, TimeUnit.SECONDS).withThrowableOfType(ExecutionException.class)
                    .withCauseInstanceOf(IllegalStateException.class).withMessageContaining("closed while waiting for etcd");
            assertThat(readAhead(meters, "used")).isZero();
        }
    }

    /**
     * A read sent ahead that does not come back within the request timeout (etcd stopped, say) is left: the decision reads
     * on its own, and waits as a decision does, counted in the waiting gauge.
     */
    @Test
    void aDecisionWhoseReadAheadDoesNotComeBackReadsOnItsOwnAndCountsAsWaiting() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            EtcdTokenVerifier verifier = silentVerifier(silent, Duration.ofMillis(500), 10, meters);
            byte[] key = "k".getBytes(StandardCharsets.UTF_8);
            verifier.readAhead(List.of(new TokenVerifier.Question(key, 1, 7)));
            CompletableFuture<TokenVerifier.Verdict> decision = CompletableFuture.supplyAsync(() -> verifier.verify(key, 1, 7));

            await().atMost(Duration.ofSeconds(30))
                    .until(() -> meters.get("fence.enforcer.token.verification.waiting").gauge().value() == 1.0);
            assertThat(meters.get("fence.enforcer.token.verification.etcd.reads").counter().count()).isGreaterThanOrEqualTo(2.0);
            assertThat(decision).isNotDone();

            verifier.close();
            assertThat(decision).failsWithin(30, TimeUnit.SECONDS).withThrowableOfType(ExecutionException.class)
                    .withCauseInstanceOf(IllegalStateException.class);
        }
    }

    /** A verifier of etcd at {@code silent}'s port, which takes connections and never answers. */
    private static EtcdTokenVerifier silentVerifier(ServerSocket silent, Duration requestTimeout, int readAhead,
            SimpleMeterRegistry meters) {
        EtcdSettings settings = EtcdSettings.builder(List.of("http://127.0.0.1:" + silent.getLocalPort()))
                .connectTimeout(Duration.ofSeconds(5)).requestTimeout(requestTimeout).build();
        return new EtcdTokenVerifier(settings, new EtcdTokenVerifier.Options(EtcdTokenVerifier.CompactedPolicy.REJECT,
                Duration.ofMillis(10), Duration.ofMillis(50), 100, readAhead), meters);
    }

    private static double readAhead(SimpleMeterRegistry meters, String event) {
        return meters.get("fence.enforcer.token.verification.read.ahead").tag("event", event).counter().count();
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
