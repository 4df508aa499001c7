package dev.fencedwrites.history;

import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.avro.connect.AvroConverter;
import dev.fencedwrites.contract.Fence;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;

/**
 * {@code fence verify}: reads a pipeline's topics, and optionally the sink's table, and checks the fencing contract
 * on what it finds. Two passes over the topics, the second only when the first leaves keys unsettled
 * ({@link HistoryCheck}, {@link DetailCheck}), then the table ({@link TableAudit}).
 */
public final class PipelineVerifier {
    /** The most keys the record-by-record pass takes; more are counted and named in a note. */
    static final int DETAIL_KEYS = 10_000;

    private PipelineVerifier() {
    }

    /**
     * What to read.
     *
     * @param enforcerGroup the enforcer's {@code application.id}: its committed input offsets say which records it has decided
     * @param reroute       the enforcer's {@code partition.mismatch.policy} is {@code reroute}
     * @param sinkGroup     the sink's consumer group ({@code connect-<connector name>}): how far it has written the table
     * @param table         the sink's table, or {@code null} to check only the topics
     * @param since         {@code --since}: check the input records from this time on, each key's fence set by the
     *                      decisions before it ({@link Scope.Window}); {@code null}: the whole history
     * @param atLeastOnce   the enforcer runs {@code processing.guarantee=at_least_once}: a decision may be on its topic more
     *                      than once, and only the first copy is checked ({@link FirstCopies})
     */
    public record Options(String input, String accepted, String rejected, String markers, String enforcerGroup, boolean reroute,
            String sinkGroup, String table, Instant since, boolean atLeastOnce) {
        /** Options for an enforcer under {@code exactly_once_v2}. */
        public Options(String input, String accepted, String rejected, String markers, String enforcerGroup, boolean reroute,
                String sinkGroup, String table, Instant since) {
            this(input, accepted, rejected, markers, enforcerGroup, reroute, sinkGroup, table, since, false);
        }

        /** The whole history. */
        public Options(String input, String accepted, String rejected, String markers, String enforcerGroup, boolean reroute,
                String sinkGroup, String table) {
            this(input, accepted, rejected, markers, enforcerGroup, reroute, sinkGroup, table, null);
        }

        /**
         * A control run's options: a sink with the fence guard off ({@code fence.guard.enabled=false}) reads {@code input}
         * itself, so the input is checked as if it were the accepted topic and {@code table} as the sink's. That sink skips
         * {@code FENCE} markers, so they set no row, and it reads no markers topic (an enforcer running beside it publishes
         * its winning markers for its own sink; the control sink's group never reads them, so they would hold every key's
         * row back as not caught up). Every stale write the control sink took is then a violation; so is every marker that
         * won, as the input is not what the rule accepts.
         */
        public static Options control(String input, String rejected, String enforcerGroup, boolean reroute, String sinkGroup,
                String table) {
            return new Options(input, input, rejected, null, enforcerGroup, reroute, sinkGroup, table);
        }

        /** These options for an enforcer under {@code at_least_once} ({@code true}) or {@code exactly_once_v2}. */
        public Options atLeastOnce(boolean atLeastOnce) {
            return new Options(input, accepted, rejected, markers, enforcerGroup, reroute, sinkGroup, table, since, atLeastOnce);
        }
    }

    /** The table side: a connection to the sink's database and the value decoder the sink uses. */
    public record Database(Connection connection, Function<byte[], Struct> decode) {
        /**
         * The sink's database with the sink's decoding: Avro in the Confluent wire format, its schema from
         * {@code registryUrl}, to a Connect {@code Struct} (a value that is not a record throws {@link DataException}).
         */
        public static Database withRegistry(Connection connection, String registryUrl) {
            AvroConverter values = new AvroConverter(new RestSchemaRegistryClient(registryUrl, Duration.ofSeconds(10)), false);
            return new Database(connection, bytes -> {
                Object value = values.toConnectData(null, bytes).value();
                if (!(value instanceof Struct struct)) {
                    throw new DataException("the value is not an Avro record");
                }
                return struct;
            });
        }
    }

