package dev.fencedwrites.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.api.Event;
import io.etcd.jetcd.api.KeyValue;
import io.etcd.jetcd.api.RangeResponse;
import io.etcd.jetcd.api.ResponseHeader;
import io.etcd.jetcd.common.exception.EtcdExceptionFactory;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchResponse;
import io.grpc.Status;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The index's watch upkeep, against a scripted etcd (jetcd's KV and Watch answered by hand from a list of changes): a
 * failed watch is started again from the revision after the last event applied while etcd shows that event, keeping
 * every answer; a different cluster, a history without that event (a restored etcd, below or past the index's
 * revision), a compacted revision or a watch that keeps failing with RESOURCE_EXHAUSTED builds the index again at
 * etcd's current revision, answering nothing older. The history logic itself
 * is LockTenuresModelTest's and LockHistoryPropertyIT's.
 */
class LockTenuresWatchTest {
    private static final String PREFIX = "w/locks/";
    private static final byte[] RESOURCE = "acct".getBytes(StandardCharsets.UTF_8);

    /** One watch the index started: where from, and its listener. */
    record Started(long revision, Watch.Listener listener, boolean[] closed) {
    }

    /** A change in the scripted etcd's history. */
    record Change(String key, long revision, boolean put) {
    }

    private volatile long clusterId = 1;
    private volatile long currentRevision = 5;
    private final List<Change> history = new CopyOnWriteArrayList<>();
    private final List<Started> watches = new CopyOnWriteArrayList<>();
    private LockTenures index;

    @BeforeEach
    void start() {
        KV kv = (KV) Proxy.newProxyInstance(KV.class.getClassLoader(), new Class<?>[]{KV.class}, (proxy, method, args) -> {
            if (!method.getName().equals("get")) {
                throw new UnsupportedOperationException(method.getName());
            }
            return get((ByteSequence) args[0], (GetOption) args[1]);
        });
        Watch watch = (Watch) Proxy.newProxyInstance(Watch.class.getClassLoader(), new Class<?>[]{Watch.class},
                (proxy, method, args) -> {
                    if (!method.getName().equals("watch") || args.length != 3) {
                        throw new UnsupportedOperationException(method.getName());
                    }
                    boolean[] closed = {false};
                    watches.add(new Started(((WatchOption) args[1]).getRevision(), (Watch.Listener) args[2], closed));
                    return (Watch.Watcher) Proxy.newProxyInstance(Watch.Watcher.class.getClassLoader(),
                            new Class<?>[]{Watch.Watcher.class}, (w, m, a) -> {
                                if (m.getName().equals("close")) {
                                    closed[0] = true;
                                }
                                return null;
                            });
                });
        index = new LockTenures(kv, watch, PREFIX, Duration.ofSeconds(1), 100);
        index.startAt(3);
        await("the first watch").atMost(Duration.ofSeconds(10)).until(() -> watches.size() == 1);
        assertThat(watches.get(0).revision()).as("a snapshot at revision 3, then a watch from 4").isEqualTo(4);
        // Lease 0x1f takes the lock at revision 7.
        currentRevision = 7;
        watches.get(0).listener().onNext(put(7, 0x1f));
        assertThat(held(7)).isEqualTo(LockHistory.Outcome.HELD);
    }

    /** The scripted etcd's answer: the keys alive at the option's revision (or now), under the prefix or the one key. */
    private CompletableFuture<GetResponse> get(ByteSequence key, GetOption option) {
        long at = option.getRevision() == 0 ? currentRevision : option.getRevision();
        if (at > currentRevision) {
            return CompletableFuture.failedFuture(new IllegalStateException("etcdserver: mvcc: required revision is a future "
                    + "revision"));
        }
        Map<String, Long> alive = new TreeMap<>();
        for (Change change : history) {
            if (change.revision() <= at) {
                if (change.put()) {
                    alive.put(change.key(), change.revision());
                } else {
                    alive.remove(change.key());
                }
            }
        }
        boolean range = option.isPrefix() || option.getEndKey().isPresent();
        String wanted = key.toString(StandardCharsets.UTF_8);
        RangeResponse.Builder response = RangeResponse.newBuilder()
                .setHeader(ResponseHeader.newBuilder().setClusterId(clusterId).setRevision(currentRevision));
        alive.forEach((name, revision) -> {
            if (range ? name.startsWith(PREFIX) : name.equals(wanted)) {
                response.setCount(response.getCount() + 1);
                if (!option.isCountOnly()) {
                    response.addKvs(KeyValue.newBuilder().setKey(ByteString.copyFromUtf8(name)).setCreateRevision(revision)
                            .setModRevision(revision).setLease(0x1f).setVersion(1));
                }
            }
        });
        return CompletableFuture.completedFuture(new GetResponse(response.build(), ByteSequence.EMPTY));
    }

