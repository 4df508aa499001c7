package dev.fencedwrites.avro;

import java.util.ArrayList;
import java.util.List;

/**
 * Why an Avro payload does not fit its writer schema ({@link AvroPayloadCheck}); the message leads with
 * the field path when there is one, and ends with the byte offset in the payload. No stack trace: it is
 * an expected outcome for hostile input, turned into a {@code SerializationException} by the deserializer.
 */
final class MalformedPayload extends Exception {
    /** Segments of a long field path shown at each end. */
    private static final int PATH_ENDS = 4;
    private final List<String> path = new ArrayList<>();

    MalformedPayload(String problem) {
        super(problem, null, false, false);
    }

    MalformedPayload within(String segment) {
        path.add(0, segment);
        return this;
    }

    @Override
    public String getMessage() {
        if (path.isEmpty()) {
            return super.getMessage();
        }
        // A deep path (a recursive schema) keeps its first and last few segments, so the reason stays in view.
        List<String> shown = path.size() <= 2 * PATH_ENDS + 1 ? path : new ArrayList<>(path.subList(0, PATH_ENDS));
        if (shown != path) {
            shown.add("(" + (path.size() - 2 * PATH_ENDS) + " more)");
            shown.addAll(path.subList(path.size() - PATH_ENDS, path.size()));
        }
        StringBuilder where = new StringBuilder("field ");
        for (String segment : shown) {
            if (!segment.startsWith("[") && where.length() > "field ".length()) {
                where.append('.');
            }
            where.append(segment);
        }
        return where + ": " + super.getMessage();
    }
}
