package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.Decision;
import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceOp;
import dev.fencedwrites.contract.FenceRule;
import dev.fencedwrites.contract.FenceStamp;
import dev.fencedwrites.contract.HeaderLookup;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.contract.ResourceId;
import dev.fencedwrites.enforcer.FenceEnforcerTopology;
import dev.fencedwrites.enforcer.PartitionMismatch;
import dev.fencedwrites.enforcer.TokenVerifier;
import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.Cancellable;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Decides each input record by {@link FenceRule} against its key's stored fence and routes it: accepted records unchanged
 * to the accepted output, rejected ones with {@code fence.rejected.*} and {@code fence.source.*} headers to the rejected
 * output, winning FENCE markers to the markers output. Before a raise it asks the {@link TokenVerifier} (verified
 * tokens); under {@code at_least_once} a replayed record gets its first outcome ({@link ReplayTracker}); every output is
 * bounded by {@link FenceEnforcerTopology.Limits}. Sources: docs/concepts/decision-rule.md,
 * docs/concepts/verified-tokens.md, docs/concepts/processing-guarantees.md, docs/concepts/partitioning.md. The outputs
 * are {@link FenceOutputs}', the replay bookkeeping {@link ReplayTracker}'s, the lease checks {@link LeaseCheck}'s and
 * the committed-read bookkeeping {@link PendingFences}'; this class decides.
 */
public final class FenceProcessor implements Processor<byte[], byte[], byte[], byte[]> {
    /**
     * Rejections that could come out otherwise if the record were decided again: against etcd's revision now, a limit read
     * at start, compaction and (under the accept policy) the lock's holder now. Under at_least_once they are remembered.
     */
    static final Set<RejectionReason> MAY_COME_OUT_OTHERWISE = EnumSet.of(RejectionReason.FUTURE_TOKEN,
            RejectionReason.TOO_LARGE, RejectionReason.UNVERIFIABLE_TOKEN);
    /** The longest {@code fence.lease} or {@code fence.writer} copied onto a published marker. */
    static final int MARKER_TEXT_HEADER_MAX_CHARS = 256;

    private final String storeName;
    private final String commitSignalName;
    private final String acceptedSink;
    private final String rejectedSink;
    private final EnforcerMetrics metrics;
    private final FenceEnforcerTopology.Limits limits;
    private final MarkerOutput markers;
    private final TokenVerifier verifier;
    private final String inputTopic;
    private final PartitionMismatch mismatch;
    private final CommittedFences committedFences;
    private final FenceExpiry expiry;
    private PendingFences pending;
    /** The changelog watch's idle check; {@code null} without a watch. */
    private Cancellable idleCheck;
    /** The partition's expiry floor and scan; {@code null} when fence expiry is off. */
    private ExpiryPass expiryPass;
    /**
     * With fence expiry off: the floor a run with it on left in the store (0: none). It still applies: the fences below it
     * are gone, and without it a zombie's write to such a key would pass; it is only never raised.
     */
    private long keptFloor;
    private ProcessorContext<byte[], byte[]> context;
    private KeyValueStore<Bytes, StoredFence> fences;
    private CommitSignal commits;
    private boolean keepHistory;
    private ReplayTracker replay;
    private FenceOutputs outputs;
    private LeaseCheck leases;
    /** Under at_least_once, what keeps the changelog's last record of each key at its fence; {@code null} otherwise. */
    private ChangelogWatch changelogWatch;

    /** A record's input position: its input partition ({@link StoredFence#OWN} for this task's) and offset (-1: unknown). */
    private record Position(int from, long offset) {
    }

    /**
     * Where winning markers go.
     *
     * @param sink        the topology's sink node for the markers topic
     * @param targetTopic the accepted topic, named in each published marker's {@code fence.marker.target.topic}
     */
    public record MarkerOutput(String sink, String targetTopic) {
    }

    /**
     * The names of the processor's neighbours in the topology.
     *
     * @param store        the fence store
     * @param commitSignal the {@link CommitSignal} store connected to this processor
     * @param acceptedSink the sink node of the accepted topic; {@code rejectedSink} and {@code markersSink} likewise
     */
    public record Nodes(String store, String commitSignal, String acceptedSink, String rejectedSink, String markersSink) {
    }