    /**
     * Runs every check.
     *
     * @param client   every Kafka client setting ({@code bootstrap.servers}, security)
     * @param database the sink's database when {@code options.table()} is set, else {@code null}
     * @param progress where progress lines go (standard error)
     * @return what was counted and found
     * @throws IllegalStateException when the input topic does not exist or Kafka cannot be read
     * @throws SQLException          when the table cannot be read
     */
    public static Result run(Map<String, Object> client, Options options, Database database, PrintWriter progress)
            throws InterruptedException, SQLException {
        long started = System.nanoTime();
        Findings findings = new Findings();
        try (PipelineScan scan = new PipelineScan(client, progress)) {
            Scope scope = scope(scan, options, findings);
            // The sink's offsets before the rejected topic: a record it has committed past has its dead-letter copy there.
            Map<String, Map<Integer, Long>> sink = database == null ? Map.of() : sinkOffsets(scan, scope, options, findings);
            HistoryCheck history = check(scope, scan, database != null, options.atLeastOnce(), findings);
            if (database != null) {
                new TableAudit(findings, options.table(), scope,
                        (topic, partition, offset) -> sink.getOrDefault(topic, Map.of()).getOrDefault(partition, 0L) > offset,
                        database.decode(), keys -> since(scan, scope, keys)).run(database.connection(), history.keys());
            }
        }
        return new Result(findings, (System.nanoTime() - started) / 1e9);
    }

    /**
     * The topic checks: the first pass, and the second over the keys the first leaves unsettled.
     *
     * @param keepValues keep each key's winning accepted value for the table check
     * @return the first pass, whose key states the table check reads
     */
    static HistoryCheck check(Scope scope, TopicSource topics, boolean keepValues, Findings findings) {
        return check(scope, topics, keepValues, false, findings);
    }

    /** @param atLeastOnce the enforcer runs at_least_once: only the first copy of each decision is checked */
    static HistoryCheck check(Scope scope, TopicSource topics, boolean keepValues, boolean atLeastOnce, Findings findings) {
        HistoryCheck history = new HistoryCheck(scope, findings, keepValues);
        FirstCopies first = atLeastOnce ? new FirstCopies(findings) : null;
        readAll(topics, scope, "pass 1", false, first, history::rejected, history::marker, history::seed, history::input,
                history::accepted);
        findings.add("keys", history.keys().size());
        Set<String> unsettled = history.unsettled();
        if (!unsettled.isEmpty()) {
            Set<String> keys = new HashSet<>();
            unsettled.stream().limit(DETAIL_KEYS).forEach(keys::add);
            Set<String> mixed = history.mixed();
            unsettled.stream().filter(key -> !keys.contains(key) && !mixed.contains(key)).forEach(key -> findings.violation(
                    ViolationKind.UNLIKE_RULE, key, "the key's decisions differ from the replay (not described: more than "
                            + DETAIL_KEYS + " keys differ)"));
            findings.add("keys checked record by record", keys.size());
            DetailCheck detail = new DetailCheck(scope, findings, keys, history.deferred(), history.floors(),
                    key -> history.keys().get(key).seed);
            // The whole input: an accepted copy in --since's window may be the decision of a record before it (re-routed).
            readAll(topics, scope, "pass 2", true, atLeastOnce ? new FirstCopies(new Findings()) : null, detail::rejected,
                    detail::marker, null, detail::input, detail::accepted);
            detail.finish(history.mixed());
        }
        return history;
    }

    /**
     * What a run found.
     *
     * @param seconds how long it took
     */
    public record Result(Findings findings, double seconds) {
        public long violations() {
            return findings.violations();
        }
    }

    /** The fences of {@code keys}' accepted records and markers written since the passes read those topics. */
    private static Map<String, Set<Fence>> since(PipelineScan scan, Scope scope, Set<String> keys) {
        Map<String, Set<Fence>> out = new HashMap<>();
        Consumer<ConsumerRecord<byte[], byte[]>> collect = record -> {
            String key = OutputRecord.key(record.key());
            Fence fence = ReplayRule.fenceOf(record);
            if (key != null && fence != null && keys.contains(key)) {
                out.computeIfAbsent(key, k -> new HashSet<>()).add(fence);
            }
        };
        scan.readSince(scope.accepted(), collect);
        if (scope.markers() != null) {
            scan.readSince(scope.markers(), collect);
        }
        return out;
    }

