package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.Decision;
import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.enforcer.FenceEnforcerTopology;
import dev.fencedwrites.enforcer.TokenVerifier;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceOp;
import dev.fencedwrites.contract.FenceRule;
import dev.fencedwrites.contract.FenceStamp;
import dev.fencedwrites.contract.HeaderLookup;
import dev.fencedwrites.contract.RejectionReason;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Applies {@link FenceRule} to each input record against the key's stored fence, and routes it:
 * accepted records go to the accepted sink unchanged (key, value and headers byte for byte);
 * rejected ones go to the rejected sink with the {@code fence.rejected.*} and
 * {@code fence.source.*} headers added. A winning FENCE marker raises the fence and, when a markers
 * output is set, is published there (null value, its fence headers, {@code fence.marker.target.topic}
 * and {@code fence.source.*}) so that the sink raises the row's fence too (issue 13). Every
 * output is bounded by {@link FenceEnforcerTopology.Limits} (issue 13): an accepted copy that
 * would not fit is rejected {@code TOO_LARGE}, a key whose fence would not fit the changelog is
 * rejected {@code KEY_TOO_LARGE} and never stored, and a rejected copy is reduced until it fits
 * ({@link RejectedCopy}).
 *
 * <p>Replay (issue 13): under {@code at_least_once} the fence store can be ahead of the committed
 * input offsets after a crash. A record the key's {@link StoredFence} remembers (its offset lies in
 * the key's accept history) is decided against the fence it met the first time, so it gets the same
 * outcome: an accepted write is forwarded again (its first copy may have been lost with the
 * producer's buffer), a rejected one is rejected again; the store is not written. A remembered
 * offset whose record would be accepted but is not the accept the history holds (the input's offsets
 * were reset or the topic recreated) is decided against the key's current fence instead, so a replay
 * never accepts what the current fence rejects unless the history says it was accepted at that
 * offset. The history needs to know the task's commits ({@link CommitSignal}); under
 * {@code exactly_once_v2} the store is never ahead of the offsets and no history is kept.
 *
 * <p>Verified tokens (issue 14): with a {@link TokenVerifier}, a record the decision rule would
 * accept (a raise, or a write at the key's current token) is accepted only if the verifier confirms
 * that its {@code fence.lease} held the key's lock at revision = token; otherwise it is rejected with
 * the verifier's reason ({@code FUTURE_TOKEN}, {@code LOCK_NOT_HELD}, {@code UNVERIFIABLE_TOKEN}), or
 * {@code MISSING_LEASE}/{@code MALFORMED_LEASE}, and the fence does not move. The store keeps the
 * lease confirmed for the fence's token ({@link StoredFence#lease()}): a write at that token is
 * compared with it, without asking etcd, and refused {@code LOCK_NOT_HELD} under any other lease. The check runs after
 * every cheaper rule (stale and duplicate records never reach it), and a replayed record that the
 * key's history says was accepted is not checked again (it was verified the first time).
 */
public final class FenceProcessor implements Processor<byte[], byte[], byte[], byte[]> {
    private static final Logger LOG = LoggerFactory.getLogger(FenceProcessor.class);
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
    private ProcessorContext<byte[], byte[]> context;
    private KeyValueStore<Bytes, StoredFence> fences;
    private CommitSignal commits;
    private boolean keepHistory;
    /** The input partition and the offset after the last record processed since init; -1 before the first. */
    private int partition;
    private long nextOffset;
    /** The input offset after the last record processed before the last commit: no replay starts before it. */
    private long committed;
    private long replayed;
    private long replayedSinceCommit;
    /** Whether the record being processed is decided against its key's history, as a replay. */
    private boolean replaying;

    /**
     * Where winning markers go.
     *
     * @param sink        the topology's sink node for the markers topic
     * @param targetTopic the accepted topic, named in each published marker's {@code fence.marker.target.topic}
     */
    public record MarkerOutput(String sink, String targetTopic) {
    }

    /**
     * @param limits           the input's partition count (each key must arrive on the partition Kafka's
     *                         default partitioner, murmur2, assigns it) and the largest record each output takes
     * @param commitSignalName the {@link CommitSignal} store connected to this processor
     * @param markers          where winning markers are published, or {@code null} to only raise the fence
     * @param verifier         checks the token of every record the rule would accept (issue 14), or {@code null} to believe every token
     */
    public FenceProcessor(String storeName, String commitSignalName, String acceptedSink, String rejectedSink, MarkerOutput markers, EnforcerMetrics metrics,
            FenceEnforcerTopology.Limits limits, TokenVerifier verifier) {
        if (limits.inputPartitions() < 1) {
            throw new IllegalArgumentException("inputPartitions must be at least 1, got " + limits.inputPartitions());
        }
        this.limits = limits;
        this.storeName = storeName;
        this.commitSignalName = commitSignalName;
        this.acceptedSink = acceptedSink;
        this.rejectedSink = rejectedSink;
        this.metrics = metrics;
        this.markers = markers;
        this.verifier = verifier;
    }

    @Override
    public void init(ProcessorContext<byte[], byte[]> context) {
        this.context = context;
        this.fences = context.getStateStore(storeName);
        this.keepHistory = !StreamsConfig.EXACTLY_ONCE_V2.equals(context.appConfigs().get(StreamsConfig.PROCESSING_GUARANTEE_CONFIG));
        this.partition = -1;
        this.nextOffset = -1;
        this.committed = 0;
        this.replayed = 0;
        this.replayedSinceCommit = 0;
        this.commits = context.getStateStore(commitSignalName);
        commits.listen(this::committed);
    }

    /** Kafka Streams committed this task's offsets: every record processed so far is behind the committed offset. */
    private void committed() {
        if (nextOffset >= 0) {
            committed = nextOffset;
        }
        if (replayed > 0 && replayedSinceCommit == 0) {
            reportReplay();
        }
        replayedSinceCommit = 0;
    }

    private void reportReplay() {
        LOG.info("re-decided {} replayed records of input partition {} against the fence each met the first time (the fence store was ahead of the "
                + "committed offsets, at_least_once); accepted ones were forwarded again; processed up to offset {}",
                replayed, partition, nextOffset - 1);
        replayed = 0;
    }

    @Override
    public void close() {
        if (commits != null) {
            commits.stopListening();
        }
        if (replayed > 0) {
            reportReplay();
        }
    }

    @Override
    public void process(Record<byte[], byte[]> record) {
        long offset = context.recordMetadata().map(RecordMetadata::offset).orElse(-1L);
        if (offset >= 0) {
            // One source topic: a task, and so this processor, sees one input partition.
            partition = context.recordMetadata().get().partition();
            nextOffset = offset + 1;
        }
        replaying = false;
        byte[] key = record.key();
        if (key == null || key.length == 0) {
            reject(record, RejectionReason.MISSING_KEY, null, key == null ? "null key" : "empty key");
            return;
        }
        int inputPartitions = limits.inputPartitions();
        int expected = Utils.toPositive(Utils.murmur2(key)) % inputPartitions;
        int actual = context.recordMetadata().map(RecordMetadata::partition).orElse(expected);
        if (actual != expected) {
            // The fence of this key lives with partition `expected`; deciding here would compare
            // against the wrong (or no) stored fence and could accept a stale write.
            reject(record, RejectionReason.WRONG_PARTITION, null, "key hashes to partition " + expected + " of " + inputPartitions
                    + " (murmur2, Kafka's default partitioner) but the record is on partition " + actual);
            return;
        }
        String rejectedBefore = rejectedBefore(record.headers());
        if (rejectedBefore != null) {
            // A rejected copy sent back: accepted as it is, it would carry its old rejection to the
            // accepted topic and the sink would refuse it there (issue 13 review).
            reject(record, RejectionReason.ALREADY_REJECTED, null, "the record already carries " + rejectedBefore
                    + ": strip the fence.rejected.* headers before sending a rejected write again");
            return;
        }
        Bytes storeKey = Bytes.wrap(key);
        StoredFence state = fences.get(storeKey);
        replaying = state != null && state.remembers(offset);
        Fence stored = state == null ? null : state.fenceAt(offset);
        FenceStamp.Parsed parsed = FenceStamp.parse(HeaderLookup.of(record.headers()));
        if (!parsed.valid()) {
            reject(record, parsed.rejection(), stored, parsed.detail());
            return;
        }
        FenceStamp stamp = parsed.stamp();
        Decision decision = FenceRule.decide(stored, stamp.fence());
        if (!decision.accepted()) {
            reject(record, decision.reason(), stored, "incoming " + stamp.fence() + " vs stored " + stored);
            return;
        }
        if (stamp.op() == FenceOp.FENCE && record.value() != null) {
            reject(record, RejectionReason.INVALID_MARKER, stored, "FENCE marker with a " + record.value().length + "-byte value");
            return;
        }
        if (stamp.op() == FenceOp.WRITE && RecordSize.upperBound(record.key(), record.value(), record.headers()) > limits.acceptedMaxBytes()) {
            // Not accepted, so the fence stays where it was.
            reject(record, RejectionReason.TOO_LARGE, stored, "record of up to " + RecordSize.upperBound(record.key(), record.value(), record.headers())
                    + " bytes exceeds the " + limits.acceptedMaxBytes() + " bytes the accepted topic takes (its max.message.bytes and the producer's max.request.size)");
            return;
        }
        if (!limits.storable(key)) {
            // Its fence could not reach the changelog, and a fence that is not in the changelog
            // is lost on restore: so the key is never stored, and nothing is decided for it.
            reject(record, RejectionReason.KEY_TOO_LARGE, stored, key.length + "-byte key with its fence exceeds the " + limits.storeMaxBytes()
                    + " bytes the fence store's changelog takes (its max.message.bytes and the producer's max.request.size)");
            return;
        }
        Fence before = stored;
        Fence raised = FenceRule.raise(stored, stamp.fence());
        if (replaying && !state.acceptedAt(offset, raised)) {
            // Not the accept the history holds at this offset. If the verifier refuses the token
            // against the fence the record met the first time, that is why it was not accepted
            // then (etcd's answers about past revisions do not change), and it gets the same
            // rejection again (issue 14; found by EnforcerCrashIT's at_least_once run).
            if (verifier != null && !verified(record, key, stamp, stored)) {
                return;
            }
            // Otherwise the input's offsets were reset or the topic recreated: decide against the current fence, as without replay.
            replaying = false;
            Decision current = FenceRule.decide(state.fence(), stamp.fence());
            if (!current.accepted()) {
                reject(record, current.reason(), state.fence(), "incoming " + stamp.fence() + " vs stored " + state.fence());
                return;
            }
            before = state.fence();
            raised = FenceRule.raise(before, stamp.fence());
        }
        long lease = 0;
        if (!replaying && verifier != null) {
            // Issue 14: the token must be one the lock service issued to this key's lock under
            // the record's lease, for a raise and for a write at the fence alike: tokens are not
            // unique across locks (waiters woken by one change get the same revision), so a token
            // equal to the fence may be another lock's. Only one lease holds a lock at a revision.
            lease = verifiedLease(record, key, stamp, before, state);
            if (lease <= 0) {
                return;
            }
        }
        if (replaying) {
            replayed(stamp.op() == FenceOp.FENCE ? "marker" : "accepted");
        } else {
            remember(storeKey, state, offset, raised, lease);
        }
        if (stamp.op() == FenceOp.FENCE) {
            metrics.markerAccepted();
            LOG.debug("fence raised to {} by marker from {}", stamp.fence(), stamp.writer());
            if (markers != null) {
                context.forward(record.withHeaders(markerHeaders(stamp, before)), markers.sink());
            }
            return;
        }
        metrics.accepted();
        context.forward(record, acceptedSink);
    }

    /**
     * The lease of a record the rule would accept, once confirmed: for a write at the key's fence
     * whose lease the store already holds, by comparing with it (no etcd read: only one lease holds a
     * lock at a revision); otherwise with the {@link TokenVerifier}. Rejects the record when its lease
     * is missing, malformed or not the one that held the lock at the token.
     *
     * @param state the key's stored value ({@code before} is its current fence), or {@code null}
     * @return the confirmed lease id, or -1 when the record was rejected
     */
    private long verifiedLease(Record<byte[], byte[]> record, byte[] key, FenceStamp stamp, Fence before, StoredFence state) {
        long leaseId = leaseOf(record, stamp, before);
        if (leaseId <= 0) {
            return -1;
        }
        boolean atFence = before != null && stamp.fence().token() == before.token();
        if (atFence && state != null && state.lease() != 0) {
            if (leaseId == state.lease()) {
                return leaseId;
            }
            reject(record, RejectionReason.LOCK_NOT_HELD, before, "token " + stamp.fence().token() + " is the key's fence, held by lease " + state.lease()
                    + " (hex " + Long.toHexString(state.lease()) + "); only one lease holds a lock at a revision, so lease " + leaseId + " did not");
            return -1;
        }
        return verified(record, key, stamp, before, leaseId) ? leaseId : -1;
    }

    /**
     * Checks the token with the {@link TokenVerifier}; rejects the record when its lease is missing or
     * malformed, or the verifier refuses the token.
     *
     * @return whether the token is verified; when not, the record was rejected
     */
    private boolean verified(Record<byte[], byte[]> record, byte[] key, FenceStamp stamp, Fence before) {
        long leaseId = leaseOf(record, stamp, before);
        return leaseId > 0 && verified(record, key, stamp, before, leaseId);
    }

    private boolean verified(Record<byte[], byte[]> record, byte[] key, FenceStamp stamp, Fence before, long leaseId) {
        TokenVerifier.Verdict verdict = verifier.verify(key, stamp.fence().token(), leaseId);
        if (!verdict.verified()) {
            reject(record, verdict.rejection(), before, "token " + stamp.fence().token() + ": " + verdict.detail());
            return false;
        }
        return true;
    }

    /** The record's single positive decimal {@code fence.lease}; when there is none, rejects the record and returns -1. */
    private long leaseOf(Record<byte[], byte[]> record, FenceStamp stamp, Fence before) {
        List<byte[]> leases = HeaderLookup.of(record.headers()).values(FenceHeaders.LEASE);
        if (leases.isEmpty()) {
            reject(record, RejectionReason.MISSING_LEASE, before, "token " + stamp.fence().token() + " would be accepted (fence " + before
                    + ") but the record has no " + FenceHeaders.LEASE + " header, so the token cannot be verified");
            return -1;
        }
        long leaseId = leases.size() == 1 ? FenceStamp.parseDecimal(FenceHeaders.decode(leases.get(0))) : -1;
        if (leaseId <= 0) {
            reject(record, RejectionReason.MALFORMED_LEASE, before, leases.size() + " " + FenceHeaders.LEASE + " header(s); expected one positive "
                    + "decimal etcd lease id, got '" + (leases.size() == 1 ? FenceHeaders.decode(leases.get(0)) : "") + "'");
            return -1;
        }
        return leaseId;
    }

    /**
     * Stores the key's value after an accept, and asks for a commit each time the key's history
     * reaches another {@value StoredFence#COMMIT_REQUEST_ACCEPTS} accepts (once, not on every accept,
     * should commits be slow to come).
     */
    private void remember(Bytes storeKey, StoredFence previous, long offset, Fence raised, long lease) {
        StoredFence next = keepHistory ? StoredFence.afterAccept(previous, offset, raised, committed, lease) : StoredFence.of(raised, lease);
        fences.put(storeKey, next);
        int count = next.acceptCount();
        if (count > 0 && count < StoredFence.MAX_ACCEPTS && count % StoredFence.COMMIT_REQUEST_ACCEPTS == 0) {
            context.commit();
        }
    }

    private void replayed(String outcome) {
        if (replayed == 0) {
            LOG.info("input partition {} offset {}: the fence store is ahead of the committed offsets (at_least_once after a crash); records it has seen are "
                    + "decided against the fence each met the first time, and accepted ones are forwarded again", partition, nextOffset - 1);
        }
        replayed++;
        replayedSinceCommit++;
        metrics.replayed(outcome);
    }

    private void reject(Record<byte[], byte[]> record, RejectionReason reason, Fence highest, String detail) {
        if (replaying) {
            replayed("rejected");
        }
        metrics.rejected(reason);
        List<Header> rejection = new ArrayList<>(6);
        rejection.add(new RecordHeader(FenceHeaders.REJECTED_REASON, FenceHeaders.encode(reason.name())));
        rejection.add(new RecordHeader(FenceHeaders.REJECTED_STAGE, FenceHeaders.encode(FenceHeaders.STAGE_ENFORCER)));
        rejection.add(new RecordHeader(FenceHeaders.REJECTED_HIGHEST, FenceHeaders.encode(highest == null ? "" : highest.toString())));
        Optional<RecordMetadata> source = context.recordMetadata();
        source.ifPresent((RecordMetadata from) -> {
            rejection.add(new RecordHeader(FenceHeaders.SOURCE_TOPIC, FenceHeaders.encode(from.topic())));
            rejection.add(new RecordHeader(FenceHeaders.SOURCE_PARTITION, FenceHeaders.encode(from.partition())));
            rejection.add(new RecordHeader(FenceHeaders.SOURCE_OFFSET, FenceHeaders.encode(from.offset())));
        });
        // Bounded (issue 13): a copy the rejected topic or the producer would refuse stops the
        // stream thread, so it is reduced step by step down to a reference record.
        RejectedCopy copy = RejectedCopy.of(record.key(), record.value(), record.headers().toArray(), rejection, limits.rejectedMaxBytes());
        if (copy.step() == RejectedCopy.Step.FULL) {
            LOG.info("rejected {} record: {}", reason, detail);
        } else {
            metrics.copyReduced(copy.step());
            LOG.warn("rejected {} record from {}: {}; its copy ({}) was reduced to fit the {} bytes the rejected topic takes: {}", reason,
                    source.map(from -> from.topic() + "-" + from.partition() + "@" + from.offset()).orElse("an unknown offset"), detail,
                    sizes(record), limits.rejectedMaxBytes(), copy.step());
        }
        context.forward(record.withKey(copy.key()).withValue(copy.value()).withHeaders(copy.headers()), rejectedSink);
    }

    /** The first {@code fence.rejected.*} header's name, or {@code null} when the record has none. */
    private static String rejectedBefore(Headers headers) {
        for (Header header : headers) {
            if (header.key().startsWith(FenceHeaders.REJECTED_PREFIX)) {
                return header.key();
            }
        }
        return null;
    }

    private static String sizes(Record<byte[], byte[]> record) {
        return "key " + RecordSize.length(record.key()) + " B, value " + RecordSize.length(record.value()) + " B, headers "
                + RecordSize.headersBytes(record.headers()) + " B";
    }

    /**
     * The headers of a published marker: its fence as parsed (token, seq, op), the lease and writer
     * when they are short, the fence it superseded ({@code fence.marker.previous}, absent when the
     * key had none), the target topic and the source coordinates. Nothing else of the input record
     * is copied, so a marker carrying megabytes of other headers still fits the markers topic.
     */
    private Headers markerHeaders(FenceStamp stamp, Fence previous) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, FenceHeaders.encode(stamp.fence().token()));
        if (stamp.fence().hasSeq()) {
            headers.add(FenceHeaders.SEQ, FenceHeaders.encode(stamp.fence().seq()));
        }
        headers.add(FenceHeaders.OP, FenceHeaders.encode(FenceOp.FENCE.name()));
        addIfShort(headers, FenceHeaders.LEASE, stamp.lease());
        addIfShort(headers, FenceHeaders.WRITER, stamp.writer());
        if (previous != null) {
            headers.add(FenceHeaders.MARKER_PREVIOUS, FenceHeaders.encode(previous.toString()));
        }
        headers.add(FenceHeaders.MARKER_TARGET_TOPIC, FenceHeaders.encode(markers.targetTopic()));
        addSource(headers);
        return headers;
    }

    private static void addIfShort(Headers headers, String name, String value) {
        if (value != null && value.length() <= MARKER_TEXT_HEADER_MAX_CHARS) {
            headers.add(name, FenceHeaders.encode(value));
        }
    }

    /** Adds {@code fence.source.topic}, {@code .partition} and {@code .offset}: where the input record was read. */
    private void addSource(Headers headers) {
        context.recordMetadata().ifPresent((RecordMetadata source) -> {
            headers.add(FenceHeaders.SOURCE_TOPIC, FenceHeaders.encode(source.topic()));
            headers.add(FenceHeaders.SOURCE_PARTITION, FenceHeaders.encode(source.partition()));
            headers.add(FenceHeaders.SOURCE_OFFSET, FenceHeaders.encode(source.offset()));
        });
    }
}
