package dev.fencedwrites.producer;

/**
 * Hears the decisions on this writer's records ({@link WriteDecisions}). Called on the watcher's one thread, in the order of
 * each partition; a slow listener delays later decisions, one that throws is logged and does not stop the watcher.
 */
@FunctionalInterface
public interface DecisionListener {
    /** One decision: {@link WriteDecision#accepted()}, or rejected with its reason ({@link WriteDecision#fenced()}). */
    void onDecision(WriteDecision decision);

    /**
     * The watcher stopped reading for good (a missing READ ACL on the accepted or rejected topic, a deleted topic, a
     * broker error Kafka's consumer does not retry): no later decision will be heard, so a writer that relies on hearing
     * that it was fenced should stop or start a new {@link WriteDecisions}. Called once, on the watcher's thread, before
     * its consumer closes; not called after {@link WriteDecisions#close()}. The default does nothing (the failure is
     * logged at ERROR).
     */
    default void onFailure(Throwable cause) {
    }
}
