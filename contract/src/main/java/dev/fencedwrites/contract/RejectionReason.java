package dev.fencedwrites.contract;

/**
 * Why a record was not accepted. Written to the {@code fence.rejected.reason} header and used as the {@code reason} tag
 * of the fenced-writes counters. Each reason says what it means ({@link #meaning()}) and what to do about it
 * ({@link #action()}); {@code docs/reference/reasons.md} is generated from them, and the rule that gives each is
 * {@link FenceRule}. New reasons go at the end: the enforcer's fence store keeps some rejections by the reason's
 * ordinal (its changelog outlives a release).
 */
public enum RejectionReason {
    STALE_TOKEN, // ordinal 0
    DUPLICATE, // ordinal 1
    OUT_OF_ORDER, // ordinal 2
    MISSING_TOKEN, // ordinal 3
    MALFORMED_TOKEN, // ordinal 4
    MALFORMED_SEQ, // ordinal 5
    UNKNOWN_OP, // ordinal 6
    INVALID_MARKER, // ordinal 7
    MALFORMED_VALUE, // ordinal 8
    WRONG_PARTITION, // ordinal 9
    TOO_LARGE, // ordinal 10
    MISSING_KEY, // ordinal 11
    MALFORMED_KEY, // ordinal 12
    ALREADY_REJECTED, // ordinal 13
    LEASE_AS_TOKEN, // ordinal 14
    KEY_TOO_LARGE, // ordinal 15
    PRODUCE_FAILED, // ordinal 16
    FUTURE_TOKEN, // ordinal 17
    LOCK_NOT_HELD, // ordinal 18
    MISSING_LEASE, // ordinal 19
    MALFORMED_LEASE, // ordinal 20
    UNVERIFIABLE_TOKEN; // ordinal 21

    /** What the reason means: one or two sentences, Markdown (names of headers and settings in backticks). */
    public String meaning() {
        return switch (this) {
            case STALE_TOKEN -> "A token lower than the key's fence: the writer lost its lease and another writer took it. "
                    + "With [fence expiry](../concepts/fence-expiry.md) on, also a token below the partition's floor "
                    + "(`fence.rejected.floor` names it): a write of a tenure that had ended when the floor was raised.";
            case DUPLICATE -> "The same token and seq as the key's fence: a redelivery, counted apart from stale writes.";
            case OUT_OF_ORDER -> "The same token as the key's fence with a lower seq: the holder's own writes arrived out of "
                    + "order.";
            case MISSING_TOKEN -> "No `fence.token` header.";
            case MALFORMED_TOKEN -> "A `fence.token` header that is empty, repeated, or not a positive decimal long.";
            case MALFORMED_SEQ -> "A `fence.seq` header that is empty, repeated, or not a non-negative decimal long.";
            case UNKNOWN_OP -> "A `fence.op` header other than `WRITE` or `FENCE`, or a repeated one.";
            case INVALID_MARKER -> "A `FENCE` marker with a value: markers only raise the fence and carry no data.";
            case MALFORMED_VALUE ->
                "A value the sink cannot decode (not the Confluent wire format, an unknown schema id, Avro that "
                        + "does not fit its schema), whose schema cannot be mapped to columns, or whose row the database "
                        + "refuses; the reason is in `__connect.errors.exception.message`.";
            case WRONG_PARTITION -> "Strict mode only (`partition.mismatch.policy=reject`): the record is not on the partition "
                    + "Kafka's default partitioner (murmur2 of the key) assigns its key, where its fence lives. By "
                    + "default such a record is re-routed there instead.";
            case TOO_LARGE -> "A winning write larger than the accepted topic's `max.message.bytes` or the enforcer producer's"
                    + " `max.request.size`; the fence is not raised. Its rejected copy may omit the value, headers or "
                    + "key.";
            case MISSING_KEY -> "A null or empty record key: the fence is per key, so there is nothing to fence on.";
            case MALFORMED_KEY ->
                "A record key whose bytes are not UTF-8: the wire contract's resource id is UTF-8 text, and keys"
                        + " differing only in such bytes would share one row.";
            case ALREADY_REJECTED ->
                "The record already carries `fence.rejected.*` headers: a rejected copy sent back to the input "
                        + "topic, or read by a sink whose topics include the rejected topic. Neither the enforcer nor the "
                        + "sink writes it.";
            case LEASE_AS_TOKEN -> "`fence.token` equals `fence.lease`: the writer sent its etcd lease id (2^53 and more in "
                    + "practice) instead of the lock's revision; accepted, it would block the key for every real "
                    + "token.";
            case KEY_TOO_LARGE ->
                "The key with its stored fence (plus about 31 KiB of room for the largest stored value) does not"
                        + " fit the fence store's changelog (`max.message.bytes`) or the producer (`max.request.size`); "
                        + "the fence is not raised and the key never stored.";
            case PRODUCE_FAILED -> "The enforcer decided the record but Kafka refused what it wrote (for example a topic's "
                    + "`max.message.bytes` lowered while it runs); a reference record with `fence.rejected.error`, the"
                    + " original at the source offset.";
            case FUTURE_TOKEN -> "Token verification: the token is above etcd's current revision, so no lock can have been found "
                    + "held at it (a made-up number, `Long.MAX_VALUE`, a counter of the writer's own, a lease id sent "
                    + "with another `fence.lease`).";
            case LOCK_NOT_HELD ->
                "Token verification: at revision = token the key's lock was held by another lease, or by nobody:"
                        + " a token borrowed from another resource or lease, taken with another lock prefix, or a raise "
                        + "within the fence's own tenure.";
            case MISSING_LEASE -> "Token verification: a record that would raise the key's fence has no `fence.lease`, so its "
                    + "token cannot be checked.";
            case MALFORMED_LEASE -> "Token verification: a record that would raise the key's fence has a `fence.lease` that is "
                    + "empty, repeated, or not a positive decimal long.";
            case UNVERIFIABLE_TOKEN ->
                "Token verification: etcd has compacted away the token's revision, so whether the lease held the"
                        + " lock cannot be checked (`token.verification.compacted.policy=reject`, the default).";
        };
    }

