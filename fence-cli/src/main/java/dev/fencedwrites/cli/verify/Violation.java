package dev.fencedwrites.cli.verify;

/**
 * One thing {@code fence verify} found wrong.
 *
 * @param kind   what rule it breaks
 * @param key    the record key (resource id); {@code ""} for a record without one
 * @param detail the offsets involved ({@code topic-partition@offset}) and the fences in conflict, for a person
 */
public record Violation(ViolationKind kind, String key, String detail) {
    @Override
    public String toString() {
        return kind + " " + key + ": " + detail;
    }
}
