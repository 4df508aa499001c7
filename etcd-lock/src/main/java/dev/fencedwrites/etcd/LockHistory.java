package dev.fencedwrites.etcd;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.IntConsumer;

/**
 * Answers "did lease L hold resource R's lock at revision T?" from etcd's history: the check behind
 * a verified fencing token, in the spirit of Chubby's {@code CheckSequencer} (Burrows, "The Chubby
 * lock service", OSDI 2006, section 2.4). With the layout of {@link LockKeys}, the holder at
 * revision T is the key with the oldest create revision under {@code <prefix><encoded R>/} as of T.
 * So one range read at revision T (that prefix, sorted by create revision, limit 1) decides it: the
 * holder must be {@code <prefix><encoded R>/<hex L>} and be attached to lease L.
 *
 * <p>A token is the revision at which its writer found its own key the oldest (producer-lib's
 * {@code EtcdLock}, or the header revision of etcd's {@code Lock} RPC), so every real token passes.
 * etcd's answers about a past revision never change, so a verdict other than {@link Outcome#FUTURE}
 * holds for good. Thread-safe; one read per call, no retries (the caller decides).
 */
public final class LockHistory {
    /**
     * The longest lock key, in bytes, that is ever read: 1 MiB less 4 KiB. A prefix range read
     * carries the name twice (key and range end), and etcd's gRPC server takes no message above
     * {@code --max-request-bytes} (1.5 MiB by default) + 512 KiB: above this size the read fails
     * with RESOURCE_EXHAUSTED, an error that retrying never cures. No writer following etcd's Mutex
     * can have held such a lock either: its acquiring transaction carries the name at least four
     * times (put, the owner's range with its end) and etcd refuses a request above
     * {@code --max-request-bytes}. So such a lock is answered {@link Outcome#NOT_HELD} without
     * asking etcd (review: a 400 KB record key of bytes that each encode to {@code %XX}
     * stopped the enforcer's stream thread for good).
     */
    public static final int MAX_LOCK_KEY_BYTES = 1024 * 1024 - 4 * 1024;
    /** The most range reads {@link #checkAll} puts in one transaction: etcd's default {@code --max-txn-ops}. */
    public static final int BATCH_MAX_OPS = 128;
    /** The most lock-name bytes (each read carries its name twice) {@link #checkAll} puts in one transaction. */
    static final int BATCH_MAX_BYTES = 256 * 1024;

    /** What etcd's history says of a (resource, token, lease). */
    public enum Outcome {
        /** At revision = token the lease's key was the oldest under the lock: its holder held the lock. */
        HELD,
        /** At revision = token the lock was held by another key or by nobody. */
        NOT_HELD,
        /** The token is above etcd's current revision: no lock was ever found held at it. */
        FUTURE,
        /** etcd has compacted the history at the token's revision away: it can no longer say. */
        COMPACTED
    }

    /**
     * @param outcome         the answer
     * @param holder          with {@link Outcome#NOT_HELD}: the key that held the lock at the token's revision, or {@code null}
     * for nobody
     * @param holderLease     with {@link Outcome#NOT_HELD} and a holder: its lease id, else 0
     * @param currentRevision etcd's revision when it answered (the response header's), or 0 when unknown
     * @param tenureStart     the create revision of the lease's lock key when the lease holds the lock: at the token with
     *                        {@link Outcome#HELD}; with {@link Outcome#COMPACTED}, now (the history at the token being gone,
     *                        etcd can still say whether the lease holds the lock at its current revision, and since when);
     *                        else 0. One tenure is one lock key from its create revision to its delete: every token of it is
     *                        at least this, and a later tenure's key is created after the earlier one's tokens.
     */
    public record Verdict(Outcome outcome, String holder, long holderLease, long currentRevision, long tenureStart) {
        /** A verdict that says nothing of the tenure ({@code tenureStart} 0), as before it was reported. */
        public Verdict(Outcome outcome, String holder, long holderLease, long currentRevision) {
            this(outcome, holder, holderLease, currentRevision, 0);
        }

