package dev.fencedwrites.localstack;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class InstanceStartsTest {
    /** A started instance that records whether it was stopped. */
    private static final class Instance implements AutoCloseable {
        final AtomicBoolean stopped = new AtomicBoolean();

        @Override
        public void close() {
            stopped.set(true);
        }
    }

    private final InstanceStarts<Instance> starts = new InstanceStarts<>("enforcer", 2);
    private final List<Instance> kept = new ArrayList<>();
    private final CountDownLatch inStart = new CountDownLatch(1);
    private final CountDownLatch up = new CountDownLatch(1);
    /** Called by {@link #keep}, under the starts' lock, before the instance is kept: a restart racing the keep. */
    private Runnable whileKeeping = () -> {
    };

    /** Whether instance 0 runs: kept and not stopped, as the owner sees it. */
    private synchronized boolean running0() {
        return !kept.isEmpty() && !kept.get(kept.size() - 1).stopped.get();
    }

    private void keep(Instance instance) {
        whileKeeping.run();
        synchronized (this) {
            kept.add(instance);
        }
    }

    /** Starts instance 0 on another thread; the start waits for {@link #up}. */
    private CompletableFuture<Instance> slowStart(Instance instance) throws InterruptedException {
        CompletableFuture<Instance> started = CompletableFuture.supplyAsync(() -> {
            try {
                return starts.start(0, this::running0, () -> {
                    inStart.countDown();
                    up.await(10, TimeUnit.SECONDS);
                    return instance;
                }, this::keep);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(inStart.await(10, TimeUnit.SECONDS)).isTrue();
        return started;
    }

    @Test
    void aSecondStartOfAnInstanceWhileItStartsIsRefusedAndAnotherInstanceMayStart() throws Exception {
        Instance first = new Instance();
        CompletableFuture<Instance> started = slowStart(first);

        assertThatThrownBy(() -> starts.start(0, this::running0, Instance::new, this::keep))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("enforcer 0 is starting");
        Instance other = starts.start(1, () -> false, Instance::new, this::keep);
        up.countDown();

        assertThat(started.get(10, TimeUnit.SECONDS)).isSameAs(first);
        assertThat(kept).containsExactlyInAnyOrder(first, other);
        assertThatThrownBy(() -> starts.start(0, this::running0, Instance::new, this::keep)).as("a restart while it runs")
                .hasMessage("enforcer 0 is still running; kill it first");
        first.close();
        assertThat(starts.start(0, this::running0, Instance::new, this::keep)).as("a restart once it stopped").isNotNull();
    }

    @Test
    void aRestartRacingTheKeepOfAStartIsRefused() throws Exception {
        CompletableFuture<Throwable> racing = new CompletableFuture<>();
        whileKeeping = () -> {
            // another thread restarts instance 0 between its start's end and its keep
            Thread other = new Thread(() -> {
                try {
                    starts.start(0, this::running0, Instance::new, this::keep);
                    racing.complete(null);
                } catch (Exception e) {
                    racing.complete(e);
                }
            });
            other.start();
            try {
                other.join(500); // it cannot finish while this start holds the lock; it waits for it
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
        Instance first = starts.start(0, this::running0, Instance::new, this::keep);
        whileKeeping = () -> {
        };

        assertThat(racing.get(10, TimeUnit.SECONDS)).as("the racing restart").isNotNull()
                .hasMessage("enforcer 0 is still running; kill it first");
        assertThat(kept).containsExactly(first);
    }

    @Test
    void anInstanceThatComesUpAfterTheCloseIsStoppedAndNotKept() throws Exception {
        Instance late = new Instance();
        CompletableFuture<Instance> started = slowStart(late);

        starts.close();
        up.countDown();

        assertThat(started).failsWithin(10, TimeUnit.SECONDS).withThrowableOfType(Exception.class)
                .withMessageContaining("enforcer 0 came up after the stack was told to stop; stopped it again");
        assertThat(late.stopped).isTrue();
        assertThat(kept).isEmpty();
        assertThatThrownBy(() -> starts.start(1, () -> false, Instance::new, this::keep)).hasMessage(
                "enforcer 1: the stack was told to stop");
    }

    @Test
    void aFailedStartLetsTheInstanceStartAgain() throws Exception {
        assertThatThrownBy(() -> starts.start(0, this::running0, () -> {
            throw new IllegalStateException("port in use");
        }, this::keep)).hasMessage("port in use");

        assertThat(starts.start(0, this::running0, Instance::new, this::keep)).isNotNull();
        assertThat(kept).hasSize(1);
    }
}
