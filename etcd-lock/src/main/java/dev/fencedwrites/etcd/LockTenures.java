package dev.fencedwrites.etcd;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.CompactedException;
import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdException;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.OptionsUtil;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A local index of who held each lock under a prefix, revision by revision, so that {@link LockHistory}'s question
 * ("did lease L hold resource R's lock at revision T?") is answered without a read while T is in the index's range.
 * It is built from a snapshot of the prefix at revision S (paged range reads at S) and a watch from S + 1, which etcd
 * delivers in revision order with every event of a revision together. Per lock it keeps the periods during which one key
 * was the oldest under {@code <name>/} (the holder, exactly as {@link LockHistory}'s read at T finds it: lowest create
 * revision, with the lease the key carried at T); a key put again under another lease starts a new period.
 *
 * <p>Range: {@link #answer} answers T with {@code from <= T <= upTo}, where {@code upTo} is the highest revision of an
 * event applied (every event at or below it is applied; a response header's revision is not used, as etcd sets it above
 * the events of a catch-up batch) and {@code from} is S, raised as the oldest ended periods are dropped to keep at most
 * {@code maxEnded}. Outside it, or when two keys of one lock share the lowest create revision (etcd's order between them
 * is not defined), for a lock name over {@link #NAME_MAX_BYTES} and for a holder key known by its digest, it answers
 * {@code null} and the caller reads etcd. A watch error restarts the watch from {@code upTo + 1} (the jetcd watcher's
 * own resumption, from a header revision, could skip events) once etcd shows the index's last event ({@link #resume});
 * otherwise, and on a compacted revision, the index is built again at etcd's current revision. Thread-safe; jetcd is
 * never called holding this monitor (jetcd calls the listener under its own lock).
 */
public final class LockTenures implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LockTenures.class);
    /** The most revisions a start replays: a start revision further back starts at etcd's current revision less this. */
    public static final long MAX_REPLAY_REVISIONS = 1_000_000;
    /**
     * The longest lock name indexed, in bytes: keys under a longer name are not kept and their locks are read from etcd,
     * so that a tenure costs a few hundred bytes however long the record keys.
     */
    public static final int NAME_MAX_BYTES = 256;
    /** The longest part after {@code <name>/} kept as it is; a longer one is kept by its SHA-256. */
    static final int SUFFIX_MAX_BYTES = 64;
    private static final int SNAPSHOT_PAGE = 1_000;
    /**
     * Watches failing with RESOURCE_EXHAUSTED (a response above the client's message limit) from one revision before the
     * index is built again at etcd's current revision instead.
     */
    private static final int RESUMES_BEFORE_REBUILD = 3;
    private static final long RETRY_FIRST_MILLIS = 500;
    private static final long RETRY_MAX_MILLIS = 30_000;

    /** A key's change as a watch reports it: a put (with its create revision and lease) or a delete, at {@code revision}. */
    record Change(boolean put, String key, long createRevision, long revision, long leaseId) {
    }

    /** What a period knows of its holder key. */
    private enum Holder {
        /** {@code <name>/<hex of the lease it carries>}: the key is not kept, it follows from the name and the lease. */
        NAMED,
        /** Another key under the name, kept in {@link Period#key}. */
        OTHER,
        /** Two keys tie for the lowest create revision, or the holder's key is only known by its digest: not answered. */
        UNKNOWN
    }

    /** A key's time as the holder of its lock, over revisions [from, to). */
    private static final class Period {
        final Holder holder;
        /** With {@link Holder#OTHER}, the key (its bytes one char each); else null. */
        final String key;
        final long leaseId;
        final long created;
        final long from;
        long to = Long.MAX_VALUE;

        Period(Holder holder, String key, long leaseId, long created, long from) {
            this.holder = holder;
            this.key = key;
            this.leaseId = leaseId;
            this.created = created;
            this.from = from;
        }
    }

    /** A key alive under a lock: by its whole key, or by the SHA-256 of a key whose part after the name is long. */
    private static final class Live {
        final String id;
        final boolean digested;
        final long created;
        long leaseId;

        Live(String id, boolean digested, long created, long leaseId) {
            this.id = id;
            this.digested = digested;
            this.created = created;
            this.leaseId = leaseId;
        }
    }

    /** Live keys by create revision (etcd's Mutex order), then by key: the first is the holder unless the second ties. */
    private static final Comparator<Live> OLDEST_FIRST = Comparator.comparingLong((Live live) -> live.created)
            .thenComparing(live -> live.digested).thenComparing(live -> live.id);

    private static final class Lock {
        final String name;
        /** Live keys by {@link Live#id} (a digest prefixed with {@code "#"}), and the same keys oldest first. */
        final Map<String, Live> live = new HashMap<>(2);
        final TreeSet<Live> oldestFirst = new TreeSet<>(OLDEST_FIRST);
        final ArrayList<Period> periods = new ArrayList<>(1);
        /** Periods at the head of {@link #periods} dropped already (null). */
        int dropped;

        Lock(String name) {
            this.name = name;
        }

        Period open() {
            Period last = periods.size() > dropped ? periods.get(periods.size() - 1) : null;
            return last != null && last.to == Long.MAX_VALUE ? last : null;
        }

        /** The period holding {@code revision}, or null for nobody. */
        Period at(long revision) {
            int low = dropped;
            int high = periods.size() - 1;
            Period found = null;
            while (low <= high) {
                int mid = (low + high) >>> 1;
                Period period = periods.get(mid);
                if (period.from <= revision) {
                    found = period;
                    low = mid + 1;
                } else {
                    high = mid - 1;
                }
            }
            return found != null && revision < found.to ? found : null;
        }
    }

    private final KV kv;
    private final Watch watch;
    /** The prefix's UTF-8 bytes seen one char per byte (ISO-8859-1), as every key is held here. */
    private final String prefix;
    private final ByteSequence prefixBytes;
    private final Duration requestTimeout;
    private final int maxEnded;
    private final Map<String, Lock> locks = new HashMap<>();
    /** One entry per ended period, in the order they ended (and so by their end revision). */
    private final ArrayDeque<Lock> ended = new ArrayDeque<>();
    /** Written holding this monitor; volatile so that {@link #covers} reads them without it. */
    private volatile long from;
    private volatile long upTo;
    private int periods;
    private long rebuilds;
    private long clusterId;
    /** The revision the last failed watch was to resume from, and how many times in a row it failed from there. */
    private long lastResume;
    private int failedResumes;
    /** Builds in a row with no event applied in between: each waits twice as long as the one before, up to 30 s. */
    private int rebuildsInARow;
    /** The last event applied (its key and whether it was a put), or none since the snapshot of {@link #snapshotKeys} keys. */
    private String lastKey;
    private boolean lastPut;
    /** After a delete as the last event: the deleted key's create revision when the index kept it, else 0. */
    private long lastCreated;
    private long snapshotKeys;
    private int generation;
    private Watch.Watcher watcher;
    private volatile boolean started;
    private boolean closed;

    /**
     * @param kv             reads the snapshot
     * @param watch          watches the prefix
     * @param prefix         the lock prefix ({@code etcd.lock.prefix})
     * @param requestTimeout bound on each snapshot read
     * @param maxEnded       the most ended periods kept, positive; each is a few hundred bytes
     */
    public LockTenures(KV kv, Watch watch, String prefix, Duration requestTimeout, int maxEnded) {
        this.kv = kv;
        this.watch = watch;
        this.prefix = iso(prefix.getBytes(StandardCharsets.UTF_8));
        this.prefixBytes = ByteSequence.from(prefix, StandardCharsets.UTF_8);
        this.requestTimeout = requestTimeout;
        this.maxEnded = maxEnded;
    }

    /**
     * Starts the index at {@code revision} (at most {@link #MAX_REPLAY_REVISIONS} before etcd's current revision, and at
     * etcd's current revision if it is compacted) on the first call; later calls do nothing. Never waits for etcd: the
     * snapshot and the watch start in the background, and are retried with backoff while etcd does not answer.
     */
    public void startAt(long revision) {
        if (started) {
            return;
        }
        synchronized (this) {
            if (started || closed) {
                return;
            }
            started = true;
        }
        build(Math.max(1, revision), RETRY_FIRST_MILLIS);
    }

    /**
     * Whether {@link #answer} answers {@code resource} at revision {@code token} now, but for two keys tying for its holder
     * or a holder key kept by its digest (rare: both are keys no Mutex writes). A hint, read without this monitor: during
     * a rebuild it may say yes once for a revision {@link #answer} then leaves to a read.
     */
    public boolean covers(byte[] resource, long token) {
        long first = from;
        return first > 0 && first <= token && token <= upTo && indexes(resource);
    }

    /** Whether {@code resource}'s lock name is at most {@link #NAME_MAX_BYTES}, so its lock is indexed. */
    private boolean indexes(byte[] resource) {
        // Each byte encodes to at most 3: most keys fit without being scanned.
        return prefix.length() + 3L * resource.length <= NAME_MAX_BYTES || resource.length <= NAME_MAX_BYTES
                && prefix.length() + LockKeys.encodedLength(resource) <= NAME_MAX_BYTES;
    }

    /**
     * {@link LockHistory#check}'s verdict, {@link LockHistory.Outcome#HELD} or {@link LockHistory.Outcome#NOT_HELD} with
     * {@code upTo} as the current revision, when the index covers {@code token}; else {@code null}.
     *
     * @param resource the resource id, UTF-8 bytes (the record key)
     */
    public synchronized LockHistory.Verdict answer(byte[] resource, long token, long leaseId) {
        if (!(from > 0 && from <= token && token <= upTo)) {
            return null;
        }
        if (!indexes(resource)) {
            return null;
        }
        String name = prefix + LockKeys.encode(resource);
        Lock lock = locks.get(name);
        Period period = lock == null ? null : lock.at(token);
        if (period == null) {
            return new LockHistory.Verdict(LockHistory.Outcome.NOT_HELD, null, 0, upTo, 0);
        }
        if (period.holder == Holder.UNKNOWN) {
            return null;
        }
        if (period.holder == Holder.NAMED && period.leaseId == leaseId) {
            return new LockHistory.Verdict(LockHistory.Outcome.HELD, null, 0, upTo, period.created);
        }
        String key = period.holder == Holder.NAMED ? name + "/" + Long.toHexString(period.leaseId) : period.key;
        return new LockHistory.Verdict(LockHistory.Outcome.NOT_HELD,
                new String(key.getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8), period.leaseId, upTo, 0);
    }

    /** The lowest revision answered, 0 while the index is not built. */
    public synchronized long from() {
        return from;
    }

    /** The highest revision answered, 0 while the index is not built. */
    public synchronized long upTo() {
        return upTo;
    }

    /** Periods kept (held and ended), a measure of the index's memory. */
    public synchronized int periods() {
        return periods;
    }

    /**
     * Times the index was built again at etcd's current revision: its watch's revision compacted away, etcd showing another
     * history than the one indexed, or a watch failing with RESOURCE_EXHAUSTED from one revision.
     */
    public synchronized long rebuilds() {
        return rebuilds;
    }

    /** Replaces the index by the keys alive at {@code revision} ({@code snapshot}: puts), answering that revision only. */
    synchronized void reset(long revision, List<Change> snapshot) {
        snapshotKeys = snapshot.size();
        lastKey = null;
        locks.clear();
        ended.clear();
        periods = 0;
        for (Change change : snapshot) {
            apply(change, revision);
        }
        from = revision;
        upTo = revision;
    }

    /** Applies the events of one watch response, in order; each revision's events all arrive in one response. */
    synchronized void apply(List<Change> changes) {
        long last = upTo;
        for (Change change : changes) {
            if (change.revision() > last) {
                long removed = apply(change, change.revision());
                if (change.revision() >= changes.get(changes.size() - 1).revision()) {
                    lastKey = change.key();
                    lastPut = change.put();
                    lastCreated = removed;
                }
            }
        }
        for (Change change : changes) {
            upTo = Math.max(upTo, change.revision());
        }
        if (!changes.isEmpty()) {
            rebuildsInARow = 0;
        }
        while (ended.size() > maxEnded) {
            dropOldest();
        }
    }

    /**
     * Applies one key's change at {@code revision}; returns the create revision of the key a delete removed, 0 if it
     * removed no key the index keeps.
     */
    private long apply(Change change, long revision) {
        String key = change.key();
        if (!key.startsWith(prefix)) {
            return 0;
        }
        int slash = key.indexOf('/', prefix.length());
        if (slash < 0) {
            return 0; // under no lock's "<name>/"
        }
        if (slash > NAME_MAX_BYTES) {
            return 0; // a lock this index never answers
        }
        String name = key.substring(0, slash);
        boolean digested = key.length() - slash - 1 > SUFFIX_MAX_BYTES;
        String id = digested ? "#" + sha256(key) : key;
        long created = 0;
        Lock lock = locks.get(name);
        if (change.put()) {
            if (lock == null) {
                lock = new Lock(name);
                locks.put(name, lock);
            }
            Live existing = lock.live.get(id);
            if (existing == null) {
                Live added = new Live(id, digested, change.createRevision(), change.leaseId());
                lock.live.put(id, added);
                lock.oldestFirst.add(added);
            } else {
                existing.leaseId = change.leaseId();
            }
        } else if (lock != null) {
            Live removed = lock.live.remove(id);
            if (removed == null) {
                return 0;
            }
            lock.oldestFirst.remove(removed);
            created = removed.created;
        } else {
            return 0;
        }
        rehead(lock, revision);
        if (lock.live.isEmpty() && lock.periods.size() == lock.dropped) {
            locks.remove(name);
        }
        return created;
    }

    private static String sha256(String key) {
        try {
            return HexFormat.of()
                    .formatHex(MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.ISO_8859_1)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
    }

    /** Ends the open period and opens the next one at {@code revision} when the lock's holder or its lease changed. */
    private void rehead(Lock lock, long revision) {
        Live oldest = lock.oldestFirst.isEmpty() ? null : lock.oldestFirst.first();
        Live second = oldest == null ? null : lock.oldestFirst.higher(oldest);
        boolean tie = second != null && second.created == oldest.created;
        Period open = lock.open();
        Holder holder = oldest == null || tie || oldest.digested
                ? Holder.UNKNOWN
                : oldest.id.equals(lock.name + "/" + Long.toHexString(oldest.leaseId)) ? Holder.NAMED : Holder.OTHER;
        String key = holder == Holder.OTHER ? oldest.id : null;
        if (open != null && oldest != null && open.holder == holder && Objects.equals(open.key, key)
                && open.leaseId == oldest.leaseId && open.created == oldest.created) {
            return;
        }
        if (open != null) {
            if (open.from == revision) {
                lock.periods.remove(lock.periods.size() - 1); // held by nobody's measure: not even one revision
                periods--;
            } else {
                open.to = revision;
                ended.add(lock);
            }
        }
        if (oldest != null) {
            lock.periods.add(new Period(holder, key, oldest.leaseId, oldest.created, revision));
            periods++;
        }
    }

    /** Drops the period that ended first; nothing below its end revision is answered from now on. */
    private void dropOldest() {
        Lock lock = ended.poll();
        Period period = lock.periods.get(lock.dropped);
        lock.periods.set(lock.dropped, null);
        lock.dropped++;
        periods--;
        from = Math.max(from, period.to);
        if (lock.dropped > 16 && lock.dropped * 2 > lock.periods.size()) {
            lock.periods.subList(0, lock.dropped).clear();
            lock.dropped = 0;
        }
        if (lock.live.isEmpty() && lock.periods.size() == lock.dropped) {
            locks.remove(lock.name);
        }
    }

    private void build(long wanted, long retryMillis) {
        GetOption count = GetOption.builder().isPrefix(true).withCountOnly(true).build();
        kv.get(prefixBytes, count).orTimeout(requestTimeout.toMillis(), TimeUnit.MILLISECONDS)
                .thenCompose(now -> {
                    long current = now.getHeader().getRevision();
                    long cluster = now.getHeader().getClusterId();
                    long revision = Math.min(current, Math.max(wanted, current - MAX_REPLAY_REVISIONS));
                    return snapshot(revision, prefixBytes, SNAPSHOT_PAGE, new ArrayList<>())
                            .thenApply(changes -> {
                                install(revision, cluster, changes);
                                return revision;
                            });
                }).whenComplete((revision, error) -> {
                    if (error == null) {
                        LOG.info("lock tenure index of {} built at etcd revision {}", prefixBytes, revision);
                        return;
                    }
                    boolean compacted = compacted(error);
                    long wait = compacted ? 0 : retryMillis;
                    LOG.warn("cannot build the lock tenure index at revision {} yet ({}); retrying in {} ms", wanted,
                            error.getCause() == null ? error : error.getCause(), wait);
                    // A compacted start revision: start from etcd's current one (the wanted revision is below it).
                    later(wait, () -> build(compacted ? Long.MAX_VALUE : wanted, Math.min(RETRY_MAX_MILLIS, retryMillis * 2)));
                });
    }

    /**
     * The keys under the prefix at {@code revision} from {@code start}, {@code page} at a time (keys only); a page etcd cannot
     * send within the client's message limit is asked again at half the size.
     */
    private CompletableFuture<List<Change>> snapshot(long revision, ByteSequence start, int page, List<Change> changes) {
        GetOption option = GetOption.builder().withRange(OptionsUtil.prefixEndOf(prefixBytes)).withRevision(revision)
                .withLimit(page).withKeysOnly(true).build();
        return kv.get(start, option).orTimeout(requestTimeout.toMillis(), TimeUnit.MILLISECONDS).handle((response, error) -> {
            if (error != null) {
                if (page > 1 && resourceExhausted(error)) {
                    return snapshot(revision, start, page / 2, changes);
                }
                return CompletableFuture.<List<Change>>failedFuture(error);
            }
            ByteSequence last = null;
            for (KeyValue kv : response.getKvs()) {
                changes.add(new Change(true, iso(kv.getKey().getBytes()), kv.getCreateRevision(), kv.getModRevision(),
                        kv.getLease()));
                last = kv.getKey();
            }
            if (!response.isMore() || last == null) {
                return CompletableFuture.completedFuture(changes);
            }
            byte[] after = Arrays.copyOf(last.getBytes(), last.size() + 1);
            return snapshot(revision, ByteSequence.from(after), page, changes);
        }).thenCompose(next -> next);
    }

    private void install(long revision, long cluster, List<Change> snapshot) {
        int mine;
        synchronized (this) {
            if (closed) {
                return;
            }
            reset(revision, snapshot);
            clusterId = cluster;
            failedResumes = 0;
            mine = ++generation;
        }
        watchFrom(mine, revision + 1);
    }

    /**
     * Watches the prefix from {@code revision} for generation {@code mine}. Never called holding this monitor: jetcd calls
     * the listener under its own lock, which the listener follows with this monitor.
     */
    private void watchFrom(int mine, long revision) {
        WatchOption option = WatchOption.builder().isPrefix(true).withRevision(revision).build();
        Watch.Watcher started;
        try {
            started = watch.watch(prefixBytes, option, Watch.listener(response -> onEvents(mine, response),
                    error -> onWatchError(mine, error), () -> onWatchError(mine, new IllegalStateException("watch ended"))));
        } catch (RuntimeException e) {
            onWatchError(mine, e);
            return;
        }
        boolean current;
        synchronized (this) {
            current = mine == generation && !closed;
            if (current) {
                watcher = started;
            }
        }
        if (!current) {
            started.close();
        }
    }

    private void onEvents(int mine, WatchResponse response) {
        List<Change> changes = new ArrayList<>(response.getEvents().size());
        for (WatchEvent event : response.getEvents()) {
            KeyValue kv = event.getKeyValue();
            boolean put = event.getEventType() == WatchEvent.EventType.PUT;
            if (put || event.getEventType() == WatchEvent.EventType.DELETE) {
                changes.add(new Change(put, iso(kv.getKey().getBytes()), kv.getCreateRevision(), kv.getModRevision(),
                        kv.getLease()));
            }
        }
        synchronized (this) {
            if (mine == generation && !closed) {
                apply(changes);
            }
        }
    }

    /**
     * A watch failed or ended: stops it, and watches again from the revision after the last event applied once etcd shows
     * the history the index holds ({@link #resume}). A compacted revision, or {@value #RESUMES_BEFORE_REBUILD} failures
     * with RESOURCE_EXHAUSTED from one revision, builds the index again at etcd's current revision.
     */
    private void onWatchError(int mine, Throwable error) {
        Watch.Watcher old;
        long from;
        int next;
        boolean rebuild;
        synchronized (this) {
            if (mine != generation || closed) {
                return;
            }
            next = ++generation;
            old = watcher;
            watcher = null;
            from = upTo + 1;
            failedResumes = from == lastResume ? failedResumes + 1 : 1;
            lastResume = from;
            // Compacted: the events after upTo are gone. Too large a response, again and again from one revision: the
            // watch cannot pass it (the client's message limit). Anything else: etcd restarting, unreachable, a leader
            // change; the history up to upTo stays true, so the index keeps answering it and watches again.
            rebuild = compacted(error)
                    || resourceExhausted(error) && failedResumes >= RESUMES_BEFORE_REBUILD;
            if (rebuild) {
                invalidate();
            }
        }
        if (old != null) {
            CompletableFuture.runAsync(old::close);
        }
        if (rebuild) {
            rebuildLater("the lock tenure index's watch from revision " + from + " failed (" + error + ")");
        } else {
            long wait = Math.min(RETRY_MAX_MILLIS, RETRY_FIRST_MILLIS << Math.min(10, failedResumes - 1));
            LOG.info("the lock tenure index's watch failed ({}); watching again from revision {} in {} ms", error.toString(),
                    from, wait);
            later(wait, () -> resume(next, from, wait));
        }
    }

    /** Nothing is answered until a new snapshot; called holding this monitor. */
    private void invalidate() {
        from = 0;
        upTo = 0;
        rebuilds++;
    }

    /** Builds the index again at etcd's current revision, waiting longer for each build in a row with no event between. */
    private void rebuildLater(String why) {
        long wait;
        synchronized (this) {
            wait = Math.min(RETRY_MAX_MILLIS, RETRY_FIRST_MILLIS << Math.min(10, rebuildsInARow));
            rebuildsInARow++;
        }
        LOG.warn("{}; building the lock tenure index again at etcd's current revision in {} ms (older tokens are read from "
                + "etcd)", why, wait);
        later(wait, () -> build(Long.MAX_VALUE, RETRY_FIRST_MILLIS));
    }

    /**
     * Watches again from {@code revision} once etcd shows the history the index holds: the same cluster, and at revision
     * {@code revision - 1} the index's last event (its key put at that revision; after its delete, the key absent there
     * and, when the index kept it, alive one revision before with the create revision it kept; with no event since the
     * snapshot, as many keys under the prefix as the snapshot had). A history that differs there (etcd
     * restored from a snapshot, another cluster), a revision etcd has not reached or has compacted builds the index again.
     * While etcd does not answer, asks again with backoff from {@code waited} ms, keeping the index: its history up to its
     * last event stays what it is.
     */
    private void resume(int mine, long revision, long waited) {
        long at = revision - 1;
        String key;
        boolean put;
        long created;
        long keys;
        long cluster;
        synchronized (this) {
            key = lastKey;
            put = lastPut;
            created = lastCreated;
            keys = snapshotKeys;
            cluster = clusterId;
        }
        GetOption check = key == null
                ? GetOption.builder().isPrefix(true).withCountOnly(true).withRevision(at).build()
                : GetOption.builder().withRevision(at).build();
        ByteSequence read = key == null ? prefixBytes : ByteSequence.from(key.getBytes(StandardCharsets.ISO_8859_1));
        // Null when etcd shows the index's last event, else what differs.
        CompletableFuture<String> differs = get(read, check).thenCompose(now -> {
            if (now.getHeader().getClusterId() != cluster) {
                return CompletableFuture.completedFuture("cluster " + Long.toHexString(now.getHeader().getClusterId())
                        + ", the index's cluster " + Long.toHexString(cluster));
            }
            boolean same = key == null
                    ? now.getCount() == keys
                    : put ? now.getKvs().size() == 1 && now.getKvs().get(0).getModRevision() == at : now.getKvs().isEmpty();
            if (!same || key == null || put || created == 0) {
                return CompletableFuture.completedFuture(same ? null : "another last event");
            }
            // Absent after its delete, as in any history without the key: it must also be alive just before, created
            // where the index kept it.
            return get(read, GetOption.builder().withRevision(at - 1).build()).thenApply(before -> before.getKvs().size() == 1
                    && before.getKvs().get(0).getCreateRevision() == created ? null : "another key deleted last");
        });
        differs.whenComplete((difference, error) -> {
            boolean unanswered = error != null && !compacted(error) && !future(error);
            boolean same = error == null && difference == null;
            synchronized (this) {
                if (mine != generation || closed) {
                    return;
                }
                if (!unanswered && !same) {
                    generation++;
                    invalidate();
                }
            }
            if (unanswered) {
                long wait = Math.min(RETRY_MAX_MILLIS, Math.max(RETRY_FIRST_MILLIS, waited * 2));
                LOG.info("the lock tenure index cannot watch again from revision {} yet ({}); trying again in {} ms", revision,
                        error.getCause() == null ? error : error.getCause(), wait);
                later(wait, () -> resume(mine, revision, wait));
            } else if (same) {
                watchFrom(mine, revision);
            } else {
                rebuildLater("etcd does not show the history the lock tenure index holds at revision " + at + " ("
                        + (error != null ? error.toString() : difference) + ")");
            }
        });
    }

    private CompletableFuture<GetResponse> get(ByteSequence key, GetOption option) {
        return kv.get(key, option).orTimeout(requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Whether etcd or gRPC refused a response over the client's message limit (gRPC's RESOURCE_EXHAUSTED status). */
    static boolean resourceExhausted(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof EtcdException etcd
                    ? etcd.getErrorCode() == ErrorCode.RESOURCE_EXHAUSTED
                    : Status.fromThrowable(t).getCode() == Status.Code.RESOURCE_EXHAUSTED) {
                return true;
            }
        }
        return false;
    }

    private static boolean future(Throwable error) {
        return LockHistory.outOfRange(error) == LockHistory.Outcome.FUTURE;
    }

    private void later(long millis, Runnable action) {
        if (!isClosed()) {
            CompletableFuture.delayedExecutor(millis, TimeUnit.MILLISECONDS).execute(() -> {
                if (!isClosed()) {
                    action.run();
                }
            });
        }
    }

    private static boolean compacted(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof CompactedException) {
                return true;
            }
        }
        return LockHistory.outOfRange(error) == LockHistory.Outcome.COMPACTED;
    }

    private synchronized boolean isClosed() {
        return closed;
    }

    private static String iso(byte[] bytes) {
        return new String(bytes, StandardCharsets.ISO_8859_1);
    }

    @Override
    public void close() {
        Watch.Watcher old;
        synchronized (this) {
            closed = true;
            generation++;
            old = watcher;
            watcher = null;
        }
        if (old != null) {
            old.close();
        }
    }
}