        /** A one-line explanation for logs and rejection details. */
        public String describe(String lockName, long token, long leaseId) {
            return switch (outcome) {
                case HELD ->
                    "lease " + leaseId + " (" + Long.toHexString(leaseId) + ") held " + lockName + " at revision " + token;
                case NOT_HELD -> holder == null && currentRevision == 0
                        ? "no lease can have held " + lockName + ": its lock key is longer than " + MAX_LOCK_KEY_BYTES
                                + " bytes, which no Mutex acquisition fits in one etcd request (--max-request-bytes, 1.5 MiB "
                                + "by default) and no range read fits etcd's gRPC limit; etcd was not asked"
                        : holder == null
                                ? "nobody held " + lockName + " at revision " + token + " (answered at etcd revision "
                                        + currentRevision + ")"
                                : "at revision " + token + " " + lockName + " was held by " + holder + " (lease " + holderLease
                                        + ", hex "
                                        + Long.toHexString(holderLease) + "), not by lease " + leaseId + " (hex "
                                        + Long.toHexString(leaseId) + ")";
                case FUTURE -> "revision " + token + " is above etcd's current revision: no lock was ever held at it";
                case COMPACTED -> "etcd has compacted revision " + token + " away; whether lease " + leaseId + " held " + lockName
                        + " then cannot be checked" + (tenureStart == 0
                                ? ", and it does not hold it now"
                                : "; it holds it now, since revision " + tenureStart);
            };
        }
    }

    private final KV kv;
    private final String prefix;
    private final Duration requestTimeout;

    /**
     * @param kv             an etcd KV client
     * @param prefix         the lock prefix ({@code etcd.lock.prefix})
     * @param requestTimeout bound on the read, positive
     */
    public LockHistory(KV kv, String prefix, Duration requestTimeout) {
        this.kv = kv;
        this.prefix = prefix;
        this.requestTimeout = requestTimeout;
    }

    /** The lock prefix. */
    public String prefix() {
        return prefix;
    }

    /**
     * Whether lease {@code leaseId}'s lock key for {@code resource} is at most {@link #MAX_LOCK_KEY_BYTES}, so {@link #check}
     * asks etcd.
     */
    public boolean fits(byte[] resource, long leaseId) {
        return prefix.getBytes(StandardCharsets.UTF_8).length + LockKeys.encodedLength(resource) + 1
                + Long.toHexString(leaseId).length() <= MAX_LOCK_KEY_BYTES;
    }

    /**
     * Reads the lock's holder at revision {@code token}.
     *
     * @param resource the resource id, UTF-8 bytes (the record key)
     * @param token    the fencing token, positive
     * @param leaseId  the lease the writer names ({@code fence.lease})
     * @return the verdict; {@link Outcome#NOT_HELD} with no holder and revision 0, without asking
     *     etcd, when the lease's lock key would be longer than {@link #MAX_LOCK_KEY_BYTES}; completes
     *     exceptionally with jetcd's error (etcd unreachable, timed out after the request timeout,
     *     authentication or permission refused) when etcd did not answer
     */
    public CompletableFuture<Verdict> check(byte[] resource, long token, long leaseId) {
        return check(resource, token, leaseId, false);
    }

