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

    /** Starts instance 0 on another thread; the start waits for {@link #up}. */
    private CompletableFuture<Instance> slowStart(Instance instance) throws InterruptedException {
        CompletableFuture<Instance> started = CompletableFuture.supplyAsync(() -> {
            try {
                return starts.start(0, () -> {
                    inStart.countDown();
                    up.await(10, TimeUnit.SECONDS);
                    return instance;
                }, kept::add);
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

        assertThatThrownBy(() -> starts.start(0, Instance::new, kept::add)).isInstanceOf(IllegalStateException.class)
                .hasMessage("enforcer 0 is starting");
        Instance other = starts.start(1, Instance::new, kept::add);
        up.countDown();

        assertThat(started.get(10, TimeUnit.SECONDS)).isSameAs(first);
        assertThat(kept).containsExactlyInAnyOrder(first, other);
        assertThat(starts.start(0, Instance::new, kept::add)).as("a restart once the first start ended").isNotNull();
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
        assertThatThrownBy(() -> starts.start(1, Instance::new, kept::add)).hasMessage(
                "enforcer 1: the stack was told to stop");
    }

    @Test
    void aFailedStartLetsTheInstanceStartAgain() throws Exception {
        assertThatThrownBy(() -> starts.start(0, () -> {
            throw new IllegalStateException("port in use");
        }, kept::add)).hasMessage("port in use");

        assertThat(starts.start(0, Instance::new, kept::add)).isNotNull();
        assertThat(kept).hasSize(1);
    }
}