    /** What the writer or the operator should do about it, Markdown. */
    public String action() {
        return switch (this) {
            case STALE_TOKEN -> "Nothing: this is the fence working. The paused writer should stop working on the resource.";
            case DUPLICATE -> "Nothing, unless they are frequent: check for producer retries without idempotence.";
            case OUT_OF_ORDER -> "Send one lease's writes in order, from one producer, with `enable.idempotence=true`.";
            case MISSING_TOKEN -> "Fix the writer: every write carries the fencing headers (producer-lib sets them).";
            case MALFORMED_TOKEN -> "Fix the writer: the token is the lock's revision in decimal ASCII digits.";
            case MALFORMED_SEQ -> "Fix the writer: seq is the write counter under the token, 0 for the marker.";
            case UNKNOWN_OP -> "Fix the writer: send `WRITE`, `FENCE`, or no `fence.op`.";
            case INVALID_MARKER -> "Send markers with a null value.";
            case MALFORMED_VALUE -> "Fix the writer's serializer or the data, or the table's constraint; the original is on the "
                    + "dead-letter topic to replay.";
            case WRONG_PARTITION ->
                "Use Kafka's default partitioner (kcat: `-X partitioner=murmur2_random`), or let the enforcer "
                        + "re-route (the default).";
            case TOO_LARGE -> "Raise `max.message.bytes` on the accepted topic, or write smaller records. When the copy omits "
                    + "the key, shorten the key: a larger limit only turns this into `KEY_TOO_LARGE`.";
            case MISSING_KEY -> "Give every write its resource id as key.";
            case MALFORMED_KEY -> "Fix the writer: keys are UTF-8 resource ids.";
            case ALREADY_REJECTED -> "Strip the `fence.rejected.*` and `fence.source.*` headers and send the write again with a "
                    + "current token; point the connector's topics at the accepted topic.";
            case LEASE_AS_TOKEN -> "Send the revision at which the lock was found held (producer-lib's `FencingLease.token()`).";
            case KEY_TOO_LARGE -> "Use shorter keys (resource ids), or raise `max.message.bytes` on "
                    + "`<application.id>-fences-changelog`.";
            case PRODUCE_FAILED -> "Fix the topic setting and restart the enforcer so that it reads the limits again.";
            case FUTURE_TOKEN -> "Send the revision at which the lock was found held, taken with the lock layout of the wire "
                    + "protocol, from the etcd the enforcer verifies against (`etcd.endpoints`).";
            case LOCK_NOT_HELD ->
                "Take the lock on this key (the record key is the resource) under the lease in `fence.lease`, a "
                        + "new lease per acquisition, with the same `etcd.lock.prefix` as the enforcer.";
            case MISSING_LEASE -> "Send the etcd lease id in decimal in `fence.lease` (producer-lib does).";
            case MALFORMED_LEASE -> "Send the etcd lease id in decimal in `fence.lease` (producer-lib does).";
            case UNVERIFIABLE_TOKEN ->
                "Write soon after acquiring (producer-lib's marker is verified at takeover), keep more etcd "
                        + "history (`--auto-compaction-retention`), or choose "
                        + "`token.verification.compacted.policy=accept`.";
        };
    }

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
