package dev.fencedwrites.enforcer;

import dev.fencedwrites.enforcer.internal.CommittedFences;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells whether this process may have lost its tasks to a pause: a {@code SIGSTOP}, a long GC pause or a suspended VM that
 * stopped every thread, heartbeats included, for long enough that the consumer group may have given its tasks to another
 * instance. Until its consumer rejoins, such a zombie still holds its state stores open and would answer
 * {@code GET /fences/{key}} with fences the new owner has since raised.
 *
 * <p>Detection: a watchdog thread ticks every {@code tick}; a gap between ticks longer than {@code threshold} is a pause,
 * and so, for the HTTP server, is a last tick older than {@code threshold} (a pause that just ended, before the watchdog
 * ran). {@code threshold} is the shorter of half {@code session.timeout.ms} and {@code session.timeout.ms} minus
 * {@code heartbeat.interval.ms} of the main consumer: a pause shorter than the latter cannot by itself have let the group
 * coordinator go a whole session without a heartbeat (Kafka's consumer documentation of both settings).
 *
 * <p>A process that runs but whose main consumer has heard nothing from its group coordinator for {@code session.timeout.ms}
 * minus {@code heartbeat.interval.ms} (a network partition) is refused the same way ({@link #coordinatorRefusal}), and
 * once a response comes the silence counts as a pause that just ended: the first response after a long silence may be
 * {@code UNKNOWN_MEMBER_ID} (the member was removed, its tasks given to another instance), and the stream thread closes
 * its tasks only at its next poll, while the stores still answer. Under the {@code streams} group protocol (KIP-1071)
 * the session timeout and heartbeat interval are the broker's ({@code group.streams.*}), not the client's: the silence
 * allowed is then at least 10 s ({@link Settings#underStreamsProtocol}).
 *
 * <p>Rule: after a pause, {@link #refusal} names it until the instance has proved that it still owns its tasks, that is
 * each stream thread has completed two commits since the pause was seen (the first may have begun before it; under
 * exactly_once_v2 a commit fails with the group's generation, KIP-447, and under at_least_once {@code commitSync} fails
 * the same way once the member was removed), or until {@code session.timeout.ms} has passed since the pause, time in which
 * a removed member's heartbeat thread learns of its removal and the stream thread gives up its tasks. Thread-safe.
 */
final class PauseWatch implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PauseWatch.class);
    /** Commits each stream thread must complete after a pause to prove it still owns its tasks. */
    static final int PROOF_COMMITS = 2;

    /**
     * The timing of the watch.
     *
     * @param sessionTimeout the main consumer's {@code session.timeout.ms}
     * @param threshold      the shortest gap between ticks that counts as a pause
     * @param tick           how often the watchdog ticks
     * @param maxPollInterval the main consumer's {@code max.poll.interval.ms}
     * @param coordinatorSilence the longest time without a heartbeat response before answers stop: {@code session.timeout.ms}
     *                        minus {@code heartbeat.interval.ms} (the coordinator removes a member a session after the last
     *                        heartbeat it received) minus a tick (a response is seen at the next tick), at least the pause
     *                        threshold; a classic rebalance's join phase sends
     *                        no heartbeats, so only a join longer than this makes a healthy instance answer 503
     */
    record Settings(Duration sessionTimeout, Duration threshold, Duration tick, Duration maxPollInterval,
            Duration coordinatorSilence) {
        /** Settings whose coordinator silence is the pause threshold. */
        Settings(Duration sessionTimeout, Duration threshold, Duration tick, Duration maxPollInterval) {
            this(sessionTimeout, threshold, tick, maxPollInterval, threshold);
        }

        /**
         * The settings for the main consumer configured in {@code streamsProperties} (with Kafka Streams' prefixes
         * {@code main.consumer.} and {@code consumer.}, or none; Kafka's defaults otherwise).
         */
        static Settings of(Properties streamsProperties) {
            long session = consumerSetting(streamsProperties, ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG);
            long heartbeat = consumerSetting(streamsProperties, ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG);
            long threshold = Math.max(1, Math.min(session / 2, session - heartbeat));
            return new Settings(Duration.ofMillis(session), Duration.ofMillis(threshold), Duration.ofMillis(tick(threshold)),
                    Duration.ofMillis(consumerSetting(streamsProperties, ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG)),
                    Duration.ofMillis(Math.max(threshold, session - heartbeat - tick(threshold))));
        }

        /** How often the watchdog ticks for a pause threshold of {@code threshold} ms: a tenth of it, 20 to 500 ms. */
        private static long tick(long threshold) {
            return Math.max(20, Math.min(threshold / 10, 500));
        }

        /**
         * These settings under the {@code streams} group protocol (KIP-1071), whose heartbeat interval and session timeout
         * are the broker's ({@code group.streams.heartbeat.interval.ms}, 5 s by default and at least that; the session 45 s
         * by default): the coordinator silence is at least two of its heartbeat intervals, 10 s.
         */
        Settings underStreamsProtocol() {
            Duration silence = coordinatorSilence.compareTo(Duration.ofSeconds(10)) < 0
                    ? Duration.ofSeconds(10)
                    : coordinatorSilence;
            return new Settings(sessionTimeout, threshold, tick, maxPollInterval, silence);
        }

        private static long consumerSetting(Properties streamsProperties, String name) {
            for (String key : List.of(StreamsConfig.mainConsumerPrefix(name), StreamsConfig.consumerPrefix(name), name)) {
                Object value = streamsProperties.get(key);
                if (value != null) {
                    return Long.parseLong(value.toString().strip());
                }
            }
            return ((Number) ConsumerConfig.configDef().defaultValues().get(name)).longValue();
        }
    }

    /** Main consumer {@code client} last heard from its group coordinator at {@code nanos} ({@link System#nanoTime}). */
    private record Heard(String client, long nanos) {
    }

    /**
     * A pause the watchdog saw, or a silence of the group coordinator: it ended at {@code endedNanos}, lasted {@code nanos};
     * the threads' commit counts then; {@code what} names it for the refusal.
     */
    private record Pause(long endedNanos, long nanos, Map<String, Long> commitsAtEnd, String what) {
    }

    private final Settings settings;
    private final LongSupplier nanoClock;
    private final Supplier<Map<String, Long>> commitCounts;
    private final Supplier<Map<String, Long>> heartbeatCounts;
    /** Each main consumer's heartbeat count at its last change, and when the watchdog saw it change; watchdog only. */
    private final Map<String, long[]> heartbeats = new HashMap<>();
    /** The main consumer that heard least recently from its group coordinator; {@code null}: no counts, the rule is off. */
    private volatile Heard leastRecentlyHeard;
    private final ScheduledExecutorService watchdog;
    private volatile long lastTick;
    private final AtomicReference<Pause> pause = new AtomicReference<>();

    /**
     * A watch without the coordinator rule (no heartbeat counts).
     *
     * @param commitCounts each stream thread's {@code commit-total}, by thread name
     * @param nanoClock    {@link System#nanoTime} but in tests
     */
    PauseWatch(Settings settings, Supplier<Map<String, Long>> commitCounts, LongSupplier nanoClock) {
        this(settings, commitCounts, Map::of, nanoClock);
    }

    /**
     * @param commitCounts    each stream thread's {@code commit-total}, by thread name
     * @param heartbeatCounts each main consumer's {@code heartbeat-total} (responses from the group coordinator), by client
     *                        id; empty turns the coordinator rule off
     * @param nanoClock       {@link System#nanoTime} but in tests
     */
    PauseWatch(Settings settings, Supplier<Map<String, Long>> commitCounts, Supplier<Map<String, Long>> heartbeatCounts,
            LongSupplier nanoClock) {
        this.settings = settings;
        this.commitCounts = commitCounts;
        this.heartbeatCounts = heartbeatCounts;
        this.nanoClock = nanoClock;
        this.lastTick = nanoClock.getAsLong();
        this.watchdog = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "enforcer-pause-watchdog");
            thread.setDaemon(true);
            return thread;
        });
    }

    /** Each stream thread's {@code commit-total} in {@code streams}' metrics, by thread name. */
    static Supplier<Map<String, Long>> threadCommits(KafkaStreams streams) {
        return totals(streams, CommittedFences.THREAD_METRICS_GROUP, CommittedFences.COMMIT_TOTAL, CommittedFences.THREAD_ID_TAG,
                thread -> true);
    }

    /**
     * Each main consumer's {@code heartbeat-total} (group {@code consumer-coordinator-metrics}: heartbeat responses received,
     * errors included) in {@code streams}' metrics, by client id; empty when the consumers have no such metric.
     */
    static Supplier<Map<String, Long>> mainConsumerHeartbeats(KafkaStreams streams) {
        return totals(streams, "consumer-coordinator-metrics", "heartbeat-total", "client-id",
                client -> client.endsWith("-consumer") && !client.endsWith("-restore-consumer"));
    }

    /** The values of metric {@code group}/{@code name} in {@code streams}' metrics, by their {@code tag} that {@code keep}s. */
    private static Supplier<Map<String, Long>> totals(KafkaStreams streams, String group, String name, String tag,
            Predicate<String> keep) {
        return () -> {
            Map<String, Long> counts = new HashMap<>();
            streams.metrics().forEach((metricName, metric) -> {
                String tagged = metricName.tags().get(tag);
                if (metricName.name().equals(name) && metricName.group().equals(group) && tagged != null && keep.test(tagged)) {
                    counts.put(tagged, ((Number) metric.metricValue()).longValue());
                }
            });
            return counts;
        };
    }

    /** Starts the watchdog thread. */
    void start() {
        lastTick = nanoClock.getAsLong();
        long tick = settings.tick().toNanos();
        // A task that throws is not run again by the executor: an exception is logged, and the next tick comes.
        watchdog.scheduleWithFixedDelay(() -> {
            try {
                tick();
            } catch (RuntimeException e) {
                LOG.warn("the pause watchdog's tick failed", e);
            }
        }, tick, tick, TimeUnit.NANOSECONDS);
    }

    /** One tick of the watchdog: records a pause when the gap since the last tick exceeds the threshold. */
    void tick() {
        long now = nanoClock.getAsLong();
        long gap = now - lastTick;
        if (gap > settings.threshold().toNanos()) {
            // Before the tick time: a reader that sees the fresh tick sees the pause too.
            pause.set(new Pause(now, gap, commitCounts.get(), "this process was paused for "
                    + TimeUnit.NANOSECONDS.toMillis(gap) + " ms (SIGSTOP, GC or a suspended VM)"));
            LOG.warn("this process was paused for {} ms (SIGSTOP, GC or a suspended VM), past {} ms: GET /fences/{key} answers "
                    + "503 until two commits prove it still owns its tasks, or for session.timeout.ms={}",
                    TimeUnit.NANOSECONDS.toMillis(gap), settings.threshold().toMillis(), settings.sessionTimeout().toMillis());
        }
        heard(now);
        lastTick = now;
    }

    /** Notes which main consumers heard from their coordinator since the last tick. */
    private void heard(long now) {
        Map<String, Long> counts = heartbeatCounts.get();
        heartbeats.keySet().retainAll(counts.keySet());
        Heard oldest = null;
        for (Map.Entry<String, Long> consumer : counts.entrySet()) {
            long[] seen = heartbeats.computeIfAbsent(consumer.getKey(), client -> new long[]{consumer.getValue(), now});
            if (seen[0] != consumer.getValue()) {
                long silence = now - seen[1];
                if (silence > settings.coordinatorSilence().toNanos()) {
                    // set before leastRecentlyHeard moves on: refusal() reads them the other way round
                    pause.set(new Pause(now, silence, commitCounts.get(), "consumer " + consumer.getKey() + " had no heartbeat "
                            + "response from its group coordinator for " + TimeUnit.NANOSECONDS.toMillis(silence)
                            + " ms (a network partition)"));
                    LOG.warn(
                            "consumer {} heard from its group coordinator again after {} ms: GET /fences/{key} answers 503 until "
                                    + "two commits prove it still owns its tasks, or for session.timeout.ms={}",
                            consumer.getKey(),
                            TimeUnit.NANOSECONDS.toMillis(silence), settings.sessionTimeout().toMillis());
                }
                seen[0] = consumer.getValue();
                seen[1] = now;
            }
            if (oldest == null || seen[1] < oldest.nanos()) {
                oldest = new Heard(consumer.getKey(), seen[1]);
            }
        }
        leastRecentlyHeard = oldest;
    }

    /**
     * Why this instance must not answer from the state store of a task whose stream thread last ran its loop at
     * {@code streamThreadSeen} ({@link System#nanoTime}; empty: unknown), or empty when it may. Besides the pause rule: a
     * stream thread that has not run for half its consumer's {@code max.poll.interval.ms} (a record waiting for etcd, a
     * stall) may have been removed from the group, whose heartbeat thread leaves it once that interval passes without a
     * poll (Kafka's consumer documentation of {@code max.poll.interval.ms}).
     */
    Optional<String> refusal(OptionalLong streamThreadSeen) {
        // The coordinator rule first: the watchdog sets a silence's pause before it moves leastRecentlyHeard on, so a reader
        // that sees the silence over sees the pause too
        Optional<String> refused = coordinatorRefusal().or(this::pauseRefusal);
        if (refused.isPresent() || streamThreadSeen.isEmpty()) {
            return refused;
        }
        long idle = nanoClock.getAsLong() - streamThreadSeen.getAsLong();
        if (idle > settings.maxPollInterval().toNanos() / 2) {
            return Optional.of(String.format("the stream thread that owns this key has not run for %d ms (a record waiting "
                    + "for etcd, or a stall), past half of max.poll.interval.ms=%d, after which its consumer leaves the group: "
                    + "the key may be another instance's now", TimeUnit.NANOSECONDS.toMillis(idle),
                    settings.maxPollInterval().toMillis()));
        }
        return Optional.empty();
    }

    /**
     * A main consumer that has had no heartbeat response for longer than the pause threshold while the process ran (a
     * network partition from the group coordinator): once {@code session.timeout.ms} passes
     * without a heartbeat, the coordinator removes the member and another instance may own its keys, while its stream thread
     * may still poll and this process still holds the stores open.
     */
    private Optional<String> coordinatorRefusal() {
        Heard heard = leastRecentlyHeard;
        if (heard == null) {
            return Optional.empty();
        }
        long silent = nanoClock.getAsLong() - heard.nanos();
        if (silent <= settings.coordinatorSilence().toNanos()) {
            return Optional.empty();
        }
        return Optional.of(String.format("consumer %s has had no heartbeat response from its group coordinator for %d ms, past "
                + "the %d ms after which the group may have given its tasks to another instance (session.timeout.ms=%d): the "
                + "key may be another instance's now", heard.client(), TimeUnit.NANOSECONDS.toMillis(silent),
                settings.coordinatorSilence().toMillis(), settings.sessionTimeout().toMillis()));
    }

    private Optional<String> pauseRefusal() {
        long now = nanoClock.getAsLong();
        long sinceTick = now - lastTick;
        long threshold = settings.threshold().toNanos();
        if (sinceTick > threshold) {
            return Optional.of(String.format("this process was paused for at least %d ms (SIGSTOP, GC or a suspended VM), past "
                    + "the %d ms after which its consumer group may have given its tasks to another instance "
                    + "(session.timeout.ms=%d); it answers again once it proves it still owns them",
                    TimeUnit.NANOSECONDS.toMillis(sinceTick), settings.threshold().toMillis(),
                    settings.sessionTimeout().toMillis()));
        }
        Pause seen = pause.get();
        if (seen == null) {
            return Optional.empty();
        }
        boolean waitedOut = now - seen.endedNanos() >= settings.sessionTimeout().toNanos();
        if (waitedOut || provenByCommits(seen)) {
            pause.compareAndSet(seen, null);
            return Optional.empty();
        }
        return Optional.of(String.format("%s, long enough for its consumer group to have given its tasks to another instance "
                + "(session.timeout.ms=%d); it answers again after %d commits of each stream thread prove it still owns them, "
                + "or %d ms after that ended", seen.what(), settings.sessionTimeout().toMillis(), PROOF_COMMITS,
                settings.sessionTimeout().toMillis()));
    }

    private boolean provenByCommits(Pause seen) {
        if (seen.commitsAtEnd().isEmpty()) {
            return false;
        }
        Map<String, Long> now = commitCounts.get();
        return seen.commitsAtEnd().entrySet().stream()
                .allMatch(thread -> now.getOrDefault(thread.getKey(), Long.MIN_VALUE) >= thread.getValue() + PROOF_COMMITS);
    }

    @Override
    public void close() {
        watchdog.shutdownNow();
    }
}
