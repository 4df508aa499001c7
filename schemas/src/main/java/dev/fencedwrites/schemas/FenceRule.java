package dev.fencedwrites.schemas;

/**
 * The decision rule, the same in the enforcer and in the sink (source: {@code shared/DESIGN.md},
 * "Decision rule"). Per key the store holds the highest accepted (token, seq):
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
 * <p>On accept the key's fence becomes the incoming fence, which by the table is never lower in
 * token; the fence therefore never decreases.
 */
public final class FenceRule {
    private FenceRule() {
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
