package dev.fencedwrites.failover;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.services.Http;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

/**
 * Check (c): polls {@code GET /fences/{key}} for every key from every enforcer instance (one thread
 * per instance, so a stopped one delays no other) for as long as it runs, and finds any answer
 * lower than one that had been received before it was asked (answers that overlap in time are not
 * ordered). Also tells which instance answered with 200 when, so a test can show that a survivor
 * answered while the other instance was down or paused.
 */
final class FenceWatch implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** One 200 answer: asked at {@code askedNanos}, received at {@code answeredNanos}, from {@code url}. */
    record Observation(String url, String key, Fence fence, String servedBy, long askedNanos, long answeredNanos) {
    }

    private final List<String> keys;
    private final List<Observation> observations = new CopyOnWriteArrayList<>();
    private final Map<String, Long> errors = new ConcurrentHashMap<>();
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final List<Thread> threads = new ArrayList<>();

    /**
     * @param urls the enforcer instances' base URLs, read again on each round (an instance restarts on a new port)
     */
    FenceWatch(List<String> keys, Supplier<List<String>> urls, int instances) {
        this.keys = List.copyOf(keys);
        for (int i = 0; i < instances; i++) {
            int instance = i;
            Thread thread = new Thread(() -> poll(() -> urls.get().get(instance)), "fence-watch-" + i);
            thread.setDaemon(true);
            thread.start();
            threads.add(thread);
        }
    }

    private void poll(Supplier<String> url) {
        while (running.get()) {
            for (String key : keys) {
                String base = url.get();
                long asked = System.nanoTime();
                try {
                    HttpResponse<String> response = Http.get(base + "/fences/" + key);
                    if (response.statusCode() == 200) {
                        JsonNode body = JSON.readTree(response.body());
                        Fence fence = new Fence(body.path("token").asLong(),
                                body.path("seq").isNull() ? Fence.NO_SEQ : body.path("seq").asLong());
                        observations.add(new Observation(base, key, fence, body.path("served_by").asText(), asked,
                                System.nanoTime()));
                    } else {
                        errors.merge("HTTP " + response.statusCode(), 1L, Long::sum);
                    }
                } catch (InterruptedException e) {
                    return;
                } catch (Exception e) {
                    errors.merge(e.getClass().getSimpleName(), 1L, Long::sum);
                }
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100)); // the polling pace, not a wait for anything
        }
    }

    List<Observation> observations() {
        return List.copyOf(observations);
    }

    /** Answers other than 200 (a 503 while a rebalance runs, a timeout from a stopped instance), by kind. */
    Map<String, Long> errors() {
        return Map.copyOf(errors);
    }

    /** Whether {@code url} answered 200 for every key, each asked after {@code sinceNanos}. */
    boolean answeredEveryKeySince(String url, long sinceNanos) {
        return keys.stream().allMatch(key -> observations.stream()
                .anyMatch(o -> o.url().equals(url) && o.key().equals(key) && o.askedNanos() > sinceNanos));
    }

    /** The instances ({@code host:port}) that served a 200 answer asked after {@code sinceNanos}. */
    Set<String> servedBySince(long sinceNanos) {
        Set<String> servedBy = new TreeSet<>();
        observations.stream().filter(o -> o.askedNanos() > sinceNanos).forEach(o -> servedBy.add(o.servedBy()));
        return servedBy;
    }

    /** Check (c) over {@code observed}: per key, no answer below one received before it was asked. */
    static FailoverChecks.Result neverDecreased(Collection<Observation> observed) {
        List<String> problems = new ArrayList<>();
        Map<String, List<Observation>> byKey = new ConcurrentHashMap<>();
        observed.forEach(o -> byKey.computeIfAbsent(o.key(), k -> new ArrayList<>()).add(o));
        long pairs = 0;
        for (List<Observation> answers : byKey.values()) {
            answers.sort((a, b) -> Long.compare(a.answeredNanos(), b.answeredNanos()));
            Observation highest = null;
            int next = 0;
            List<Observation> byAsked = new ArrayList<>(answers);
            byAsked.sort((a, b) -> Long.compare(a.askedNanos(), b.askedNanos()));
            for (Observation later : byAsked) {
                while (next < answers.size() && answers.get(next).answeredNanos() < later.askedNanos()) {
                    Observation before = answers.get(next++);
                    highest = highest == null || Decided.above(before.fence(), highest.fence()) ? before : highest;
                }
                pairs++;
                if (highest != null && Decided.above(highest.fence(), later.fence())) {
                    problems.add(later.key() + ": " + later.url() + " (served by " + later.servedBy() + ") answered "
                            + later.fence() + " after " + highest.url() + " (served by " + highest.servedBy() + ") had answered "
                            + highest.fence());
                }
            }
        }
        return new FailoverChecks.Result("(c) fences never decrease",
                Map.of("answers checked", pairs, "keys", (long) byKey.size()),
                problems);
    }

    @Override
    public void close() throws InterruptedException {
        running.set(false);
        for (Thread thread : threads) {
            thread.join(10_000);
        }
    }
}
