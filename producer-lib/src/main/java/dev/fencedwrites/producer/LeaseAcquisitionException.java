package dev.fencedwrites.producer;

/** A lease or lock could not be acquired: etcd unreachable, refused, or the wait timed out. */
public class LeaseAcquisitionException extends Exception {
    public LeaseAcquisitionException(String message, Throwable cause) {
        super(message, cause);
    }
}
