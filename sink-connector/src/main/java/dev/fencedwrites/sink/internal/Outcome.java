package dev.fencedwrites.sink.internal;

import dev.fencedwrites.contract.Decision;
import dev.fencedwrites.contract.Fence;

/**
 * What happened to one {@link Row} at the table.
 *
 * @param decision accept, or the rejection reason ({@code MALFORMED_VALUE} when the database refused the row's data)
 * @param highest  the key's stored fence when rejected, or {@code null}
 * @param detail   why, for logs and the dead-letter record; {@code null} when accepted
 */
public record Outcome(Decision decision, Fence highest, String detail) {
    /** The outcome of an applied row. */
    static final Outcome ACCEPTED = new Outcome(Decision.accept(), null, null);
}
