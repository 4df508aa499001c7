package dev.fencedwrites.contract;

/**
 * Why a record was not accepted. Written to the {@code fence.rejected.reason} header and used as
 * the {@code reason} tag of the fenced-writes counters. Source: the decision rule in
 * the README, "The decision rule" and "Reasons the sink adds". New reasons go at the end: the enforcer's fence store
 * keeps some rejections by the reason's ordinal (its changelog outlives a release).
 */
public enum RejectionReason {
    /** The record's token is lower than the key's stored fence: the writer's lease was superseded. */
    STALE_TOKEN,
    /** Same token and same seq as the stored fence: a redelivery, counted apart from stale writes. */
    DUPLICATE,
    /** Same token, lower seq than the stored fence: the holder's own writes arrived out of order. */
    OUT_OF_ORDER,
    /** No {@code fence.token} header. */
    MISSING_TOKEN,
    /** A {@code fence.token} header that is empty, repeated, or not a positive long. */
    MALFORMED_TOKEN,
    /** A {@code fence.seq} header that is empty, repeated, or not a non-negative long. */
    MALFORMED_SEQ,
    /** A {@code fence.op} header other than {@code WRITE} or {@code FENCE}. */
    UNKNOWN_OP,
    /** A {@code FENCE} marker with a non-null value: markers raise the fence and carry no data. */
    INVALID_MARKER,
    /**
     * A value the sink cannot decode (not the Confluent wire format, unknown schema id, bad Avro) or the database refuses (e.g. a
     * NUL character in text). Sink only.
     */
    MALFORMED_VALUE,
    /**
     * The record is not on the partition Kafka's default partitioner (murmur2 of the serialized
     * key) assigns its key. Its fence lives with another partition, so it cannot be decided safely.
     * Only in the enforcer's strict mode, {@code partition.mismatch.policy=reject}; by default such a
     * record is re-routed to the partition that owns its key's fence and decided there.
     * In strict mode the writer must use the default partitioner (kcat: {@code -X partitioner=murmur2_random}).
     */
    WRONG_PARTITION,
    /**
     * A winning write too large for the accepted topic: larger than the smaller of its
     * {@code max.message.bytes} and the enforcer producer's {@code max.request.size}. Its copy on
     * the rejected topic may omit the value, headers or key (see
     * {@link FenceHeaders#REJECTED_VALUE_OMITTED}); the original stays on the input topic at the
     * source offset.
     */
    TOO_LARGE,
    /** A null or empty record key: the fence is per key, so there is nothing to fence on. */
    MISSING_KEY,
    /**
     * A record key in bytes that are not valid UTF-8: the wire contract's resource id is UTF-8 text,
     * and decoding it anyway would merge keys that differ only in such bytes into one row. The
     * enforcer rejects it at the input ({@link ResourceId#isUtf8}); the sink again, for records
     * that reached its topics around the enforcer.
     */
    MALFORMED_KEY,
    /**
     * A record that already carries {@code fence.rejected.*} headers: a rejected copy sent back to
     * the input topic (the enforcer refuses it, so its old rejection headers never reach the
     * accepted topic: strip them and send the write again), or one that reached the sink because
     * the connector reads the rejected topic or a topic fed from it (check its {@code topics}).
     * Never written.
     */
    ALREADY_REJECTED,
    /**
     * The {@code fence.token} equals the record's {@code fence.lease}: the writer sent its etcd
     * lease id, not the lock's revision. A lease id is a large number (2^53 and more in practice) that would
     * block the key for every real token, so the record is refused. The writer must send the
     * revision at which it found its lock held.
     */
    LEASE_AS_TOKEN,
    /**
     * A {@code WRITE} or {@code FENCE} marker whose key is too large for the fence store: the
     * store's changelog topic ({@code max.message.bytes}) or the producer
     * ({@code max.request.size}) would refuse the key with its stored fence, so the fence is not
     * raised. Enforcer only.
     */
    KEY_TOO_LARGE,
    /**
     * The enforcer decided the record but Kafka refused the output it wrote for it (for example
     * a topic's {@code max.message.bytes} lowered after the enforcer started). The rejected topic
     * then holds a reference record ({@link FenceHeaders#REJECTED_ERROR} names the error); the
     * original stays on the input topic at the source offset. Enforcer only.
     */
    PRODUCE_FAILED,
    /**
     * Token verification: the {@code fence.token} is above etcd's current revision. No
     * lock can have been found held at a revision that does not exist yet: the token is forged or
     * corrupt (a lease id, {@code Long.MAX_VALUE}, a counter of the writer's own). Enforcer only.
     */
    FUTURE_TOKEN,
    /**
     * Token verification: at revision = {@code fence.token}, the key's lock (etcd key
     * {@code <etcd.lock.prefix><encoded key>/<fence.lease in hex>}) was not the oldest under the
     * lock, or was not attached to that lease: another lease held the lock then, or nobody did. The
     * token was borrowed from another resource or another lease, or made up. Enforcer only.
     */
    LOCK_NOT_HELD,
    /**
     * Token verification: a record the decision rule would accept has no
     * {@code fence.lease} header, so there is no lock key to check the token against. Enforcer only.
     */
    MISSING_LEASE,
    /**
     * Token verification: a record the decision rule would accept has a
     * {@code fence.lease} that is empty, repeated, or not a positive decimal long. Enforcer only.
     */
    MALFORMED_LEASE,
    /**
     * Token verification: etcd has compacted its history past the token's revision, so
     * whether the lease held the lock then cannot be checked; rejected under the default
     * {@code token.verification.compacted.policy=reject}. Enforcer only.
     */
    UNVERIFIABLE_TOKEN;

    /**
     * Whether only the enforcer decides this reason: the sink never refuses a record with it (it
     * does not know the input's partitioning, the topics' limits or etcd), so the sink exports no
     * series for it.
     */
    public boolean enforcerOnly() {
        return switch (this) {
            case WRONG_PARTITION, TOO_LARGE, KEY_TOO_LARGE, PRODUCE_FAILED, FUTURE_TOKEN, LOCK_NOT_HELD, MISSING_LEASE,
                    MALFORMED_LEASE,
                    UNVERIFIABLE_TOKEN ->
                true;
            default -> false;
        };
    }
}
