package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceStamp;
import dev.fencedwrites.contract.HeaderLookup;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.enforcer.TokenVerifier;
import java.util.List;
import org.apache.kafka.streams.processor.api.Record;

/**
 * Token verification for {@link FenceProcessor}: confirms that the {@code fence.lease} of
 * a record the decision rule would accept held the key's lock at revision = token, and rejects the
 * record through {@link FenceOutputs} when its lease is missing, malformed or not that one.
 */
final class LeaseCheck {
    private final TokenVerifier verifier;
    private final FenceOutputs outputs;
    /** The verifier's answer to the last question asked (one stream thread per processor, so no race). */
    private TokenVerifier.Verdict lastVerdict = TokenVerifier.Verdict.verified("");

    LeaseCheck(TokenVerifier verifier, FenceOutputs outputs) {
        this.verifier = verifier;
        this.outputs = outputs;
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
    long verifiedLease(Record<byte[], byte[]> record, byte[] key, FenceStamp stamp, Fence before, StoredFence state) {
        long leaseId = leaseOf(record, stamp, before);
        if (leaseId <= 0) {
            return -1;
        }
        boolean atFence = before != null && stamp.fence().token() == before.token();
        if (atFence && state != null && state.lease() != 0) {
            if (leaseId == state.lease()) {
                return leaseId;
            }
            outputs.reject(record, RejectionReason.LOCK_NOT_HELD, before,
                    "token " + stamp.fence().token() + " is the key's fence, held by lease "
                            + state.lease() + " (hex " + Long.toHexString(state.lease())
                            + "); only one lease holds a lock at a revision, so lease " + leaseId
                            + " did not");
            return -1;
        }
        if (!verified(record, key, stamp, before, leaseId)) {
            return -1;
        }
        return sameTenureRaise(record, stamp, before, state, leaseId) ? -1 : leaseId;
    }

    /**
     * Rejects a raise under the lease the key's fence already holds whose lock key is the same one (the tenure began at or
     * below the fence): every revision of a tenure reads as held, so anyone who knows the holder's lease id (it is in every
     * accepted record) could otherwise lock the holder out with etcd's current revision. A new acquisition under the same
     * lease creates a new lock key, above every token of the last one. A verifier that reports no tenure start cannot tell.
     *
     * @return whether the record was rejected
     */
    private boolean sameTenureRaise(Record<byte[], byte[]> record, FenceStamp stamp, Fence before, StoredFence state,
            long leaseId) {
        long tenureStart = lastVerdict.tenureStart();
        if (before == null || state == null || state.lease() != leaseId || stamp.fence().token() <= before.token()
                || tenureStart == 0 || tenureStart > before.token()) {
            return false;
        }
        outputs.reject(record, RejectionReason.LOCK_NOT_HELD, before,
                "token " + stamp.fence().token() + " is inside the tenure of lease " + leaseId + " (hex "
                        + Long.toHexString(leaseId) + ") that began at revision " + tenureStart + ", at or below the key's "
                        + "fence " + before + " set under that lease: a raise under the fence's own lease must come from a new "
                        + "acquisition of the lock, whose token is the revision at which it was found held");
        return true;
    }

    /**
     * Under fence expiry: rejects, LOCK_NOT_HELD, a verified token whose tenure began below the partition's {@code floor}, on
     * a key without a fence at or above the floor. The floor is the create revision of the oldest lock key alive when it was
     * raised, so that tenure's lock key was gone by then; and the fence that refused raises inside it
     * ({@link #sameTenureRaise}) may have been dropped. A live holder's tenure began at or above the floor. Call after
     * {@link #verifiedLease} accepted the record.
     *
     * @return whether the record was rejected
     */
    boolean endedBelowFloor(Record<byte[], byte[]> record, FenceStamp stamp, Fence before, long floor) {
        long tenureStart = lastVerdict.tenureStart();
        if (floor <= 0 || tenureStart == 0 || tenureStart >= floor || before != null && before.token() >= floor) {
            return false;
        }
        outputs.reject(record, RejectionReason.LOCK_NOT_HELD, before,
                "token " + stamp.fence().token() + " is inside a tenure that began at revision " + tenureStart
                        + ", below the expiry floor " + floor + ": its lock key was gone when the floor was raised (the "
                        + "floor is the create revision of the oldest lock key alive then)");
        return true;
    }

    /**
     * Checks the token with the {@link TokenVerifier}; rejects the record when its lease is missing or
     * malformed, or the verifier refuses the token.
     *
     * @return whether the token is verified; when not, the record was rejected
     */
    boolean verified(Record<byte[], byte[]> record, byte[] key, FenceStamp stamp, Fence before) {
        long leaseId = leaseOf(record, stamp, before);
        return leaseId > 0 && verified(record, key, stamp, before, leaseId);
    }

    private boolean verified(Record<byte[], byte[]> record, byte[] key, FenceStamp stamp, Fence before, long leaseId) {
        TokenVerifier.Verdict verdict = verifier.verify(key, stamp.fence().token(), leaseId);
        lastVerdict = verdict;
        if (!verdict.verified()) {
            outputs.reject(record, verdict.rejection(), before, "token " + stamp.fence().token() + ": " + verdict.detail());
            return false;
        }
        return true;
    }

    /** The record's single positive decimal {@code fence.lease}; when there is none, rejects the record and returns -1. */
    private long leaseOf(Record<byte[], byte[]> record, FenceStamp stamp, Fence before) {
        List<byte[]> leases = HeaderLookup.of(record.headers()).values(FenceHeaders.LEASE);
        if (leases.isEmpty()) {
            outputs.reject(record, RejectionReason.MISSING_LEASE, before,
                    "token " + stamp.fence().token() + " would be accepted (fence " + before
                            + ") but the record has no " + FenceHeaders.LEASE + " header, so the token cannot be verified");
            return -1;
        }
        long leaseId = leases.size() == 1 ? FenceStamp.parseDecimal(FenceHeaders.decode(leases.get(0))) : -1;
        if (leaseId <= 0) {
            outputs.reject(record, RejectionReason.MALFORMED_LEASE, before,
                    leases.size() + " " + FenceHeaders.LEASE + " header(s); expected one positive "
                            + "decimal etcd lease id, got '" + (leases.size() == 1 ? FenceHeaders.decode(leases.get(0)) : "")
                            + "'");
            return -1;
        }
        return leaseId;
    }
}
