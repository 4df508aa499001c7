package dev.fencedwrites.producer;

/**
 * Hears the decisions on this writer's records ({@link WriteDecisions}). Called on the watcher's one thread, in the order of
 * each partition; a slow listener delays later decisions, one that throws is logged and does not stop the watcher.
 */
@FunctionalInterface
public interface DecisionListener {
    /** One decision: {@link WriteDecision#accepted()}, or rejected with its reason ({@link WriteDecision#fenced()}). */
    void onDecision(WriteDecision decision);
}
