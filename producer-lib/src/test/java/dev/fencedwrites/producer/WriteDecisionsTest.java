package dev.fencedwrites.producer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.fencedwrites.contract.FenceTopics;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.junit.jupiter.api.Test;

/**
 * The rules of {@link WriteDecisions}' thread (review): a watcher that stops reading says so, and a listener may
 * call {@code watch} and {@code close} on its own watcher. Real decisions on real topics: FenceAtTakeoverIT.
 */
class WriteDecisionsTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    private static MockConsumer<byte[], byte[]> consumer() {
        MockConsumer<byte[], byte[]> consumer = new MockConsumer<>("latest");
        Node node = new Node(0, "localhost", 9092);
        for (String topic : List.of(FenceTopics.ACCEPTED, FenceTopics.REJECTED)) {
            consumer.updatePartitions(topic, List.of(new PartitionInfo(topic, 0, node, new Node[]{node}, new Node[]{node})));
            consumer.updateEndOffsets(Map.of(new TopicPartition(topic, 0), 0L));
        }
        return consumer;
    }

    @Test
    void aWatcherThatStopsReadingTellsTheListenerAndRefusesLaterWatches() throws Exception {
        MockConsumer<byte[], byte[]> consumer = consumer();
        CompletableFuture<Throwable> failure = new CompletableFuture<>();
        DecisionListener listener = new DecisionListener() {
            @Override
            public void onDecision(WriteDecision decision) {
            }

            @Override
            public void onFailure(Throwable cause) {
                failure.complete(cause);
            }
        };
        try (WriteDecisions decisions = new WriteDecisions(consumer, FenceTopics.ACCEPTED, FenceTopics.REJECTED, "w-1",
                listener)) {
            decisions.watch("customer-7", WAIT);
            consumer.setPollException(new TopicAuthorizationException("Not authorized to access topics: [accepted]"));

            assertThat(failure.get(WAIT.toSeconds(), TimeUnit.SECONDS))
                    .isInstanceOf(TopicAuthorizationException.class);
            assertThatThrownBy(() -> decisions.watch("customer-8", WAIT)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("stopped reading").hasMessageContaining("Not authorized");
        }
    }

    @Test
    void aListenerMayWatchAndCloseItsOwnWatcherWithoutWaitingForItself() throws Exception {
        MockConsumer<byte[], byte[]> consumer = consumer();
        AtomicReference<WriteDecisions> self = new AtomicReference<>();
        CompletableFuture<Boolean> closedIn = new CompletableFuture<>();
        WriteDecisions decisions = new WriteDecisions(consumer, FenceTopics.ACCEPTED, FenceTopics.REJECTED, "w-1", d -> {
        });
        self.set(decisions);
        decisions.watch("customer-7", WAIT);
        consumer.schedulePollTask(() -> {
            try {
                self.get().watch("customer-8", Duration.ofSeconds(20));
            } catch (Exception e) {
                closedIn.completeExceptionally(e);
                return;
            }
            self.get().close();
            closedIn.complete(true);
        });

        // A watch from the watcher's thread that waited for that thread would end in a TimeoutException after 20 s.
        assertThat(closedIn.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        await().atMost(WAIT).until(consumer::closed);
    }
}
