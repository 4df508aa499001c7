package dev.fencedwrites.failover;

import dev.fencedwrites.contract.Decision;
import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceRule;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.failover.Decided.Input;
import dev.fencedwrites.failover.Decided.Kind;
import dev.fencedwrites.failover.Decided.Output;
import dev.fencedwrites.failover.Decided.Ref;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The failover tests' checkers, as functions of what was read back, so that each can be shown to
 * fail on a history that breaks its rule (FailoverChecksTest). Each returns the problems it found
 * (empty: the rule held) with the counts it checked.
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
     * Check (a): every input record decided exactly once across the accepted, rejected (stage
     * enforcer) and markers topics, as the decision rule decides it when applied to the input topic
     * in offset order (a winning marker only raises the fence and is published to the markers topic).
     */
    static Result decidedExactlyOnce(List<Input> inputs, List<Output> outputs) {
        List<String> problems = new ArrayList<>();
        Map<Long, Ref> byWriteId = new HashMap<>();
        for (Input input : inputs) {
            if (input.writeId() >= 0 && byWriteId.put(input.writeId(), input.ref()) != null) {
                problems.add("write id " + input.writeId() + " is on the input topic twice");
            }
        }
        Map<Ref, List<Output>> decisions = new HashMap<>();
        for (Output output : outputs) {
            Ref source = output.kind() == Kind.ACCEPTED ? byWriteId.get(output.writeId()) : output.source();
            if (source == null) {
                problems.add("an output of no input record: " + output);
                continue;
            }
            decisions.computeIfAbsent(source, r -> new ArrayList<>()).add(output);
        }
        Map<Kind, Long> counts = new EnumMap<>(Kind.class);
        long lost = 0;
        long twice = 0;
        long unlikeModel = 0;
        Map<String, Fence> model = new HashMap<>();
        for (Input input : inOffsetOrder(inputs)) {
            List<Output> made = decisions.getOrDefault(input.ref(), List.of());
            Decision expected = FenceRule.decide(model.get(input.key()), input.fence());
            if (expected.accepted()) {
                model.put(input.key(), FenceRule.raise(model.get(input.key()), input.fence()));
            }
            if (made.size() != 1) {
                lost += made.isEmpty() ? 1 : 0;
                twice += made.size() > 1 ? 1 : 0;
                problems.add(input + (made.isEmpty() ? " was never decided" : " was decided " + made.size() + " times: " + made));
                continue;
            }
            Output output = made.get(0);
            counts.merge(output.kind(), 1L, Long::sum);
            Kind expectedKind = !expected.accepted() ? Kind.REJECTED : input.marker() ? Kind.MARKER : Kind.ACCEPTED;
            if (output.kind() != expectedKind || expected.reason() != output.reason()) {
                unlikeModel++;
                problems.add(input + " -> " + output.kind() + " " + output.reason() + ", the rule says " + expectedKind + " "
                        + expected.reason());
            }
        }
        Map<String, Long> shown = new LinkedHashMap<>();
        shown.put("input records", (long) inputs.size());
        shown.put("markers in input", inputs.stream().filter(Input::marker).count());
        counts.forEach((kind, n) -> shown.put(kind.name().toLowerCase(), n));
        shown.put("never decided", lost);
        shown.put("decided twice", twice);
        shown.put("unlike the rule", unlikeModel);
        return new Result("(a) every input record decided exactly once", shown, problems);
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

    /** The input records per partition in offset order, partitions one after another (a key lives on one partition). */
    private static List<Input> inOffsetOrder(List<Input> inputs) {
        return inputs.stream().sorted(Comparator.comparingInt(Input::partition).thenComparingLong(Input::offset)).toList();
    }
}
