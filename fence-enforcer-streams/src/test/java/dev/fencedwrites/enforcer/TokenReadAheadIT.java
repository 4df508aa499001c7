package dev.fencedwrites.enforcer;

import static dev.fencedwrites.enforcer.EtcdWrites.grant;
import static dev.fencedwrites.enforcer.EtcdWrites.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.enforcer.internal.EtcdTokenVerifier;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.etcd.LockKeys;
import dev.fencedwrites.testing.EtcdNodeExtension;
import io.etcd.jetcd.Client;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Needs real etcd: reading ahead only moves an etcd read earlier, and the index of lock holders only answers from etcd's
 * own watch, so each verdict must be the one a read at decision time gives, from etcd's own history. Answers that may
 * change (a future revision) are read again at the decision.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class TokenReadAheadIT {
    private static final String PREFIX = "read-ahead/locks/";
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private static final Pattern HANDLED = Pattern.compile("(?m)^grpc_server_handled_total\\{([^}]*)\\} (\\S+)$");

    @RegisterExtension
    static final EtcdNodeExtension etcdNode = new EtcdNodeExtension();

    static Client etcd;
    static long holder;
    static long holderToken;
    static long waiter;
    static long queuedAt;
    static long otherToken;

    /** A holder of {@code acct}'s lock, a waiter queued behind it, and the waiter's lock of {@code other}. */
    @BeforeAll
    static void lock() throws Exception {
        etcd = Client.builder().endpoints(etcdNode.endpoint()).build();
        holder = grant(etcd);
        waiter = grant(etcd);
        holderToken = put(etcd, LockKeys.key(PREFIX, key("acct"), holder), holder);
        queuedAt = put(etcd, LockKeys.key(PREFIX, key("acct"), waiter), waiter);
        otherToken = put(etcd, LockKeys.key(PREFIX, key("other"), waiter), waiter);
    }

    @AfterAll
    static void close() {
        if (etcd != null) {
            etcd.close();
        }
    }

    /** One question to verify. */
    private record Asked(String resource, long token, long lease) {
    }

    /**
     * Six questions about the past go out in one read-only transaction; a poll that adds a future revision to two new
     * questions fails its transaction (etcd refuses the whole of it), and each of the three is asked on its own. Every
     * verdict equals a read at decision time, by a verifier that does not read ahead.
     */
    @Test
    void eachVerdictReadAheadIsTheVerdictOfAReadAtDecisionAndEachQuestionIsReadOnce() throws Exception {
        long future = put(etcd, "unrelated", 0) + 1_000;
        List<Asked> past = List.of(
                new Asked("acct", holderToken, holder),
                new Asked("acct", holderToken, waiter),
                new Asked("acct", queuedAt, waiter),
                new Asked("other", holderToken, waiter),
                new Asked("other", otherToken, waiter),
                new Asked("other", otherToken, holder));
        List<Asked> withFuture = List.of(
                new Asked("acct", otherToken, holder),
                new Asked("acct", future, holder),
                new Asked("other", queuedAt, waiter));
        List<Asked> questions = new ArrayList<>(past);
        questions.addAll(withFuture);
        SimpleMeterRegistry aheadMeters = new SimpleMeterRegistry();
        SimpleMeterRegistry plainMeters = new SimpleMeterRegistry();
        List<TokenVerifier.Verdict> readAhead = new ArrayList<>();
        List<TokenVerifier.Verdict> plain = new ArrayList<>();
        try (EtcdTokenVerifier ahead = verifier(1_000, aheadMeters); EtcdTokenVerifier alone = verifier(0, plainMeters)) {
            Map<String, Double> before = etcdRequests();
            ahead.readAhead(past.stream().map(TokenReadAheadIT::question).toList());
            ahead.readAhead(past.stream().map(TokenReadAheadIT::question).toList());
            awaitAnswered(aheadMeters);
            Map<String, Double> batched = etcdRequests();
            ahead.readAhead(questions.stream().map(TokenReadAheadIT::question).toList());
            awaitAnswered(aheadMeters);
            Map<String, Double> split = etcdRequests();

            assertThat(difference(batched, before)).as("etcd's requests for the six questions, by gRPC method and code")
                    .isEqualTo(Map.of("Txn OK", 1.0));
            assertThat(difference(split, batched)).as("etcd's requests for the poll with a future revision")
                    .isEqualTo(Map.of("Txn OutOfRange", 1.0, "Range OK", 2.0, "Range OutOfRange", 1.0));
            assertThat(count(aheadMeters, "read.ahead", "resent")).isEqualTo(3.0);
            for (Asked asked : questions) {
                readAhead.add(ahead.verify(key(asked.resource()), asked.token(), asked.lease()));
                plain.add(alone.verify(key(asked.resource()), asked.token(), asked.lease()));
            }
        }

        assertThat(readAhead).isEqualTo(plain);
        assertThat(readAhead).extracting(TokenVerifier.Verdict::rejection).containsExactly(null,
                RejectionReason.LOCK_NOT_HELD, RejectionReason.LOCK_NOT_HELD, RejectionReason.LOCK_NOT_HELD, null,
                RejectionReason.LOCK_NOT_HELD, null, RejectionReason.FUTURE_TOKEN, RejectionReason.LOCK_NOT_HELD);
        assertThat(count(aheadMeters, "read.ahead", "sent")).as("one read per question, however often polled")
                .isEqualTo(questions.size());
        assertThat(count(aheadMeters, "read.ahead", "used")).as("every answer but the future revision's")
                .isEqualTo(questions.size() - 1);
        assertThat(aheadMeters.get("fence.enforcer.token.verification.etcd.reads").counter().count())
                .as("the three of the failed transaction sent again, and the future revision read again at its decision")
                .isEqualTo(questions.size() + 3 + 1);
        assertThat(aheadMeters.get("fence.enforcer.token.verification.cache.hits").counter().count()).isZero();
        assertThat(plainMeters.get("fence.enforcer.token.verification.etcd.reads").counter().count())
                .isEqualTo(questions.size());
    }

    /**
     * A revision read ahead before etcd reached it is read again when the record is decided: by then the lease may hold the
     * lock at it (reading a future revision's answer from the read sent ahead would reject the real holder's token).
     */
    @Test
    void aFutureRevisionReadAheadIsReadAgainAtDecision() throws Exception {
        long lease = grant(etcd);
        long next = put(etcd, "unrelated", 0) + 1;
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (EtcdTokenVerifier verifier = verifier(1_000, meters)) {
            verifier.readAhead(List.of(new TokenVerifier.Question(key("late"), next, lease)));
            awaitAnswered(meters);
            assertThat(put(etcd, LockKeys.key(PREFIX, key("late"), lease), lease)).isEqualTo(next);

            TokenVerifier.Verdict verdict = verifier.verify(key("late"), next, lease);

            assertThat(verdict.verified()).as(verdict.detail()).isTrue();
            assertThat(verdict.tenureStart()).isEqualTo(next);
            assertThat(count(meters, "read.ahead", "used")).isZero();
        }
    }

    /** An answer no decision took (its record was rejected by the rule first) is pushed out by newer reads. */
    @Test
    void anAnswerNoDecisionTookIsPushedOutByNewerReads() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (EtcdTokenVerifier verifier = verifier(2, meters)) {
            verifier.readAhead(List.of(new TokenVerifier.Question(key("acct"), holderToken, holder)));
            awaitAnswered(meters);
            verifier.readAhead(List.of(new TokenVerifier.Question(key("acct"), queuedAt, waiter)));
            awaitAnswered(meters);
            verifier.readAhead(List.of(new TokenVerifier.Question(key("other"), otherToken, waiter)));

            assertThat(verifier.verify(key("acct"), holderToken, holder).verified()).isTrue();
            assertThat(verifier.verify(key("other"), otherToken, waiter).verified()).isTrue();

            assertThat(count(meters, "read.ahead", "sent")).isEqualTo(3.0);
            assertThat(count(meters, "read.ahead", "used")).as("the pushed-out answer was read again").isEqualTo(1.0);
            assertThat(count(meters, "read.ahead", "dropped")).isEqualTo(1.0);
            assertThat(meters.get("fence.enforcer.token.verification.etcd.reads").counter().count()).isEqualTo(4.0);
        }
    }

    /**
     * A write at a verified fence is decided against the fence store, so its question is never verified again and its verdict
     * may leave the cache: it is not read again for each later write (long leases over more keys than the cache holds).
     */
    @Test
    void aQuestionDecidedOnceIsNotReadAheadAgainAfterItsVerdictLeftTheCache() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (EtcdTokenVerifier verifier = verifier(1_000, 1, meters)) {
            List<TokenVerifier.Question> first = List.of(new TokenVerifier.Question(key("acct"), holderToken, holder));
            List<TokenVerifier.Question> second = List.of(new TokenVerifier.Question(key("other"), otherToken, waiter));
            verifier.readAhead(first);
            assertThat(verifier.verify(key("acct"), holderToken, holder).verified()).isTrue();
            verifier.readAhead(second);
            assertThat(verifier.verify(key("other"), otherToken, waiter).verified()).isTrue();

            for (int poll = 0; poll < 3; poll++) {
                verifier.readAhead(first);
                verifier.readAhead(second);
            }

            assertThat(count(meters, "read.ahead", "sent")).as("one read each, the cache holding one verdict").isEqualTo(2.0);
        }
    }

    private static void awaitAnswered(SimpleMeterRegistry meters) {
        await().atMost(Duration.ofSeconds(30)).until(
                () -> meters.get("fence.enforcer.token.verification.etcd.reads.in.flight").gauge().value() == 0);
    }

    /** etcd's own count of the Range and Txn requests it handled, by "method code" ({@code grpc_server_handled_total}). */
    private static Map<String, Double> etcdRequests() throws Exception {
        HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(URI.create(etcdNode.endpoint() + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString());
        Map<String, Double> handled = new HashMap<>();
        Matcher line = HANDLED.matcher(response.body());
        while (line.find()) {
            String labels = line.group(1);
            String method = label(labels, "grpc_method");
            if (method.equals("Range") || method.equals("Txn")) {
                handled.merge(method + " " + label(labels, "grpc_code"), Double.parseDouble(line.group(2)), Double::sum);
            }
        }
        return handled;
    }

    private static String label(String labels, String name) {
        Matcher value = Pattern.compile(name + "=\"([^\"]*)\"").matcher(labels);
        return value.find() ? value.group(1) : "";
    }

    /** {@code after - before}, without the entries that did not change. */
    private static Map<String, Double> difference(Map<String, Double> after, Map<String, Double> before) {
        Map<String, Double> changed = new HashMap<>();
        after.forEach((name, count) -> {
            double delta = count - before.getOrDefault(name, 0.0);
            if (delta != 0) {
                changed.put(name, delta);
            }
        });
        return changed;
    }

    /**
     * The index of lock holders, started with the verifier at etcd's current revision, answers every question about an
     * acquisition made since as a verifier without it does, and sends etcd no read for them; a token from before its start
     * and a revision above the last event it has seen are read.
     */
    @Test
    void questionsAboutAcquisitionsSinceTheIndexStartedAreAnsweredWithoutReadingEtcdAsAReadAnswersThem() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        SimpleMeterRegistry plainMeters = new SimpleMeterRegistry();
        try (EtcdTokenVerifier indexed = verifier(1_000, 10_000, 100, meters);
                EtcdTokenVerifier alone = verifier(0, plainMeters)) {
            await("the index built").atMost(Duration.ofSeconds(30)).until(() -> indexRevision(meters, "first") > 0);
            long first = (long) indexRevision(meters, "first");
            assertThat(first).as("etcd's revision when the verifier started").isGreaterThanOrEqualTo(otherToken);
            long later = grant(etcd);
            long queued = grant(etcd);
            long laterToken = put(etcd, LockKeys.key(PREFIX, key("idx-acct"), later), later);
            long queuedAt = put(etcd, LockKeys.key(PREFIX, key("idx-acct"), queued), queued);
            long otherAt = put(etcd, LockKeys.key(PREFIX, key("idx-other"), queued), queued);
            long future = put(etcd, "unrelated", 0) + 1_000;
            List<Asked> since = List.of(
                    new Asked("idx-acct", laterToken, later),
                    new Asked("idx-acct", laterToken, queued),
                    new Asked("idx-acct", queuedAt, queued),
                    new Asked("idx-acct", otherAt, later),
                    new Asked("idx-other", laterToken, queued),
                    new Asked("idx-other", otherAt, queued),
                    new Asked("idx-other", otherAt, later),
                    new Asked("acct", laterToken, holder));
            await("the index's watch past revision " + otherAt).atMost(Duration.ofSeconds(30))
                    .until(() -> indexRevision(meters, "last") >= otherAt);
            List<TokenVerifier.Verdict> read = new ArrayList<>();
            for (Asked asked : since) {
                read.add(answeredAtAnyRevision(alone.verify(key(asked.resource()), asked.token(), asked.lease())));
            }
            Map<String, Double> before = etcdRequests();
            indexed.readAhead(since.stream().map(TokenReadAheadIT::question).toList());
            assertThat(count(meters, "read.ahead", "sent")).as("nothing read ahead that the index answers").isZero();
            for (int i = 0; i < since.size(); i++) {
                Asked asked = since.get(i);
                // The same verdict but for the revision each answered at: the index's last event, etcd's revision now.
                assertThat(answeredAtAnyRevision(indexed.verify(key(asked.resource()), asked.token(), asked.lease())))
                        .as("%s", asked).isEqualTo(read.get(i));
            }
            assertThat(difference(etcdRequests(), before)).as("etcd requests for the questions the index answered")
                    .isEqualTo(Map.of());
            assertThat(count(meters, "index.lookups", "answered", "result")).isEqualTo(since.size());
            assertThat(indexed.verify(key("acct"), holderToken, holder).rejection()).as("from before the index started")
                    .isNull();
            assertThat(indexed.verify(key("acct"), future, holder).rejection()).isEqualTo(RejectionReason.FUTURE_TOKEN);
            assertThat(count(meters, "index.lookups", "outside", "result")).isEqualTo(2.0);
            assertThat(meters.get("fence.enforcer.token.verification.etcd.reads").counter().count())
                    .as("the reads of the token from before the start and of the future revision").isEqualTo(2.0);
        }
    }

    private static double indexRevision(SimpleMeterRegistry meters, String bound) {
        return meters.get("fence.enforcer.token.verification.index.revision").tag("bound", bound).gauge().value();
    }

    private static TokenVerifier.Verdict answeredAtAnyRevision(TokenVerifier.Verdict verdict) {
        return verdict.detail() == null
                ? verdict
                : new TokenVerifier.Verdict(verdict.rejection(),
                        verdict.detail().replaceAll("answered at etcd revision \\d+", "answered at etcd revision N"),
                        verdict.tenureStart());
    }

    private static TokenVerifier.Question question(Asked asked) {
        return new TokenVerifier.Question(key(asked.resource()), asked.token(), asked.lease());
    }

    private static double count(SimpleMeterRegistry meters, String name, String event) {
        return count(meters, name, event, "event");
    }

    private static double count(SimpleMeterRegistry meters, String name, String value, String tag) {
        return meters.get("fence.enforcer.token.verification." + name).tag(tag, value).counter().count();
    }

    private static EtcdTokenVerifier verifier(int readAhead, SimpleMeterRegistry meters) {
        return verifier(readAhead, 10_000, meters);
    }

    private static EtcdTokenVerifier verifier(int readAhead, int cacheEntries, SimpleMeterRegistry meters) {
        return verifier(readAhead, cacheEntries, 0, meters);
    }

    private static EtcdTokenVerifier verifier(int readAhead, int cacheEntries, int index, SimpleMeterRegistry meters) {
        return new EtcdTokenVerifier(EtcdSettings.builder(List.of(etcdNode.endpoint())).lockPrefix(PREFIX).build(),
                new EtcdTokenVerifier.Options(EtcdTokenVerifier.CompactedPolicy.REJECT, Duration.ofMillis(100),
                        Duration.ofSeconds(1), cacheEntries, readAhead, index),
                meters);
    }

    private static byte[] key(String resource) {
        return resource.getBytes(StandardCharsets.UTF_8);
    }
}
