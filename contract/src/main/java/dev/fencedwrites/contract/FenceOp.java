package dev.fencedwrites.contract;

/** The operation a record carries in its {@code fence.op} header. */
public enum FenceOp {
    /** A data write (the default when the header is absent). A null value is a delete. */
    WRITE,
    /**
     * An acquisition marker with a null value: raises the key's fence without writing data. A
     * winning marker is not forwarded to the accepted topic, where a null value would read as a
     * delete to consumers and as a tombstone to log compaction.
     */
    FENCE
}
