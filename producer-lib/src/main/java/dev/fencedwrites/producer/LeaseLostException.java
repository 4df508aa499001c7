package dev.fencedwrites.producer;

/**
 * A write was refused because its {@link FencingLease} is no longer held: released, expired in
 * etcd, or past its local deadline without a keep-alive renewal. Nothing was sent.
 *
 * <p>Refusing is an efficiency measure only: a process paused after this check still sends, and
 * the fence (enforcer and sink) rejects that write. Unchecked, like Kafka's own send errors, and
 * delivered through the send's future by {@link FencedProducer#send}.
 */
public class LeaseLostException extends IllegalStateException {
    private final String resource;
    private final long token;
    private final String lossCause;

    /**
     * @param resource  the lease's resource
     * @param token     the lease's fencing token (0 if the lock was never acquired)
     * @param lossCause why the lease is no longer held, as {@link FencingLease#lossCause()} says
     */
    public LeaseLostException(String resource, long token, String lossCause) {
        this(resource, token, lossCause, "");
    }

    /** @param detail appended to the message, e.g. what was not done because of the loss */
    LeaseLostException(String resource, long token, String lossCause, String detail) {
        super("the lease on " + resource + " (token " + token + ") is no longer held: " + lossCause + detail);
        this.resource = resource;
        this.token = token;
        this.lossCause = lossCause;
    }

    /** The resource whose lease was lost. */
    public String resource() {
        return resource;
    }

    /** The fencing token of the lost lease. */
    public long token() {
        return token;
    }

    /** Why the lease is no longer held. */
    public String lossCause() {
        return lossCause;
    }
}
