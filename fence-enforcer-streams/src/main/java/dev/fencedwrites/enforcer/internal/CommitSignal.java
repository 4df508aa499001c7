package dev.fencedwrites.enforcer.internal;

import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.state.StoreBuilder;

/**
 * A state store that holds nothing and tells the fence processor of its task that the task's input
 * offsets were committed: the processor then knows that no replay can start before the records it
 * has processed so far.
 *
 * <p>Source (Kafka Streams 4.3.1): {@code TaskExecutor.commitTasksAndMaybeUpdateCommittableOffsets}
 * runs {@code StreamTask.prepareCommit} (flushes the store caches, then the producer: every output
 * sent so far is acknowledged), commits the offsets ({@code commitSync} under at_least_once, the
 * transaction under exactly_once_v2), and only then {@code StreamTask.postCommit}, whose
 * {@code ProcessorStateManager.commit()} calls {@link StateStore#commit} on every store of the task,
 * this one included, on the stream thread before the next record is processed. A failed offset
 * commit throws before {@code postCommit}. The other callers of {@code postCommit} without a
 * successful commit (closing a corrupted task, shutting down after a failed commit) close the
 * processor before it processes another record, and a processor only listens between
 * {@code init} and {@code close}. Under exactly_once_v2, {@code postCommit} skips the stores while the
 * task runs, so this store stays silent there: the fence store is never ahead of the offsets under
 * exactly_once_v2 and needs no notice.
 *
 * <p>Not logged, not persistent, not queryable.
 */
public final class CommitSignal implements StateStore {
    private final String name;
    private volatile Runnable listener;
    private volatile boolean open;

    public CommitSignal(String name) {
        this.name = name;
    }

    /** A builder for {@link org.apache.kafka.streams.Topology#addStateStore}: never cached, never logged. */
    public static StoreBuilder<CommitSignal> builder(String name) {
        return new Builder(name);
    }

    /**
     * Calls {@code onCommit} after each commit of this task's offsets, until {@link #stopListening()}; replaces any earlier
     * listener.
     */
    public void listen(Runnable onCommit) {
        listener = onCommit;
    }

    /** Stops calling the listener. */
    public void stopListening() {
        listener = null;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public void init(StateStoreContext context, StateStore root) {
        context.register(root, (key, value) -> {
            // nothing to restore: the store has no changelog
        });
        open = true;
    }

    @Override
    public void commit(Map<TopicPartition, Long> changelogOffsets) {
        Runnable current = listener;
        if (current != null) {
            current.run();
        }
    }

    @Override
    public void close() {
        open = false;
        listener = null;
    }

    @Override
    public boolean persistent() {
        return false;
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    private record Builder(String name) implements StoreBuilder<CommitSignal> {
        @Override
        public StoreBuilder<CommitSignal> withCachingEnabled() {
            throw new UnsupportedOperationException("the commit signal store holds nothing to cache");
        }

        @Override
        public StoreBuilder<CommitSignal> withCachingDisabled() {
            return this;
        }

        @Override
        public StoreBuilder<CommitSignal> withLoggingEnabled(Map<String, String> config) {
            throw new UnsupportedOperationException("the commit signal store holds nothing to log");
        }

        @Override
        public StoreBuilder<CommitSignal> withLoggingDisabled() {
            return this;
        }

        @Override
        public CommitSignal build() {
            return new CommitSignal(name);
        }

        @Override
        public Map<String, String> logConfig() {
            return Map.of();
        }

        @Override
        public boolean loggingEnabled() {
            return false;
        }
    }
}