    /**
     * The fence processor of a topology built from {@code settings}: its limits (each key must arrive on the partition
     * murmur2 assigns it, and each output takes records up to a size), its markers topic, token verifier, partition
     * mismatch policy (under {@code REROUTE} a record read from any other topic than the input came through the
     * repartition topic) and committed-fence bookkeeping.
     *
     * @throws IllegalArgumentException when the limits name fewer than one input partition
     */
    public FenceProcessor(Nodes nodes, FenceEnforcerTopology.Settings settings, EnforcerMetrics metrics) {
        this.limits = settings.limits();
        if (limits.inputPartitions() < 1) {
            throw new IllegalArgumentException("inputPartitions must be at least 1, got " + limits.inputPartitions());
        }
        this.storeName = nodes.store();
        this.commitSignalName = nodes.commitSignal();
        this.acceptedSink = nodes.acceptedSink();
        this.rejectedSink = nodes.rejectedSink();
        this.markers = settings.markers().map(topic -> new MarkerOutput(nodes.markersSink(), settings.accepted())).orElse(null);
        this.verifier = settings.verifier().orElse(null);
        this.mismatch = settings.partitionMismatch();
        this.inputTopic = mismatch == PartitionMismatch.REROUTE ? settings.input() : null;
        this.committedFences = settings.committedFences().orElse(null);
        this.expiry = settings.expiry().orElse(null);
        this.metrics = metrics;
    }

    @Override
    public void init(ProcessorContext<byte[], byte[]> context) {
        this.context = context;
        this.fences = context.getStateStore(storeName);
        this.keepHistory = !StreamsConfig.EXACTLY_ONCE_V2
                .equals(context.appConfigs().get(StreamsConfig.PROCESSING_GUARANTEE_CONFIG));
        this.replay = new ReplayTracker(metrics);
        this.outputs = new FenceOutputs(context, acceptedSink, rejectedSink, markers, metrics, limits, replay);
        this.leases = verifier == null ? null : new LeaseCheck(verifier, outputs);
        this.commits = context.getStateStore(commitSignalName);
        commits.listen(replay::committed);
        if (keepHistory) {
            String changelog = context.applicationId() + "-" + storeName + "-changelog";
            changelogWatch = ChangelogWatch.start(fences, changelog, context.appConfigs(), context.taskId(), metrics)
                    .orElse(null);
            if (changelogWatch != null) {
                idleCheck = context.schedule(ChangelogWatch.IDLE_CHECK, PunctuationType.WALL_CLOCK_TIME,
                        at -> changelogWatch.checkIdle());
            }
        }
        if (committedFences != null) {
            pending = committedFences.open(context.taskId().partition(), context);
        }
        if (expiry != null) {
            expiryPass = new ExpiryPass(expiry, context, fences, pending);
        } else {
            keptFloor = ExpiryPass.storedFloor(fences);
        }
    }

    /** The partition's expiry floor (0: none). */
    private long floor() {
        return expiryPass != null ? expiryPass.floor() : keptFloor;
    }

    @Override
    public void close() {
        if (expiryPass != null) {
            expiryPass.close();
        }
        if (pending != null) {
            pending.close();
        }
        if (commits != null) {
            commits.stopListening();
        }
        if (replay != null) {
            replay.close();
        }
        if (idleCheck != null) {
            // Kafka Streams keeps a task's punctuation queue when it revives the task after a corruption: left scheduled,
            // the check would run against the watch closed here.
            idleCheck.cancel();
            idleCheck = null;
        }
        if (changelogWatch != null) {
            changelogWatch.close();
        }
    }