    @AfterEach
    void close() {
        index.close();
    }

    @Test
    void aFailedWatchIsStartedAgainAfterTheLastEventAndTheIndexKeepsAnswering() {
        watches.get(0).listener().onError(new IllegalStateException("stream reset"));
        assertThat(held(7)).as("answered meanwhile").isEqualTo(LockHistory.Outcome.HELD);
        await("a second watch").atMost(Duration.ofSeconds(10)).until(() -> watches.size() == 2);
        assertThat(watches.get(1).revision()).isEqualTo(8);
        assertThat(watches.get(0).closed()[0]).as("the failed watcher is closed").isTrue();
        // The first watcher's late events are not applied; the second's are.
        watches.get(0).listener().onNext(delete(9));
        assertThat(held(9)).as("the first watcher's late event is not applied: revision 9 is above the index").isNull();
        watches.get(1).listener().onNext(delete(9));
        assertThat(held(9)).isEqualTo(LockHistory.Outcome.NOT_HELD);
        assertThat(held(7)).isEqualTo(LockHistory.Outcome.HELD);
        assertThat(index.rebuilds()).isZero();
    }

    @Test
    void anotherClusterAfterAFailedWatchRebuildsTheIndexAtItsCurrentRevision() {
        clusterId = 2;
        currentRevision = 20;
        rebuiltAfterError(20);
    }

    @Test
    void aRevisionBelowTheIndexAfterAFailedWatchRebuildsTheIndex() {
        currentRevision = 4; // etcd restored from an older snapshot, without --bump-revision
        history.clear();
        rebuiltAfterError(4);
    }

    @Test
    void aRestoredHistoryPastTheIndexsRevisionRebuildsTheIndex() {
        // Restored from a snapshot at revision 5 (same cluster id), then written past the index's revision 7 by others.
        history.clear();
        history.add(new Change(PREFIX + "acct/2b", 6, true));
        currentRevision = 12;
        rebuiltAfterError(12);
    }

    @Test
    void afterADeleteAFailedWatchIsStartedAgainWhenTheDeletedKeyWasAliveJustBefore() {
        currentRevision = 9;
        watches.get(0).listener().onNext(delete(9));
        watches.get(0).listener().onError(new IllegalStateException("stream reset"));
        await("a second watch").atMost(Duration.ofSeconds(10)).until(() -> watches.size() == 2);
        assertThat(watches.get(1).revision()).isEqualTo(10);
        assertThat(index.rebuilds()).isZero();
    }

    @Test
    void afterADeleteARestoredHistoryWithoutTheDeletedKeyRebuildsTheIndex() {
        // The key is absent at revision 9 in the restored history too: only its create revision, read at 8, tells.
        watches.get(0).listener().onNext(delete(9));
        history.clear();
        history.add(new Change(PREFIX + "acct/2b", 6, true));
        currentRevision = 12;
        rebuiltAfterError(12);
    }

    @Test
    void afterADeleteARestoredHistoryWhereTheKeyStillLivesRebuildsTheIndex() {
        // Restored from a backup taken before the delete: the key is alive just before revision 9, as the index kept it,
        // and alive at 9 too.
        watches.get(0).listener().onNext(delete(9));
        history.clear();
        history.add(new Change(PREFIX + "acct/1f", 7, true));
        history.add(new Change(PREFIX + "acct/2b", 10, true));
        currentRevision = 12;
        rebuiltAfterError(12);
    }

    @Test
    void aCompactedWatchRebuildsTheIndex() {
        currentRevision = 30;
        int before = watches.size();
        watches.get(before - 1).listener()
                .onError(new IllegalStateException("etcdserver: mvcc: required revision has been compacted"));
        await("a watch of the rebuilt index").atMost(Duration.ofSeconds(15)).until(() -> watches.size() == before + 1);
        assertThat(index.from()).isEqualTo(30);
        assertThat(index.rebuilds()).isEqualTo(1);
    }

