package dev.fencedwrites.producer;

/**
 * Told once when a held {@link FencingLease} is lost (not when it is released by
 * {@link FencingLease#close()}). Called on the lease client's renewal thread, or on the thread that
 * noticed the passed deadline; it must return quickly and not block (hand work to your own executor).
 */
@FunctionalInterface
public interface LeaseLossListener {
    /**
     * @param lease the lost lease; {@link FencingLease#lossCause()} says why
     * @param cause the exception a send under this lease now fails with
     */
    void leaseLost(FencingLease lease, LeaseLostException cause);
}
