package dev.fencedwrites.sink.internal;

import dev.fencedwrites.contract.Fence;
import org.apache.kafka.connect.data.Struct;

/**
 * A decoded record the table takes: a data write, a delete, or a winning {@code FENCE} marker.
 * Each carries the row's primary key (the resource id, non-empty) and the record's fence.
 */
public sealed interface Row extends Decoded permits Row.Upsert, Row.Delete, Row.FenceOnly {
    /** The row's primary key, {@code resource_key}. */
    String key();

    /** The record's fence. */
    Fence fence();

    /** A data write ({@code value} non-null), or a delete when {@code value} is {@code null}. */
    static Row of(String key, Struct value, Fence fence) {
        return value == null ? new Delete(key, fence) : new Upsert(key, value, fence);
    }

    /** A {@code FENCE} marker for {@code key} with no earlier fence at the enforcer. */
    static Row marker(String key, Fence fence) {
        return new FenceOnly(key, fence, null);
    }

    /** A {@code FENCE} marker for {@code key} that superseded {@code previous} at the enforcer ({@code null}: none). */
    static Row marker(String key, Fence fence, Fence previous) {
        return new FenceOnly(key, fence, previous);
    }

    /**
     * A record value to write into the data columns.
     *
     * @param value the value, mapped to columns by {@link ColumnMapping}
     */
    record Upsert(String key, Struct value, Fence fence) implements Row {
    }

    /** A null value with op {@code WRITE}: data columns nulled, {@code deleted} set, the fence kept (a soft delete). */
    record Delete(String key, Fence fence) implements Row {
    }

    /**
     * A winning {@code FENCE} marker: only the row's fence rises, the data stays; a key without a row
     * gets a data-less one ({@code deleted} set, data columns NULL).
     *
     * @param previous the fence the marker superseded at the enforcer ({@code fence.marker.previous}), or
     *                 {@code null} when the key had none: the marker then applies only to a row that already
     *                 holds at least that fence (never creating one), so it cannot overtake the previous
     *                 holder's accepted writes still on their way
     */
    record FenceOnly(String key, Fence fence, Fence previous) implements Row {
    }
}
