package dev.fencedwrites.failover;

import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.failover.Decided.Input;
import dev.fencedwrites.failover.Decided.Kind;
import dev.fencedwrites.failover.Decided.Output;
import dev.fencedwrites.failover.Decided.Ref;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The failover tests' own checkers, as functions of what was read back, so that each can be shown to
 * fail on a history that breaks its rule (FailoverChecksTest). Each returns the problems it found
 * (empty: the rule held) with the counts it checked. Check (a), the rule replayed over the input, is the history
 * checker's ({@code dev.fencedwrites.history.PipelineVerifier}, with tests of its own).
 */
final class FailoverChecks {
    private FailoverChecks() {
    }

    /** What a check looked at and what it found wrong; at most 10 problems are described. */
    record Result(String name, Map<String, Long> counts, List<String> problems) {
        Result {
            counts = new LinkedHashMap<>(counts);
            problems = List.copyOf(problems);
        }

        String summary() {
            return String.format("%s: %s, %d problems%s", name, counts, problems.size(),
                    problems.isEmpty()
                            ? ""
                            : " (first: " + String.join("; ", problems.subList(0, Math.min(10, problems.size())))
                                    + ")");
        }
    }

    /**
     * Check (b): no stale write accepted. Per key, the fences the enforcer let through (accepted
     * writes and published markers, in input order) strictly rise, and so do the accepted topic's
     * records in their own order.
     */
    static Result noStaleWriteAccepted(List<Input> inputs, List<Output> outputs) {
        List<String> problems = new ArrayList<>();
        Map<Long, Ref> byWriteId = new HashMap<>();
        inputs.forEach(input -> byWriteId.put(input.writeId(), input.ref()));
        List<Output> raises = outputs.stream().filter(o -> o.kind() != Kind.REJECTED)
                .sorted(Comparator.comparing((Output o) -> o.kind() == Kind.ACCEPTED ? byWriteId.get(o.writeId()) : o.source(),
                        Comparator.nullsLast(Comparator.comparingInt(Ref::partition).thenComparingLong(Ref::offset))))
                .toList();
        long checked = rising(raises, "in input order", problems);
        List<Output> accepted = outputs.stream().filter(o -> o.kind() == Kind.ACCEPTED)
                .sorted(Comparator.comparingInt(Output::partition).thenComparingLong(Output::offset)).toList();
        rising(accepted, "on the accepted topic", problems);
        Map<String, Long> counts = new LinkedHashMap<>();
        counts.put("raises checked", checked);
        counts.put("accepted records", (long) accepted.size());
        counts.put("stale writes rejected", outputs.stream().filter(o -> o.reason() == RejectionReason.STALE_TOKEN).count());
        return new Result("(b) no stale write accepted", counts, problems);
    }

    private static long rising(List<Output> ordered, String where, List<String> problems) {
        Map<String, Output> last = new HashMap<>();
        for (Output output : ordered) {
            Output before = last.put(output.key(), output);
            if (before != null && !Decided.above(output.fence(), before.fence())) {
                problems.add(
                        where + ", " + output.key() + " went from " + before.fence() + " to " + output.fence() + ": " + output);
            }
        }
        return ordered.size();
    }
}