    @Override
    public void process(Record<byte[], byte[]> arrived) {
        if (changelogWatch != null) {
            changelogWatch.repair();
        }
        Optional<Origin> origin = Origin.of(context, inputTopic, arrived.headers());
        boolean rerouted = origin.map(Origin::rerouted).orElse(false);
        Record<byte[], byte[]> record = rerouted ? arrived.withHeaders(PartitionRoute.withoutOrigin(arrived.headers())) : arrived;
        outputs.origin(origin);
        // The replay history's positions are input positions: the task's own input partition (OWN)
        // for records read from the input, the partition a re-routed record was written to for the
        // others, so that a copy the sender wrote twice is recognised by its input offset.
        int from = rerouted ? origin.get().partition() : StoredFence.OWN;
        long offset = origin.filter(o -> o.committed() >= 0).map(Origin::offset).orElse(-1L);
        if (offset >= 0 && !rerouted) {
            replay.position(origin.get().partition(), offset);
        }
        replay.replaying(false);
        byte[] key = record.key();
        if (rejectedBeforeTheStore(record, key, rerouted)) {
            return;
        }
        if (offset >= 0 && rerouted) {
            // After the owner check: a record written straight to another partition of the repartition topic steers nothing.
            replay.rerouted(from, origin.get().committed());
        }
        Bytes storeKey = Bytes.wrap(key);
        StoredFence state = fences.get(storeKey);
        replay.replaying(state != null && state.remembers(from, offset));
        Fence stored = state == null ? null : state.fenceAt(from, offset);
        FenceStamp.Parsed parsed = FenceStamp.parse(HeaderLookup.of(record.headers()));
        if (!parsed.valid()) {
            outputs.reject(record, parsed.rejection(), stored, parsed.detail());
            return;
        }
        FenceStamp stamp = parsed.stamp();
        RejectionReason first = replay.replaying() ? state.rejectedAt(from, offset) : null;
        if (first != null) {
            // A rejection that could come out otherwise now (a wall-clock or start-time check): the replay repeats it.
            outputs.reject(record, first, stored, "incoming " + stamp.fence() + ": rejected " + first
                    + " when first processed, and decided the same way again (at_least_once replay)");
            return;
        }
        if (belowFloor(record, stamp, stored)) {
            return;
        }
        Position at = new Position(from, offset);
        if (acceptable(record, key, stamp, stored)) {
            accept(record, storeKey, state, at, stamp, stored);
        }
        if (MAY_COME_OUT_OTHERWISE.contains(outputs.rejectedFor())) {
            rememberRejection(storeKey, state, at, outputs.rejectedFor());
        }
    }

    /**
     * Under at_least_once, stores that the record at {@code at} was rejected for {@code reason}, a rejection that could
     * come out otherwise if it were decided again (FUTURE_TOKEN against etcd's revision now, TOO_LARGE against a limit read
     * at start, UNVERIFIABLE_TOKEN against compaction and, under the accept policy, the lock's holder now): a replay after
     * a crash then repeats it instead of putting the record on both topics ({@link StoredFence#afterRejection}). Only for
     * a key the store already holds: a key's first record stores nothing when rejected, so records forged for ever new
     * keys cannot grow the store.
     */
    private void rememberRejection(Bytes storeKey, StoredFence state, Position at, RejectionReason reason) {
        if (!keepHistory || replay.replaying() || state == null || at.offset() < 0 || !limits.storable(storeKey.get())) {
            return;
        }
        StoredFence next = StoredFence.afterRejection(state, at.from(), at.offset(), reason, replay.committedOffset(at.from()));
        if (next != state) {
            fences.put(storeKey, next);
        }
    }

    /**
     * Rejects, STALE_TOKEN against the floor, a record whose token is below the partition's expiry floor when its key has no
     * stored fence at or above it (a key whose fence was dropped, or that never had one): the key is fenced at
     * {@code (floor, no seq)}, which is what the rule decides against, and every token below it belongs to a lock tenure that
     * has ended (docs/concepts/fence-expiry.md). Any other record is decided by the rule as without expiry; a replay
     * (at_least_once history) is decided against its history.
     */
    private boolean belowFloor(Record<byte[], byte[]> record, FenceStamp stamp, Fence stored) {
        long floor = floor();
        if (floor <= 0 || replay.replaying() || stamp.fence().token() >= floor || stored != null && stored.token() >= floor) {
            return false;
        }
        outputs.rejectBelowFloor(record, floor, "incoming " + stamp.fence()
                + " is below the expiry floor " + floor + " of partition " + context.taskId().partition()
                + ": every token below it belongs to a lock tenure that has ended (fences below etcd's oldest live lock "
                + "are expired)");
        return true;
    }

