package dev.fencedwrites.history;

/**
 * One thing {@code fence verify} found wrong.
 *
 * @param kind   what rule it breaks
 * @param key    the record key (resource id); {@code ""} for a record without one
 * @param detail the offsets involved ({@code topic-partition@offset}) and the fences in conflict, for a person
 */
public record Violation(ViolationKind kind, String key, String detail) {
    /** One line: control characters in the key and detail (a hostile key's newline) shown as {@code \\uXXXX}. */
    @Override
    public String toString() {
        return kind + " " + printable(key) + ": " + printable(detail);
    }

    private static String printable(String text) {
        StringBuilder out = new StringBuilder(text.length());
        text.codePoints().forEach(c -> {
            if (Character.isISOControl(c)) {
                out.append(String.format("\\u%04x", c));
            } else {
                out.appendCodePoint(c);
            }
        });
        return out.toString();
    }
}
