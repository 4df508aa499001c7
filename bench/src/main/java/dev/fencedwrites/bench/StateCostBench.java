package dev.fencedwrites.bench;

import dev.fencedwrites.bench.EnforcerBench.Kind;
import dev.fencedwrites.bench.EnforcerBench.Throughput;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.kafka.clients.admin.Admin;

/**
 * The state path's cost taken apart in one run: the stateful baseline ({@link MaxPerKey}) with its store built each way a
 * {@link StoreVariant} can be (RocksDB as Kafka Streams builds it, RocksDB tuned for misses, a hash map; record cache on and
 * off; changelog on and off), beside the pass-through and the enforcer, over the same input, in rounds whose order rotates.
 * Each part's cost is the difference of two variants' medians, in us per record; a difference smaller than the two
 * variants' spreads together is marked so.
 */
final class StateCostBench {
    private final EnforcerBench bench;
    private final EnforcerRun runs;
    private final Consumer<String> progress;

    StateCostBench(EnforcerBench bench, EnforcerRun runs, Consumer<String> progress) {
        this.bench = bench;
        this.runs = runs;
        this.progress = progress;
    }

    /** What one run measures: a topology, and for the stateful baseline how its store is built. */
    private record Subject(Kind kind, StoreVariant variant) {
        String describe() {
            return kind == Kind.STATEFUL ? "stateful baseline, " + variant.describe() : EnforcerBench.describe(kind);
        }
    }

    /** Each subject's runs: rates (records/s) and costs. */
    private record Runs(List<Double> rates, List<RunCost> costs) {
        /** Median time per record, us. */
        double micros() {
            List<Double> sorted = rates.stream().map(rate -> 1e6 / rate).sorted().toList();
            int n = sorted.size();
            return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
        }

        /** Half the range of the runs' times per record, us. */
        double spreadMicros() {
            double fastest = 1e6 / rates.stream().mapToDouble(Double::doubleValue).max().orElseThrow();
            double slowest = 1e6 / rates.stream().mapToDouble(Double::doubleValue).min().orElseThrow();
            return (slowest - fastest) / 2;
        }
    }

    /**
     * Measures every subject {@code repeats} times over {@code records} in-order writes over {@code keys} keys of {@code
     * valueBytes}-byte values, under each guarantee; returns the Markdown: one table of the subjects, one of the parts.
     */
    String measure(int records, int keys, int valueBytes, int repeats, List<String> guarantees) throws Exception {
        List<Subject> subjects = new ArrayList<>(List.of(new Subject(Kind.PASS_THROUGH, null), new Subject(Kind.ENFORCER,
                null)));
        for (StoreVariant.Store store : StoreVariant.Store.values()) {
            for (boolean cache : new boolean[]{true, false}) {
                for (boolean changelog : new boolean[]{true, false}) {
                    subjects.add(new Subject(Kind.STATEFUL, new StoreVariant(store, cache, changelog)));
                }
            }
        }
        for (String guarantee : guarantees) {
            if (!bench.enforcerConfig("state-cost", guarantee, false, true).fenceStoreCache()) {
                throw new IllegalArgumentException("--only state turns the record cache on and off itself: run it without "
                        + "statestore.cache.max.bytes=0 (at 0 Kafka Streams drops the cache from every store)");
            }
        }
        StringBuilder markdown = new StringBuilder();
        try (Admin admin = bench.admin()) {
            String input = bench.produceInput(admin, records, keys, valueBytes);
            bench.warmUp(admin, input, records);
            for (String guarantee : guarantees) {
                String row = String.format(Locale.ROOT, "%d B values, %s keys, %s", valueBytes, EnforcerBench.count(keys),
                        guarantee);
                Map<Subject, Runs> measured = measure(admin, input, records, subjects, repeats, guarantee);
                StoreVariant asFence = StoreVariant.asTheFenceStore(bench.enforcerConfig("state-cost", guarantee, false, true));
                markdown.append("State cost decomposed, ").append(row).append(" (medians of ").append(repeats)
                        .append(" runs):\n\n").append(subjectTable(measured)).append('\n')
                        .append(partTable(measured, asFence)).append('\n');
            }
            admin.deleteTopics(List.of(input)).all().get(60, TimeUnit.SECONDS);
        } finally {
            runs.useStoreVariant(null);
        }
        return markdown.toString();
    }