    /**
     * {@link #check(byte[], long, long)}; with {@code compactedHeldNow}, a {@link Outcome#COMPACTED} answer is followed by one
     * more read, at etcd's current revision, whose {@code tenureStart} says whether the lease holds the lock now and since when.
     */
    public CompletableFuture<Verdict> check(byte[] resource, long token, long leaseId, boolean compactedHeldNow) {
        String name = LockKeys.name(prefix, resource);
        ByteSequence expected = ByteSequence.from(name + "/" + Long.toHexString(leaseId), StandardCharsets.UTF_8);
        if (!fits(resource, leaseId)) {
            return CompletableFuture.completedFuture(new Verdict(Outcome.NOT_HELD, null, 0, 0, 0));
        }
        return kv.get(ByteSequence.from(name + "/", StandardCharsets.UTF_8), oldestAt(token, false))
                .orTimeout(requestTimeout.toMillis(), TimeUnit.MILLISECONDS)
                .handle((GetResponse response, Throwable error) -> {
                    if (error != null) {
                        Outcome outOfRange = outOfRange(error);
                        if (outOfRange == null) {
                            throw error instanceof CompletionException completion ? completion : new CompletionException(error);
                        }
                        return new Verdict(outOfRange, null, 0, 0, 0);
                    }
                    return holderVerdict(response.getKvs(), expected, leaseId, response.getHeader().getRevision());
                }).thenCompose(verdict -> compactedHeldNow && verdict.outcome() == Outcome.COMPACTED
                        ? heldNow(name, expected, leaseId)
                        : CompletableFuture.completedFuture(verdict));
    }

    /**
     * The range read of a lock's oldest key at revision {@code token} (0: etcd's current revision); linearizable unless
     * {@code serializable}.
     */
    private static GetOption oldestAt(long token, boolean serializable) {
        return GetOption.builder().isPrefix(true).withRevision(token).withSortField(GetOption.SortTarget.CREATE)
                .withSortOrder(GetOption.SortOrder.ASCEND).withLimit(1).withSerializable(serializable).build();
    }

    /** The verdict from the oldest key under a lock at the token ({@code oldest}: none or one), read at {@code current}. */
    private static Verdict holderVerdict(List<KeyValue> oldest, ByteSequence expected, long leaseId, long current) {
        if (oldest.isEmpty()) {
            return new Verdict(Outcome.NOT_HELD, null, 0, current, 0);
        }
        KeyValue holder = oldest.get(0);
        if (holder.getKey().equals(expected) && holder.getLease() == leaseId) {
            return new Verdict(Outcome.HELD, null, 0, current, holder.getCreateRevision());
        }
        return new Verdict(Outcome.NOT_HELD, holder.getKey().toString(StandardCharsets.UTF_8), holder.getLease(), current, 0);
    }

    /**
     * One question for {@link #checkAll}.
     *
     * @param resource the resource id, UTF-8 bytes (the record key)
     * @param token    the fencing token, positive
     * @param leaseId  the lease the writer names
     */
    public record Question(byte[] resource, long token, long leaseId) {
    }

    /**
     * {@link #check(byte[], long, long, boolean)} for many questions at a time: up to {@link #BATCH_MAX_OPS} range reads,
     * each at its own revision, in one read-only transaction (one request for all; etcd serves a read-only transaction
     * without a Raft proposal). The reads are serializable: a revision the member has applied is history, the same on every
     * member, so no linearizable round trip is needed to read it. etcd fails a whole transaction when one of its revisions
     * is compacted or above the member's (and when it has more operations than {@code --max-txn-ops}); then each question
     * of it is asked again on its own with {@code check}'s linearizable read, so every answer is the one {@code check}
     * gives.
     *
     * @param resent called with the number of questions of a failed transaction, as they are asked again one by one
     * @return one future per question, in order, completing as {@code check}'s would
     */
    public List<CompletableFuture<Verdict>> checkAll(List<Question> questions, boolean compactedHeldNow, IntConsumer resent) {
        List<CompletableFuture<Verdict>> answers = new ArrayList<>(questions.size());
        String[] names = new String[questions.size()];
        List<Integer> batch = new ArrayList<>();
        long batchBytes = 0;
        for (int i = 0; i < questions.size(); i++) {
            Question question = questions.get(i);
            answers.add(new CompletableFuture<>());
            names[i] = LockKeys.name(prefix, question.resource());
            long bytes = 2L * (names[i].length() + 1);
            if (bytes > BATCH_MAX_BYTES) {
                check(question.resource(), question.token(), question.leaseId(), compactedHeldNow)
                        .whenComplete(completing(answers.get(i)));
                continue;
            }
            if (batch.size() == BATCH_MAX_OPS || batchBytes + bytes > BATCH_MAX_BYTES) {
                sendBatch(questions, names, batch, answers, compactedHeldNow, resent);
                batch = new ArrayList<>();
                batchBytes = 0;
            }
            batch.add(i);
            batchBytes += bytes;
        }
        if (!batch.isEmpty()) {
            sendBatch(questions, names, batch, answers, compactedHeldNow, resent);
        }
        return answers;
    }