    /** The sink's consumer group's committed offsets on the accepted and markers topics. */
    private static Map<String, Map<Integer, Long>> sinkOffsets(PipelineScan scan, Scope scope, Options options,
            Findings findings) throws InterruptedException {
        Map<String, Map<Integer, Long>> sink = new HashMap<>();
        sink.put(scope.accepted(), scan.committed(options.sinkGroup(), scope.accepted()));
        if (scope.markers() != null) {
            sink.put(scope.markers(), scan.committed(options.sinkGroup(), scope.markers()));
        }
        if (sink.values().stream().allMatch(Map::isEmpty)) {
            findings.note("the sink's consumer group " + options.sinkGroup() + " has committed no offset: no row was "
                    + "compared (is --connector the sink's name?)");
        }
        return sink;
    }

    private static Scope scope(PipelineScan scan, Options options, Findings findings) throws InterruptedException {
        int partitions = scan.partitions(options.input());
        if (partitions == 0) {
            throw new IllegalStateException("the input topic " + options.input() + " does not exist");
        }
        if (scan.partitions(options.accepted()) == 0 || scan.partitions(options.rejected()) == 0) {
            throw new IllegalStateException("the accepted topic " + options.accepted() + " or the rejected topic "
                    + options.rejected() + " does not exist: has the enforcer run?");
        }
        String markers = options.markers() != null && scan.partitions(options.markers()) > 0 ? options.markers() : null;
        if (markers == null) {
            findings.note("no markers topic: winning markers are not observable and were not checked");
        }
        Map<Integer, Long> committed = scan.committed(options.enforcerGroup(), options.input());
        // The outputs' ends after the committed offsets and before the input's: every decision in the outputs read is of an
        // input record read, and every input record below the committed offsets has its decisions in the outputs read.
        scan.ends(options.rejected());
        scan.ends(options.accepted());
        if (markers != null) {
            scan.ends(markers);
        }
        Map<Integer, Long> decided = new HashMap<>();
        for (Map.Entry<TopicPartition, Long> end : scan.ends(options.input()).entrySet()) {
            Long at = committed.get(end.getKey().partition());
            if (at == null && end.getValue() > 0) {
                findings.note("the enforcer's group " + options.enforcerGroup() + " has committed nothing for " + end.getKey()
                        + ": every record there must have been decided");
            }
            decided.put(end.getKey().partition(), at == null ? end.getValue() : Math.min(at, end.getValue()));
        }
        Scope.Window window = options.since() == null
                ? Scope.Window.ALL
                : scan.window(options.input(), options.accepted(), options.since().toEpochMilli(), findings);
        return new Scope(options.input(), options.accepted(), options.rejected(), markers, partitions, options.reroute(),
                decided, window);
    }

    /**
     * One pass: the rejected and markers topics, then the accepted records before {@code --since}'s window (to
     * {@code handlers[2]}, when not {@code null}), the input records in it (with {@code wholeInput}, all of them), and the
     * accepted records in it.
     */
    @SafeVarargs
    private static void readAll(TopicSource scan, Scope scope, String pass, boolean wholeInput, FirstCopies first,
            Consumer<ConsumerRecord<byte[], byte[]>>... handlers) {
        if (first != null) {
            handlers[0] = first.rejected(handlers[0]);
            handlers[1] = first.markers(handlers[1]);
            handlers[4] = first.accepted(handlers[4]);
        }
        scan.read(scope.rejected(), pass, handlers[0]);
        if (scope.markers() != null) {
            scan.read(scope.markers(), pass, handlers[1]);
        }
        Scope.Window window = scope.window();
        if (window.partial() && handlers[2] != null) {
            scan.read(scope.accepted(), pass + " (before --since)", Map.of(), window.accepted(), handlers[2]);
        }
        scan.read(scope.input(), pass, wholeInput ? Map.of() : window.input(), Map.of(), handlers[3]);
        scan.read(scope.accepted(), pass, window.accepted(), Map.of(), handlers[4]);
    }
}
