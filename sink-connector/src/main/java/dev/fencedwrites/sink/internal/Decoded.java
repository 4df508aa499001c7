package dev.fencedwrites.sink.internal;

import dev.fencedwrites.contract.RejectionReason;

/**
 * What {@link RecordDecoder} makes of one sink record: a {@link Row} for the table, a record to
 * {@link Skip skip} (neither written nor rejected), or a {@link Bad bad} one with its rejection reason.
 */
public sealed interface Decoded permits Row, Decoded.Skip, Decoded.Bad {
    /** The one {@link Skip}. */
    Skip SKIP = new Skip();

    /**
     * Not written and not a rejection: a {@code FENCE} marker the unguarded sink ignores, one for a
     * topic this connector does not read, or one whose {@code fence.marker.previous} is unreadable.
     */
    record Skip() implements Decoded {
    }

    /**
     * A record that cannot be written.
     *
     * @param reason the rejection reason for {@code fence.rejected.reason}
     * @param key    the resource id whose stored fence goes in {@code fence.rejected.highest}, or {@code null}
     *               when there is none to read (no usable key, or a copy from a rejected topic)
     * @param detail why, for logs and the dead-letter record
     */
    record Bad(RejectionReason reason, String key, String detail) implements Decoded {
    }
}
