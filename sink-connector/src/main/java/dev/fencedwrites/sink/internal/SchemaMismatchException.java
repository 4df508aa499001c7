package dev.fencedwrites.sink.internal;

/**
 * Thrown when a table does not fit the sink, or a record's schema does not fit the table and the
 * table may not be changed to fit it ({@code auto.create}, {@code auto.evolve}); the message names
 * every mismatch. No record can fix it, so the task fails.
 */
public final class SchemaMismatchException extends RuntimeException {
    SchemaMismatchException(String message) {
        super(message);
    }
}
