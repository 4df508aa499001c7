package example.worker;

import dev.fencedwrites.producer.DecisionListener;
import dev.fencedwrites.producer.WriteDecision;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * What the enforcer decided on this worker's writes: prints each decision and tells the worker when it was fenced.
 * Counts the enforcer's decisions (one per write: accepted or rejected by the enforcer); the sink's rejections of
 * accepted writes are printed too.
 */
final class Decisions implements DecisionListener {
    private final AtomicInteger decided = new AtomicInteger();
    private final AtomicInteger accepted = new AtomicInteger();
    private final AtomicBoolean fenced = new AtomicBoolean();
    private volatile Consumer<WriteDecision> onFenced = decision -> {
    };

    void onFenced(Consumer<WriteDecision> listener) {
        this.onFenced = listener;
    }

    @Override
    public synchronized void onDecision(WriteDecision decision) {
        if (decision.accepted()) {
            Worker.say("accepted", decision.resource() + "  token=" + decision.fence() + " -> " + decision.topic() + "-"
                    + decision.partition() + "@" + decision.offset());
            accepted.incrementAndGet();
        } else {
            Worker.say(decision.fenced() ? "FENCED" : "rejected", decision.resource() + "  token=" + decision.fence() + "  "
                    + decision.reason() + " by the fence " + decision.highest() + "  stage=" + decision.stage());
            fenced.compareAndSet(false, decision.fenced());
            if (decision.fenced()) {
                onFenced.accept(decision);
            }
        }
        if (decision.accepted() || "enforcer".equals(decision.stage())) {
            decided.incrementAndGet();
        }
        notifyAll();
    }

    /** Waits until the enforcer decided on {@code writes} writes, at most {@code timeout}. */
    synchronized void awaitAtLeast(int writes, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (decided.get() < writes && System.nanoTime() < deadline) {
            TimeUnit.NANOSECONDS.timedWait(this, Math.max(1, deadline - System.nanoTime()));
        }
    }

    /** 0 when every write was accepted, 3 when one was fenced or rejected, 1 when a decision did not arrive. */
    int exitStatus(int writes) {
        if (decided.get() < writes) {
            Worker.say("unknown", "decisions on " + (writes - decided.get()) + " of " + writes + " writes did not arrive");
            return 1;
        }
        return accepted.get() == writes ? 0 : 3;
    }
}
