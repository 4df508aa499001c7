package dev.fencedwrites.history;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceRule;

/**
 * What {@code fence verify}'s first pass keeps per key: a few numbers, whatever the number of records. Mutable, one
 * thread.
 */
final class KeyState {
    /** The key's fence in the replay of its input records. */
    Fence fence;
    /** With {@code --since}: the key's fence where the window starts, from the decisions before it; else {@code null}. */
    Fence seed;
    /** Some input record of the key was on another partition and re-routed: its order among the others is the enforcer's. */
    boolean mixed;
    long expectedAccepts;
    long expectedChain;
    long expectedDecisions;
    long expectedDecisionSum;
    long acceptedCopies;
    long acceptedChain;
    long decisions;
    long decisionSum;
    /** Accepted copies past the replay's count: decisions of records past the committed offset, or copies with no input. */
    long acceptedBeyond;
    /** Input records of the key past the enforcer's committed offset: each may already have its accepted copy. */
    long pendingInputs;
    /** The last accepted record's fence and position, for the rising check. */
    Fence lastAccepted;
    String lastAcceptedAt;
    /** The row the sink's guard should have made: the fence and value of the winning accepted write, and where it is. */
    Fence rowFence;
    byte[] rowValue;
    boolean rowDeleted;
    String rowFrom;
    /**
     * The highest accepted write, refused by the sink or not: the sink is at-least-once, so a write it applied may come
     * again (its task lost the partition before committing the offset) and be refused then. The row may hold it.
     */
    Fence topFence;
    byte[] topValue;
    boolean topDeleted;
    String topFrom;
    /** The position of the key's last accepted copy, which the sink must have passed before its row is compared. */
    int lastCopyPartition = -1;
    long lastCopyOffset = -1;
    /** The highest winning marker on the markers topic, and its position. */
    Fence markerFence;
    int markerPartition = -1;
    long markerOffset = -1;

    /** Raises the fence the replay starts from with a decision made before {@code --since}'s window. */
    void seed(Fence decided) {
        if (fence == null || FenceRule.decide(fence, decided).accepted()) {
            fence = FenceRule.raise(fence, decided);
        }
        seed = fence;
    }

    /** Whether the key's decisions and accepted records match the replay. */
    boolean matches() {
        return !mixed && expectedAccepts == acceptedCopies && expectedChain == acceptedChain
                && expectedDecisions == decisions && expectedDecisionSum == decisionSum && acceptedBeyond <= pendingInputs;
    }
}
