package dev.fencedwrites.sink;

import dev.fencedwrites.contract.RejectionReason;
import org.apache.kafka.connect.errors.ConnectException;

/** The error attached to a record reported to the dead-letter topic because the database guard refused it. */
public final class FencedWriteException extends ConnectException {
    private final RejectionReason reason;

    public FencedWriteException(RejectionReason reason, String detail) {
        super(reason + ": " + detail);
        this.reason = reason;
    }

    public RejectionReason reason() {
        return reason;
    }

    /** A fenced write is a routed outcome, not a fault: no stack trace in logs or dead-letter headers. */
    @Override
    public synchronized Throwable fillInStackTrace() {
        return this;
    }
}
