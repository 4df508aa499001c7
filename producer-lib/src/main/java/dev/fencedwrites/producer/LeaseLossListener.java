package dev.fencedwrites.producer;

/**
 * Told once when a held {@link FencingLease} is lost (not when it is released by
 * {@link FencingLease#close()}). Called on the lease client's event thread ({@code fence-lease-events}),
 * one listener after another, or at once on the registering thread if the lease was already lost.
 * A slow listener delays other listeners of that client, never its keep-alives; hand long work
 * to your own executor.
 */
@FunctionalInterface
public interface LeaseLossListener {
    /**
     * @param lease the lost lease; {@link FencingLease#lossCause()} says why
     * @param cause the exception a send under this lease now fails with
     */
    void leaseLost(FencingLease lease, LeaseLostException cause);
}
