package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.RejectionReason;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Map;

/**
 * The enforcer's counters, in the project's one metric family {@code fence_*} (named like
 * the sink's {@code fence_sink_records_fenced_total{reason}}). In Prometheus form:
 * {@code fence_enforcer_records_fenced_total{reason}} (records sent to the rejected topic, by
 * reason), {@code fence_enforcer_records_accepted_total}, {@code fence_enforcer_markers_accepted_total},
 * {@code fence_enforcer_rejected_copies_reduced_total{step}}, and
 * {@code fence_enforcer_records_replayed_total{outcome="accepted"|"rejected"|"marker"}}: records decided
 * against their key's history because the fence store was ahead of the committed offsets
 * (at_least_once after a crash); an accepted one was forwarded again, so it may be on the
 * accepted topic twice. {@code fence_enforcer_records_rerouted_total}: records that arrived on another
 * input partition than murmur2 assigns their key and were sent through the repartition topic to the
 * partition owning the key's fence; each is also counted where it is decided. Counters
 * count processing attempts; under exactly-once a record reprocessed after a crash is counted again
 * even though its output is written once.
 */
public final class EnforcerMetrics {
    private final Counter accepted;
    private final Counter markers;
    private final Counter rerouted;
    private final Counter changelogRead;
    private final Counter changelogRewritten;
    private final Map<RejectionReason, Counter> rejected = new EnumMap<>(RejectionReason.class);
    private final Map<String, Counter> replayed = new HashMap<>();
    private final Map<RejectedCopy.Step, Counter> reduced = new EnumMap<>(RejectedCopy.Step.class);

    public EnforcerMetrics(MeterRegistry registry) {
        accepted = Counter.builder("fence.enforcer.records.accepted").description("Input records forwarded to the accepted topic")
                .register(registry);
        markers = Counter.builder("fence.enforcer.markers.accepted")
                .description("FENCE markers that raised a key's fence (not forwarded)")
                .register(registry);
        rerouted = Counter.builder("fence.enforcer.records.rerouted")
                .description("Input records on another partition than murmur2 assigns their key, sent through the repartition "
                        + "topic to the partition that owns the key's fence")
                .register(registry);
        changelogRead = Counter.builder("fence.enforcer.changelog.records.read")
                .description("Fence store changelog records read back because the changelog held records this task did not "
                        + "write, or a restore skipped (at_least_once: an instance that had lost the task flushing older fences)")
                .register(registry);
        changelogRewritten = Counter.builder("fence.enforcer.changelog.fences.rewritten")
                .description("Fences written to the changelog again because its last record of the key was below the store's "
                        + "(after such a record, or a restore that skipped one)")
                .register(registry);
        for (RejectionReason reason : RejectionReason.values()) {
            if (reason == RejectionReason.MALFORMED_VALUE) {
                continue; // decided by the sink only
            }
            rejected.put(reason,
                    Counter.builder("fence.enforcer.records.fenced")
                            .description("Input records sent to the rejected topic, by reason")
                            .tag("reason", reason.name()).register(registry));
        }
        for (String outcome : new String[]{"accepted", "rejected", "marker"}) {
            replayed.put(outcome, Counter.builder("fence.enforcer.records.replayed")
                    .description(
                            "Records decided against the fence they met the first time, the fence store being ahead of the "
                                    + "committed offsets (at_least_once after a crash); accepted ones were forwarded again")
                    .tag("outcome", outcome).register(registry));
        }
        for (RejectedCopy.Step step : RejectedCopy.Step.values()) {
            if (step != RejectedCopy.Step.FULL) {
                reduced.put(step, Counter.builder("fence.enforcer.rejected.copies.reduced")
                        .description(
                                "Rejected copies reduced to fit the rejected topic, by what was kept: WITHOUT_VALUE, "
                                        + "WITHOUT_HEADERS, REFERENCE")
                        .tag("step", step.name()).register(registry));
            }
        }
    }

    void copyReduced(RejectedCopy.Step step) {
        reduced.get(step).increment();
    }

    void accepted() {
        accepted.increment();
    }

    void rerouted() {
        rerouted.increment();
    }

    void changelogRead(long records) {
        changelogRead.increment(records);
    }

    void changelogRewritten(long fences) {
        changelogRewritten.increment(fences);
    }

    void markerAccepted() {
        markers.increment();
    }

    void replayed(String outcome) {
        replayed.get(outcome).increment();
    }

    void rejected(RejectionReason reason) {
        Counter counter = rejected.get(reason);
        if (counter != null) {
            counter.increment();
        }
    }
}
