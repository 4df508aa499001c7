package dev.fencedwrites.history;

import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What {@code fence verify} counted and found: records per topic, decisions by outcome, violations by kind (exact) and the
 * first {@value #DESCRIBED} violations described. One thread.
 */
public final class Findings {
    /** Violations described one by one; the rest are only counted. */
    static final int DESCRIBED = 1000;

    private final Map<String, Long> counts = new LinkedHashMap<>();
    private final Map<String, Long> decisions = new TreeMap<>();
    private final Map<ViolationKind, Long> byKind = new EnumMap<>(ViolationKind.class);
    private final List<Violation> described = new ArrayList<>();
    private final List<String> notes = new ArrayList<>();

    void count(String what) {
        add(what, 1);
    }

    void add(String what, long n) {
        counts.merge(what, n, Long::sum);
    }

    /** One decision of the enforcer, by outcome ({@code ACCEPTED}, {@code MARKER} or a rejection reason). */
    void decided(String outcome) {
        decisions.merge(outcome, 1L, Long::sum);
    }

    /** One violation; {@code key} as verify keeps it ({@link OutputRecord#key(byte[])}), or {@code null}. */
    void violation(ViolationKind kind, String key, String detail) {
        byKind.merge(kind, 1L, Long::sum);
        if (described.size() < DESCRIBED) {
            described.add(new Violation(kind, OutputRecord.display(key), detail));
        }
    }

    /** Something the reader should know about what was (not) checked, e.g. a consumer group with no committed offsets. */
    void note(String text) {
        notes.add(text);
    }

    public Map<String, Long> counts() {
        return Collections.unmodifiableMap(counts);
    }

    public Map<String, Long> decisions() {
        return Collections.unmodifiableMap(decisions);
    }

    public Map<ViolationKind, Long> byKind() {
        return Collections.unmodifiableMap(byKind);
    }

    public long violations() {
        return byKind.values().stream().mapToLong(Long::longValue).sum();
    }

    public List<Violation> described() {
        return Collections.unmodifiableList(described);
    }

    public List<String> notes() {
        return Collections.unmodifiableList(notes);
    }
}
