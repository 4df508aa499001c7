package dev.fencedwrites.enforcer;

import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.enforcer.internal.EtcdTokenVerifier;
import dev.fencedwrites.enforcer.internal.TokenReadAhead;
import dev.fencedwrites.etcd.EtcdSettings;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.Properties;

/**
 * Checks a fencing token with the lock service before the enforcer accepts it, like
 * Chubby's {@code CheckSequencer}: a forged, future or borrowed token is rejected instead of
 * blocking the key for every real holder after it. The enforcer asks for every record the decision
 * rule would accept (a raise, or a write at the key's current token, which may be another lock's:
 * tokens are not unique across locks); an implementation should answer a question it has answered
 * before without asking the lock service again, since the holder asks the same one on each write.
 */
public interface TokenVerifier extends AutoCloseable {

    /**
     * The answer for one token.
     *
     * @param rejection   {@code null} when the record may be accepted, else the reason to reject it
     * @param detail      what the lock service said, for logs and rejection details; never {@code null}
     * @param tenureStart with a verified token: the revision at which the lease's lock key was created (the tenure the token
     *                    belongs to), or 0 when the verifier cannot say; the enforcer refuses a raise under the fence's own
     *                    lease within the same tenure
     */
    record Verdict(RejectionReason rejection, String detail, long tenureStart) {
        public Verdict(RejectionReason rejection, String detail) {
            this(rejection, detail, 0);
        }

        public static Verdict verified(String detail) {
            return new Verdict(null, detail, 0);
        }

        /** Verified, in the tenure that began at revision {@code tenureStart}. */
        public static Verdict verified(String detail, long tenureStart) {
            return new Verdict(null, detail, tenureStart);
        }

        public boolean verified() {
            return rejection == null;
        }
    }

    /**
     * Verifies that lease {@code leaseId} held the lock of resource {@code key} at revision
     * {@code token}. Blocks the calling stream thread until the lock service answers: while it is
     * unreachable the call waits and retries with backoff, so no record is decided unverified.
     *
     * @param key     the record key (the resource id, UTF-8)
     * @param token   the record's fencing token, positive
     * @param leaseId the record's {@code fence.lease}, positive
     * @throws IllegalStateException when the verifier is closed (the instance shuts down) while waiting
     */
    Verdict verify(byte[] key, long token, long leaseId);

    /**
     * One question to verify, as {@link #verify} takes it.
     *
     * @param key     the record key (the resource id, UTF-8)
     * @param token   the record's fencing token
     * @param leaseId the record's {@code fence.lease}
     */
    record Question(byte[] key, long token, long leaseId) {
    }

    /**
     * Starts verifying {@code questions} without waiting, because records that may need the answers were polled: a later
     * {@link #verify} of the same question takes its answer. Never blocks; the default does nothing (each {@link #verify}
     * then asks on its own).
     */
    default void readAhead(List<Question> questions) {
    }

    /**
     * Whether {@link #verify} answers {@code key} at {@code token} now without asking the lock service, for any lease, so
     * that reading it ahead would be wasted work. A hint: a wrong answer costs a read ahead or leaves the read to the
     * decision, never a verdict. The default says no.
     */
    default boolean answersLocally(byte[] key, long token) {
        return false;
    }

    /**
     * Has the main consumer of the Kafka Streams application configured by {@code streamsProperties} call
     * {@link #readAhead} for every record it polls, through {@code main.consumer.interceptor.classes} (KIP-42), after the
     * interceptors the properties already give the main consumer.
     *
     * @param streamsProperties the application's properties; changed in place
     * @param verifier          the verifier its topology decides with
     */
    static void readAheadOnPoll(Properties streamsProperties, TokenVerifier verifier) {
        TokenReadAhead.install(streamsProperties, verifier);
    }

    /** Releases the connection; a call waiting for the lock service throws. */
    @Override
    void close();

    /**
     * The verifier the enforcer runs: one range read of etcd's history per new (key, token, lease),
     * read ahead when {@link #readAheadOnPoll} installs it, answers cached, with the compacted-revision policy,
     * retry backoff, cache size and read-ahead bound of {@code config} ({@code token.verification.*}). Its meters
     * ({@code fence_enforcer_token_verifications_total} and the rest, docs/concepts/verified-tokens.md) are registered in
     * {@code meters}. Close it to release its etcd client.
     *
     * @param etcd   where and how to reach etcd (endpoints, auth, TLS, lock prefix)
     * @param config the enforcer's settings; only {@code token.verification.*} is read here
     * @param meters where the verifier's meters go
     * @throws IllegalArgumentException when {@code etcd} cannot make a client (a TLS file that cannot be read)
     */
    static TokenVerifier etcd(EtcdSettings etcd, FenceEnforcerConfig config, MeterRegistry meters) {
        return new EtcdTokenVerifier(etcd, config.tokenVerificationOptions(), meters);
    }
}
