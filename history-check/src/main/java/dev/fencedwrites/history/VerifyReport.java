package dev.fencedwrites.history;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintWriter;
import java.util.Map;

/** {@code fence verify}'s output: a summary table and each violation, or one JSON object ({@code --json}). */
public final class VerifyReport {
    private static final ObjectMapper JSON = new ObjectMapper();

    private VerifyReport() {
    }

    /** The summary table (records, keys, decisions by outcome, violations by kind), then each violation and each note. */
    public static void text(PipelineVerifier.Result result, PrintWriter out) {
        Findings findings = result.findings();
        out.println("Records");
        findings.counts().forEach((what, n) -> row(out, what, n));
        out.println("Decisions on the output topics (accepted records, rejected copies of stage enforcer, published markers)");
        findings.decisions().forEach((what, n) -> row(out, what, n));
        out.println("Violations");
        for (ViolationKind kind : ViolationKind.values()) {
            row(out, kind.name() + " (" + kind.title() + ")", findings.byKind().getOrDefault(kind, 0L));
        }
        row(out, "total", findings.violations());
        if (!findings.described().isEmpty()) {
            out.println();
            findings.described().forEach(v -> out.println(v));
            long more = findings.violations() - findings.described().size();
            if (more > 0) {
                out.printf("... and %,d more (counted above)%n", more);
            }
        }
        if (!findings.notes().isEmpty()) {
            out.println();
            findings.notes().forEach(note -> out.println("note: " + note));
        }
        out.println();
        out.printf("%s in %.1f s%n", findings.violations() == 0
                ? "0 violations: every decided input record was decided once, as the rule decides it, and the checks held"
                : findings.violations() + (findings.violations() == 1 ? " violation" : " violations"), result.seconds());
        out.flush();
    }

    /** One JSON object: {@code counts}, {@code decisions}, {@code violations} (by kind), {@code total}, {@code described}, ... */
    public static String json(PipelineVerifier.Result result) {
        Findings findings = result.findings();
        ObjectNode root = JSON.createObjectNode();
        root.set("counts", map(findings.counts()));
        root.set("decisions", map(findings.decisions()));
        ObjectNode kinds = root.putObject("violations");
        for (ViolationKind kind : ViolationKind.values()) {
            kinds.put(kind.name(), findings.byKind().getOrDefault(kind, 0L));
        }
        root.put("total", findings.violations());
        ArrayNode described = root.putArray("described");
        findings.described().forEach(v -> described.addObject().put("kind", v.kind().name()).put("key", v.key())
                .put("detail", v.detail()));
        ArrayNode notes = root.putArray("notes");
        findings.notes().forEach(notes::add);
        root.put("seconds", Math.round(result.seconds() * 10) / 10.0);
        return root.toString();
    }

    private static ObjectNode map(Map<String, Long> counts) {
        ObjectNode node = JSON.createObjectNode();
        counts.forEach(node::put);
        return node;
    }

    private static void row(PrintWriter out, String what, long n) {
        out.printf("  %-96s %,12d%n", what, n);
    }
}