    /** Sends the questions at {@code batch} (indexes into {@code questions} and their lock {@code names}) in one transaction. */
    private void sendBatch(List<Question> questions, String[] names, List<Integer> batch,
            List<CompletableFuture<Verdict>> answers, boolean compactedHeldNow, IntConsumer resent) {
        if (batch.size() == 1) {
            Question question = questions.get(batch.get(0));
            check(question.resource(), question.token(), question.leaseId(), compactedHeldNow)
                    .whenComplete(completing(answers.get(batch.get(0))));
            return;
        }
        Op[] reads = new Op[batch.size()];
        ByteSequence[] expected = new ByteSequence[batch.size()];
        for (int j = 0; j < batch.size(); j++) {
            Question question = questions.get(batch.get(j));
            String name = names[batch.get(j)];
            expected[j] = ByteSequence.from(name + "/" + Long.toHexString(question.leaseId()), StandardCharsets.UTF_8);
            reads[j] = Op.get(ByteSequence.from(name + "/", StandardCharsets.UTF_8), oldestAt(question.token(), true));
        }
        kv.txn().Then(reads).commit().orTimeout(requestTimeout.toMillis(), TimeUnit.MILLISECONDS)
                .whenComplete((TxnResponse response, Throwable error) -> {
                    if (error != null || response.getGetResponses().size() != batch.size()) {
                        // A compacted or future revision, too many operations, or no answer: each question on its own.
                        resent.accept(batch.size());
                        for (int index : batch) {
                            Question question = questions.get(index);
                            check(question.resource(), question.token(), question.leaseId(), compactedHeldNow)
                                    .whenComplete(completing(answers.get(index)));
                        }
                        return;
                    }
                    long current = response.getHeader().getRevision();
                    for (int j = 0; j < batch.size(); j++) {
                        answers.get(batch.get(j)).complete(holderVerdict(response.getGetResponses().get(j).getKvs(),
                                expected[j], questions.get(batch.get(j)).leaseId(), current));
                    }
                });
    }

    private static BiConsumer<Verdict, Throwable> completing(CompletableFuture<Verdict> answer) {
        return (verdict, error) -> {
            if (error == null) {
                answer.complete(verdict);
            } else {
                answer.completeExceptionally(error);
            }
        };
    }

    /**
     * For a compacted token: whether lease {@code leaseId} holds the lock now (its key the oldest under the lock at etcd's
     * current revision), as a {@link Outcome#COMPACTED} verdict whose {@code tenureStart} is the key's create revision, or 0.
     */
    private CompletableFuture<Verdict> heldNow(String name, ByteSequence expected, long leaseId) {
        return kv.get(ByteSequence.from(name + "/", StandardCharsets.UTF_8), oldestAt(0, false))
                .orTimeout(requestTimeout.toMillis(), TimeUnit.MILLISECONDS).thenApply(response -> {
                    long current = response.getHeader().getRevision();
                    KeyValue holder = response.getKvs().isEmpty() ? null : response.getKvs().get(0);
                    boolean held = holder != null && holder.getKey().equals(expected) && holder.getLease() == leaseId;
                    return new Verdict(Outcome.COMPACTED, null, 0, current, held ? holder.getCreateRevision() : 0);
                });
    }

    /**
     * etcd's "mvcc: required revision is a future revision" and "... has been compacted" (gRPC OUT_OF_RANGE), else {@code null}.
     */
    static Outcome outOfRange(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
            String message = String.valueOf(t.getMessage());
            if (message.contains("required revision is a future revision")) {
                return Outcome.FUTURE;
            }
            if (message.contains("required revision has been compacted")) {
                return Outcome.COMPACTED;
            }
        }
        return null;
    }
}