    @Test
    void otherWatchFailuresNeverRebuildTheIndex() {
        for (int failure = 1; failure <= 4; failure++) {
            watches.get(watches.size() - 1).listener().onError(new IllegalStateException("UNAVAILABLE " + failure));
            int expected = failure + 1;
            await("watch " + expected).atMost(Duration.ofSeconds(30)).until(() -> watches.size() == expected);
            assertThat(watches.get(expected - 1).revision()).isEqualTo(8);
        }
        assertThat(held(7)).isEqualTo(LockHistory.Outcome.HELD);
        assertThat(index.rebuilds()).isZero();
    }

    @Test
    void aWatchThatKeepsFailingWithResourceExhaustedFromOneRevisionRebuildsTheIndex() {
        // As jetcd reports it (an EtcdException from the gRPC status), and as gRPC does.
        List<Throwable> errors = List.of(
                EtcdExceptionFactory.toEtcdException(Status.RESOURCE_EXHAUSTED.withDescription("message too large")),
                new CompletionException(Status.RESOURCE_EXHAUSTED.asRuntimeException()));
        for (int failure = 1; failure <= 2; failure++) {
            watches.get(watches.size() - 1).listener().onError(errors.get(failure - 1));
            int expected = failure + 1;
            await("watch " + expected).atMost(Duration.ofSeconds(15)).until(() -> watches.size() == expected);
            assertThat(watches.get(expected - 1).revision()).isEqualTo(8);
            assertThat(held(7)).isEqualTo(LockHistory.Outcome.HELD);
        }
        currentRevision = 12;
        rebuiltAfterError(12, Status.RESOURCE_EXHAUSTED.asRuntimeException());
    }

    @Test
    void aWatchFailingWithResourceExhaustedInItsMessageOnlyIsNotRebuilt() {
        for (int failure = 1; failure <= 3; failure++) {
            watches.get(watches.size() - 1).listener().onError(new IllegalStateException("RESOURCE_EXHAUSTED " + failure));
            int expected = failure + 1;
            await("watch " + expected).atMost(Duration.ofSeconds(30)).until(() -> watches.size() == expected);
        }
        assertThat(index.rebuilds()).isZero();
    }

    private void rebuiltAfterError(long current) {
        rebuiltAfterError(current, new IllegalStateException("stream reset"));
    }

    private void rebuiltAfterError(long current, Throwable error) {
        int before = watches.size();
        watches.get(before - 1).listener().onError(error);
        await("a watch of the rebuilt index").atMost(Duration.ofSeconds(15)).until(() -> watches.size() == before + 1);
        assertThat(watches.get(before).revision()).isEqualTo(current + 1);
        assertThat(index.from()).isEqualTo(current);
        assertThat(index.answer(RESOURCE, 7, 0x1f)).as("revision 7 is below the rebuilt index").isNull();
        assertThat(index.rebuilds()).isEqualTo(1);
    }

    private LockHistory.Outcome held(long revision) {
        LockHistory.Verdict verdict = index.answer(RESOURCE, revision, 0x1f);
        return verdict == null ? null : verdict.outcome();
    }

    private WatchResponse put(long revision, long leaseId) {
        history.add(new Change(PREFIX + "acct/" + Long.toHexString(leaseId), revision, true));
        return response(Event.newBuilder().setType(Event.EventType.PUT).setKv(KeyValue.newBuilder()
                .setKey(ByteString.copyFromUtf8(PREFIX + "acct/" + Long.toHexString(leaseId))).setCreateRevision(revision)
                .setModRevision(revision).setLease(leaseId).setVersion(1)));
    }

    private WatchResponse delete(long revision) {
        history.add(new Change(PREFIX + "acct/1f", revision, false));
        return response(Event.newBuilder().setType(Event.EventType.DELETE)
                .setKv(KeyValue.newBuilder().setKey(ByteString.copyFromUtf8(PREFIX + "acct/1f")).setModRevision(revision)));
    }

    private static WatchResponse response(Event.Builder event) {
        // CHECKSTYLE:OFF: FullyQualifiedName jetcd's WatchResponse is imported, its protobuf message is not
        return new WatchResponse(io.etcd.jetcd.api.WatchResponse.newBuilder().addEvents(event).build());
        // CHECKSTYLE:ON: FullyQualifiedName
    }
}