    /** Rejects a record that no stored fence could admit: no key, the wrong partition, or a rejected copy sent back. */
    private boolean rejectedBeforeTheStore(Record<byte[], byte[]> record, byte[] key, boolean rerouted) {
        if (key == null || key.length == 0) {
            outputs.reject(record, RejectionReason.MISSING_KEY, null, key == null ? "null key" : "empty key");
            return true;
        }
        int inputPartitions = limits.inputPartitions();
        int expected = PartitionRoute.owner(key, inputPartitions);
        int actual = context.recordMetadata().map(RecordMetadata::partition).orElse(expected);
        if (rerouted && actual != expected && limits.rerouteOwnerChecked()) {
            // Written straight to the repartition topic (the enforcer's partitioner sends each record to its key's
            // owner): this task has no fence for the key, so deciding here could accept a stale write.
            outputs.reject(record, RejectionReason.WRONG_PARTITION, null, "record read from partition " + actual
                    + " of the repartition topic, but its key's fence lives with partition " + expected + " of "
                    + inputPartitions + " (murmur2): only the enforcer writes the repartition topic");
            return true;
        }
        if (!rerouted && actual != expected) {
            // The fence of this key lives with partition `expected`; deciding here would compare
            // against the wrong (or no) stored fence and could accept a stale write.
            if (mismatch == PartitionMismatch.REROUTE) {
                outputs.reject(record, RejectionReason.TOO_LARGE, null, "record of up to "
                        + RecordSize.upperBound(key, record.value(), record.headers()) + " bytes on partition " + actual
                        + " does not fit, with the re-route header, the repartition topic (" + limits.rerouteMaxBytes()
                        + " bytes: its max.message.bytes, capped by max.request.size) on its way to partition " + expected
                        + ", where its key's fence lives");
            } else {
                outputs.reject(record, RejectionReason.WRONG_PARTITION, null,
                        "key hashes to partition " + expected + " of " + inputPartitions
                                + " (murmur2, Kafka's default partitioner) but the record is on partition " + actual
                                + " (partition.mismatch.policy=reject)");
            }
            return true;
        }
        String rejectedBefore = FenceOutputs.rejectedBefore(record.headers());
        if (rejectedBefore != null) {
            // A rejected copy sent back: accepted as it is, it would carry its old rejection to the
            // accepted topic and the sink would refuse it there (review).
            outputs.reject(record, RejectionReason.ALREADY_REJECTED, null, "the record already carries " + rejectedBefore
                    + ": strip the fence.rejected.* headers before sending a rejected write again");
            return true;
        }
        if (!ResourceId.isUtf8(key)) {
            // One resource, one fence, one row: a Connect StringConverter would map every such key to the same text.
            outputs.reject(record, RejectionReason.MALFORMED_KEY, null,
                    "the " + key.length + "-byte record key is not valid UTF-8; the resource id must be UTF-8 text");
            return true;
        }
        return false;
    }

    /** Whether the rule accepts {@code stamp} against {@code stored} and the record fits every output; rejects it when not. */
    private boolean acceptable(Record<byte[], byte[]> record, byte[] key, FenceStamp stamp, Fence stored) {
        Decision decision = FenceRule.decide(stored, stamp.fence());
        if (!decision.accepted()) {
            outputs.reject(record, decision.reason(), stored, "incoming " + stamp.fence() + " vs stored " + stored);
            return false;
        }
        if (stamp.op() == FenceOp.FENCE && record.value() != null) {
            outputs.reject(record, RejectionReason.INVALID_MARKER, stored,
                    "FENCE marker with a " + record.value().length + "-byte value");
            return false;
        }
        if (stamp.op() == FenceOp.WRITE
                && RecordSize.upperBound(record.key(), record.value(), record.headers()) > limits.acceptedMaxBytes()) {
            // Not accepted, so the fence stays where it was.
            outputs.reject(record, RejectionReason.TOO_LARGE, stored,
                    "record of up to " + RecordSize.upperBound(record.key(), record.value(),
                            record.headers()) + " bytes exceeds the " + limits.acceptedMaxBytes()
                            + " bytes the accepted topic takes (its max.message.bytes and the producer's max.request.size)");
            return false;
        }
        if (!limits.storable(key)) {
            // Its fence could not reach the changelog, and a fence that is not in the changelog
            // is lost on restore: so the key is never stored, and nothing is decided for it.
            outputs.reject(record, RejectionReason.KEY_TOO_LARGE, stored, key.length + "-byte key with its fence exceeds the "
                    + limits.storeMaxBytes()
                    + " bytes the fence store's changelog takes (its max.message.bytes and the producer's max.request.size)");
            return false;
        }
        return true;
    }