    private Map<Subject, Runs> measure(Admin admin, String input, int records, List<Subject> subjects, int repeats,
            String guarantee) throws Exception {
        Map<Subject, Runs> measured = new LinkedHashMap<>();
        for (Subject subject : subjects) {
            measured.put(subject, new Runs(new ArrayList<>(), new ArrayList<>()));
        }
        for (int round = 0; round < repeats; round++) {
            for (int i = 0; i < subjects.size(); i++) {
                Subject subject = subjects.get((i + round * subjects.size() / repeats) % subjects.size());
                runs.useStoreVariant(subject.variant());
                Throughput result = bench.runToEnd(admin, subject.kind(), input, records, true, 0, guarantee, false);
                measured.get(subject).rates().add(result.recordsPerSecond());
                measured.get(subject).costs().add(result.cost());
                progress.accept(String.format(Locale.ROOT, "state:   %s, %s: %,.0f records/s; %s", subject.describe(),
                        guarantee, result.recordsPerSecond(), result.cost().describe()));
            }
        }
        return measured;
    }

    private static String subjectTable(Map<Subject, Runs> measured) {
        double passThrough = measured.get(new Subject(Kind.PASS_THROUGH, null)).micros();
        StringBuilder table = new StringBuilder("| topology | records/s | vs pass-through | us per record (spread) | beyond "
                + "pass-through us | " + RunCost.HEADER + " |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n");
        measured.forEach((subject, runs) -> table.append(String.format(Locale.ROOT, "| %s | %,.0f | %.2f | %.2f (+-%.2f) | "
                + "%.2f | %s |%n", subject.describe(), 1e6 / runs.micros(), passThrough / runs.micros(), runs.micros(),
                runs.spreadMicros(), runs.micros() - passThrough, RunCost.median(runs.costs()).cells())));
        return table.toString();
    }

    private static String partTable(Map<Subject, Runs> measured, StoreVariant asFence) {
        StoreVariant.Store tuned = StoreVariant.Store.ROCKSDB_TUNED;
        StoreVariant.Store rocksdb = StoreVariant.Store.ROCKSDB;
        StoreVariant.Store hashMap = StoreVariant.Store.HASH_MAP;
        StringBuilder table = new StringBuilder("| part of the cost | us per record | between |\n|---|---:|---|\n");
        for (boolean cache : new boolean[]{true, false}) {
            part(table, measured, "the changelog (a record per put reaching the store), cache " + (cache ? "on" : "off"),
                    stateful(tuned, cache, true), stateful(tuned, cache, false));
        }
        part(table, measured, "the record cache (negative: it saves more than it costs)", stateful(tuned, true, true),
                stateful(tuned, false, true));
        for (boolean cache : new boolean[]{true, false}) {
            part(table, measured, "RocksDB as Kafka Streams builds it against tuned for misses, cache " + (cache ? "on" : "off"),
                    stateful(rocksdb, cache, true), stateful(tuned, cache, true));
            part(table, measured, "RocksDB tuned for misses against a hash map, cache " + (cache ? "on" : "off"),
                    stateful(tuned, cache, true), stateful(hashMap, cache, true));
        }
        part(table, measured, "a store at all (hash map, no cache, no changelog) against none", stateful(hashMap, false, false),
                new Subject(Kind.PASS_THROUGH, null));
        part(table, measured, "the fencing (the enforcer against the baseline built as the fence store)",
                new Subject(Kind.ENFORCER, null), new Subject(Kind.STATEFUL, asFence));
        return table.toString();
    }

    private static Subject stateful(StoreVariant.Store store, boolean cache, boolean changelog) {
        return new Subject(Kind.STATEFUL, new StoreVariant(store, cache, changelog));
    }

    private static void part(StringBuilder table, Map<Subject, Runs> measured, String part, Subject with, Subject without) {
        Runs a = measured.get(with);
        Runs b = measured.get(without);
        double difference = a.micros() - b.micros();
        boolean withinSpread = Math.abs(difference) <= a.spreadMicros() + b.spreadMicros();
        table.append(String.format(Locale.ROOT, "| %s | %.2f%s | %s minus %s |%n", part, difference,
                withinSpread ? " (within the spread)" : "", with.describe(), without.describe()));
    }
}
