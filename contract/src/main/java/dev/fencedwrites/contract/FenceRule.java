package dev.fencedwrites.contract;

/**
 * The decision rule, the same in the enforcer and in the sink (source: docs/concepts/decision-rule.md,
 * "The decision rule"). Per key the store holds the highest accepted (token, seq):
 *
 * <table>
 *   <caption>incoming vs stored</caption>
 *   <tr><td>no stored fence</td><td>accept</td></tr>
 *   <tr><td>token &gt; stored token</td><td>accept</td></tr>
 *   <tr><td>token = stored, seq absent on either side</td><td>accept (same holder)</td></tr>
 *   <tr><td>token = stored, seq &gt; stored seq</td><td>accept</td></tr>
 *   <tr><td>token = stored, seq = stored seq</td><td>{@link RejectionReason#DUPLICATE}</td></tr>
 *   <tr><td>token = stored, seq &lt; stored seq</td><td>{@link RejectionReason#OUT_OF_ORDER}</td></tr>
 *   <tr><td>token &lt; stored token</td><td>{@link RejectionReason#STALE_TOKEN}</td></tr>
 * </table>
 *
 * <p>On accept the key's fence becomes {@link #raise}: the incoming fence, except that a write of
 * the same token without a seq keeps the stored seq, so a late lower seq is still
 * {@code OUT_OF_ORDER}. The fence therefore never decreases.
 */
public final class FenceRule {
    private FenceRule() {
    }

    /**
     * The key's fence after accepting {@code incoming}.
     *
     * @param stored   the key's fence before, or {@code null}
     * @param incoming an accepted record's fence
     */
    public static Fence raise(Fence stored, Fence incoming) {
        if (stored != null && stored.token() == incoming.token() && !incoming.hasSeq()) {
            return stored;
        }
        return incoming;
    }

    /**
     * Decides one record.
     *
     * @param stored   the key's highest accepted fence, or {@code null} when the key has none
     * @param incoming the record's fence
     * @return accept, or reject with {@code STALE_TOKEN}, {@code DUPLICATE} or {@code OUT_OF_ORDER}
     */
    public static Decision decide(Fence stored, Fence incoming) {
        if (stored == null || incoming.token() > stored.token()) {
            return Decision.accept();
        }
        if (incoming.token() < stored.token()) {
            return Decision.reject(RejectionReason.STALE_TOKEN);
        }
        if (!incoming.hasSeq() || !stored.hasSeq() || incoming.seq() > stored.seq()) {
            return Decision.accept();
        }
        return Decision.reject(incoming.seq() == stored.seq() ? RejectionReason.DUPLICATE : RejectionReason.OUT_OF_ORDER);
    }
}
