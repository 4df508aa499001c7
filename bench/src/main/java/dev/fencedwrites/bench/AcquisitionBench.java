package dev.fencedwrites.bench;

import dev.fencedwrites.producer.FencingLease;
import dev.fencedwrites.producer.FencingLeaseClient;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Token acquisition against a raw etcd put on the same etcd member: lease grant + lock (the
 * token), uncontended, against one {@code put} of a small key (the release, a revoke, is not
 * timed); and
 * acquisitions per second of one resource when {@code clients} clients contend for it.
 */
final class AcquisitionBench {
    private AcquisitionBench() {
    }

    /**
     * @param endpoint   the etcd client URL
     * @param iterations timed operations of each kind (after as many warm-up operations, at least 20)
     * @param contention how long the contended run lasts
     * @param clients    contending clients, each with its own connection
     */
    static List<Figure> measure(String endpoint, int iterations, Duration contention, int clients, Consumer<String> progress)
            throws Exception {
        double[] puts;
        double[] acquisitions;
        try (Client etcd = Client.builder().endpoints(endpoint).build();
                FencingLeaseClient leases = new FencingLeaseClient(List.of(endpoint), "fenced-writes/bench/locks/")) {
            ByteSequence key = ByteSequence.from("fenced-writes/bench/put", StandardCharsets.UTF_8);
            ByteSequence value = ByteSequence.from("x".repeat(64), StandardCharsets.UTF_8);
            int warmup = Math.max(20, iterations / 10);
            progress.accept("etcd: " + iterations + " puts and " + iterations + " acquisitions, interleaved in rounds");
            puts = new double[iterations];
            acquisitions = new double[iterations];
            for (int i = -warmup; i < iterations; i++) {
                // Interleaved, so drift on a busy machine hits both alike.
                long start = System.nanoTime();
                etcd.getKVClient().put(key, value).get(10, TimeUnit.SECONDS);
                long put = System.nanoTime() - start;
                start = System.nanoTime();
                FencingLease lease = leases.acquire("uncontended", Duration.ofSeconds(10), Duration.ofSeconds(10));
                long acquisition = System.nanoTime() - start;
                if (lease.token() <= 0) {
                    throw new IllegalStateException("no token");
                }
                lease.close();
                if (i >= 0) {
                    puts[i] = put / 1e6;
                    acquisitions[i] = acquisition / 1e6;
                }
            }
        }
        List<Figure> figures = new ArrayList<>();
        figures.add(new Figure("token acquisition p50 vs raw etcd put p50", percentile(acquisitions, 50), percentile(puts, 50),
                "ms", "<= 3", false));
        figures.add(new Figure("token acquisition p99 vs raw etcd put p99", percentile(acquisitions, 99), percentile(puts, 99),
                "ms", "<= 3", false));
        progress.accept("etcd: " + clients + " clients contending for one resource for " + contention.toSeconds() + " s");
        double contended = contended(endpoint, contention, clients);
        // The same acquire-and-release loop with one client: the baseline pays for the release too.
        progress.accept("etcd: one client acquiring and releasing the resource alone for " + contention.toSeconds() + " s");
        double uncontendedRate = contended(endpoint, contention, 1);
        figures.add(new Figure("acquisitions/s of one resource, " + clients + " contending clients vs one client alone",
                contended, uncontendedRate,
                "acq/s", "", true));
        return figures;
    }

    /** Acquisitions per second of one resource, each client acquiring and releasing it in a loop. */
    private static double contended(String endpoint, Duration duration, int clients) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(clients);
        long deadline = System.nanoTime() + duration.toNanos();
        try {
            List<Future<Integer>> counts = new ArrayList<>();
            for (int c = 0; c < clients; c++) {
                counts.add(pool.submit(() -> {
                    int acquired = 0;
                    try (FencingLeaseClient leases = new FencingLeaseClient(List.of(endpoint), "fenced-writes/bench/locks/")) {
                        while (System.nanoTime() < deadline) {
                            try (FencingLease lease = leases.acquire("contended", Duration.ofSeconds(10),
                                    Duration.ofSeconds(30))) {
                                acquired++;
                            }
                        }
                    }
                    return acquired;
                }));
            }
            long start = System.nanoTime();
            int total = 0;
            for (Future<Integer> count : counts) {
                total += count.get(duration.toSeconds() + 60, TimeUnit.SECONDS);
            }
            return total / ((System.nanoTime() - start) / 1e9);
        } finally {
            pool.shutdownNow();
        }
    }

    /** The {@code p}-th percentile (nearest rank) of {@code samples}. */
    static double percentile(double[] samples, double p) {
        double[] sorted = samples.clone();
        Arrays.sort(sorted);
        int rank = (int) Math.ceil(p / 100.0 * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }
}