    /** Raises the key's fence (unless replaying) and routes an acceptable record, after the replay and lease checks. */
    private void accept(Record<byte[], byte[]> record, Bytes storeKey, StoredFence state, Position at, FenceStamp stamp,
            Fence stored) {
        Fence before = stored;
        Fence raised = FenceRule.raise(stored, stamp.fence());
        if (replay.replaying() && !state.acceptedAt(at.from(), at.offset(), raised)) {
            // Not the accept the history holds at this offset. If the verifier refuses the token
            // against the fence the record met the first time, that is why it was not accepted
            // then (etcd's answers about past revisions do not change), and it gets the same
            // rejection again (found by EnforcerCrashIT's at_least_once run).
            if (leases != null && !leases.verified(record, storeKey.get(), stamp, stored)) {
                return;
            }
            // Otherwise the input's offsets were reset or the topic recreated: decide against the current fence, as without
            // replay.
            replay.replaying(false);
            Decision current = FenceRule.decide(state.fence(), stamp.fence());
            if (!current.accepted()) {
                outputs.reject(record, current.reason(), state.fence(),
                        "incoming " + stamp.fence() + " vs stored " + state.fence());
                return;
            }
            before = state.fence();
            raised = FenceRule.raise(before, stamp.fence());
        }
        long lease = 0;
        if (!replay.replaying() && leases != null) {
            // Token verification: the token must be one the lock service issued to this key's lock under
            // the record's lease, for a raise and for a write at the fence alike: tokens are not
            // unique across locks (waiters woken by one change get the same revision), so a token
            // equal to the fence may be another lock's. Only one lease holds a lock at a revision.
            lease = leases.verifiedLease(record, storeKey.get(), stamp, before, state);
            if (lease <= 0 || leases.endedBelowFloor(record, stamp, before, floor())) {
                return;
            }
        }
        if (replay.replaying()) {
            replay.replayed(stamp.op() == FenceOp.FENCE ? "marker" : "accepted");
        } else {
            remember(storeKey, state, at, raised, lease);
        }
        if (stamp.op() == FenceOp.FENCE) {
            outputs.markerAccepted(record, stamp, before);
        } else {
            outputs.accepted(record);
        }
    }

    /**
     * Stores the key's value after an accept, and asks for a commit each time the key's history
     * reaches another {@value StoredFence#COMMIT_REQUEST_ACCEPTS} accepts (once, not on every accept,
     * should commits be slow to come), and when the keys pending a commit reach {@value PendingFences#COMMIT_REQUEST_KEYS}.
     */
    private void remember(Bytes storeKey, StoredFence previous, Position at, Fence raised, long lease) {
        StoredFence next = keepHistory
                ? StoredFence.afterAccept(previous, at.from(), at.offset(), raised, replay.committedOffset(at.from()), lease)
                : StoredFence.of(raised, lease);
        // Before the put: a query that reads the new fence from the store then finds the key pending (PendingFences).
        boolean manyPending = pending != null && pending.written(storeKey, previous == null ? null : previous.fence(), raised);
        fences.put(storeKey, next);
        int count = next.acceptCount();
        if (manyPending || count > 0 && count < StoredFence.MAX_ACCEPTS && count % StoredFence.COMMIT_REQUEST_ACCEPTS == 0) {
            context.commit();
        }
    }
}
