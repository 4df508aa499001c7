package dev.fencedwrites.devtools.chaos;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.history.PipelineVerifier;
import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.localstack.LocalStackBuilder;
import dev.fencedwrites.services.Await;
import dev.fencedwrites.services.ChildProcess;
import dev.fencedwrites.services.MissingToolException;
import dev.fencedwrites.services.NetworkLinks;
import dev.fencedwrites.services.Tools;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One {@code fence chaos} run: starts the stack, the writer processes and the nemesis, stops the writers when the
 * time is up, waits until the enforcer and the sink have caught up, and runs {@code fence verify}'s checks on what the
 * pipeline made of it.
 */
public final class ChaosRun {
    /**
     * The enforcer's group session, as a deployment that wants quick failover sets it: a killed enforcer's partitions are
     * given to its restarted self after 6 s instead of the default 45 s.
     */
    static final Map<String, String> FAST_REJOIN = Map.of("streams.session.timeout.ms", "6000",
            "streams.heartbeat.interval.ms", "1500");
    private static final String SINK_GROUP = "connect-" + BillingConnectors.SINK_CONNECTOR;
    private static final String UNFENCED_GROUP = "connect-" + BillingConnectors.UNFENCED_CONNECTOR;
    /** How long the pipeline may take to catch up after the writers stopped. */
    static final Duration CATCH_UP = Duration.ofMinutes(4);

    private ChaosRun() {
    }

    /**
     * What to run.
     *
     * @param dir      the stack's data and logs, the writers' ledgers and the report
     * @param seed     the nemesis schedule's seed
     * @param load     the writers
     * @param faults   the faults the nemesis chooses from
     * @param skewed   how many writer processes run under libfaketime
     * @param duration how long the writers and the nemesis run
     * @param control  the control run: the writers' records also go from the input topic through a sink with the fence guard
     *                 off into {@value BillingConnectors#UNFENCED_TABLE}, and verify reads the input topic as if it were the
     *                 accepted topic and that table as the sink's: the enforcer and the guard bypassed, the stale writes land
     *                 and verify must report them
     * @param cluster  run against the clustered stack ({@code ./fence up --cluster}'s shape: 3 brokers, 3 etcd members, 2
     *                 enforcers, 2 Connect workers) instead of the single-node one
     * @param stack    a running stack to use instead of starting one, or {@code null}
     * @param commands with {@code stack}: the shell command of each service fault ({@link CommandFaults})
     * @param atLeastOnce the enforcers run {@code processing.guarantee=at_least_once} (a started stack's are set so; a
     *                 running stack's are said to), and verify checks the first copy of each decision
     * @param enforcer  a started stack's enforcer settings ({@link #enforcerSettings}): {@link #FAST_REJOIN} and the
     *                 guarantee, and what the command line adds
     */
    public record Settings(Path dir, long seed, WriterFleet.Load load, Set<Fault> faults, int skewed, Duration duration,
            boolean control, boolean cluster, Endpoints stack, Map<Fault, String> commands, boolean atLeastOnce,
            Map<String, String> enforcer) {
        /** These settings with only the faults that are not network faults. */
        Settings withoutNetworkFaults() {
            Set<Fault> kept = EnumSet.noneOf(Fault.class);
            faults.stream().filter(f -> !f.network()).forEach(kept::add);
            return new Settings(dir, seed, load, kept, skewed, duration, control, cluster, stack, commands, atLeastOnce,
                    enforcer);
        }
    }

    /**
     * Where a stack's services listen.
     *
     * @param etcd        the etcd endpoints the writers lock with (the enforcer's, when it verifies tokens)
     * @param postgresUrl the sink's database (JDBC URL)
     */
    public record Endpoints(String bootstrap, List<String> etcd, String registry, String postgresUrl) {
        static Endpoints of(LocalStack stack) {
            return new Endpoints(stack.kafkaBootstrap(), List.of(stack.etcdEndpoints().split(",")), stack.schemaRegistryUrl(),
                    stack.postgresUrl());
        }
    }

    /**
     * What happened.
     *
     * @param events  the nemesis's faults, in order
     * @param ledger  what the writers did
     * @param verify  what {@code fence verify} found afterwards
     * @param resumed the writers' stalls past the lease, resumed
     * @param fates    per acknowledged write's input position ({@code partition@offset}), the enforcer's rejection reason
     *                 (absent: accepted)
     * @param injected records sent with kcat by the nemesis
     */
    public record Outcome(Settings settings, List<Nemesis.Event> events, WriterLedger ledger, List<WriterFleet.Resumed> resumed,
            PipelineVerifier.Result verify, long startedMillis, long loadEndedMillis, long stoppedMillis,
            Map<String, String> fates,
            int injected) {
    }

    /**
     * Runs it all; {@code progress} gets one line per step and per fault.
     *
     * @throws MissingToolException before anything starts, when kcat (the inject fault) or libfaketime (skewed writers)
     *                              is not installed
     */
    public static Outcome run(Settings settings, Consumer<String> progress) throws Exception {
        if (settings.faults().contains(Fault.INJECT)) {
            Tools.require("kcat", "apt-get install -y kcat");
        }
        if (settings.skewed() > 0) {
            Tools.requireFile(WriterFleet.LIBFAKETIME, "libfaketime", "apt-get install -y faketime");
        }
        progress.accept("seed " + settings.seed() + "; data, logs and report in " + settings.dir());
        if (settings.stack() != null) {
            Files.createDirectories(settings.dir());
            progress.accept("against the running stack at " + settings.stack().bootstrap() + "; service faults by command: "
                    + (settings.commands().isEmpty()
                            ? "none"
                            : settings.commands().keySet().stream().map(Fault::option).toList()));
            return against(settings, settings.stack(), new CommandFaults(settings.commands(), settings.dir()), null, progress);
        }
        return started(settings, progress);
    }

    /**
     * On a stack this run starts. With network faults chosen, each of its processes (and each writer) runs under a group id
     * of its own, so that {@link NetworkLinks} can cut it; where that cannot work (not root, no iptables), the network
     * faults are skipped with one line and the rest runs.
     */
    private static Outcome started(Settings chosen, Consumer<String> progress) throws Exception {
        Settings settings = chosen;
        NetworkLinks network = null;
        if (settings.faults().stream().anyMatch(Fault::network)) {
            Optional<String> unavailable = NetworkLinks.unavailable();
            if (unavailable.isPresent()) {
                progress.accept("network faults skipped: " + unavailable.get());
                settings = settings.withoutNetworkFaults();
            } else {
                ChildProcess.ownGroupEach();
                network = NetworkLinks.open();
            }
        }
        LocalStackBuilder builder = LocalStack.builder(settings.dir().resolve("stack"))
                .connectors(BillingConnectors.set(settings.control()))
                .enforcerSettings(settings.enforcer()).progress(line -> progress.accept("stack: " + line));
        if (settings.cluster()) {
            builder.cluster();
        }
        try (LocalStack stack = builder.start()) {
            return against(settings, Endpoints.of(stack), new StackFaults(stack),
                    network == null ? null : new LinkFaults(stack, network), progress);
        } finally {
            if (network != null) {
                network.close();
            }
        }
    }

    private static Outcome against(Settings settings, Endpoints stack, ServiceFaults services, LinkFaults links,
            Consumer<String> progress) throws Exception {
        Map<Integer, String> skewed = new HashMap<>();
        for (int p = 0; p < Math.min(settings.skewed(), settings.load().processes()); p++) {
            skewed.put(p, (p % 2 == 0 ? "+" : "-") + (30 + 60 * p) + "s");
        }
        long started = System.currentTimeMillis();
        long loadEnded;
        List<Nemesis.Event> events;
        WriterLedger ledger;
        List<WriterFleet.Resumed> resumed;
        int injected;
        try (WriterFleet fleet = WriterFleet.start(settings.dir().resolve("writers"), settings.load(), stack.bootstrap(),
                stack.etcd(), stack.registry(), "chaos-", skewed)) {
            progress.accept("writers: " + fleet.describe() + (skewed.isEmpty()
                    ? ""
                    : "; " + skewed.size()
                            + " on a skewed wall clock (libfaketime)"));
            Injector injector = new Injector(stack.bootstrap(), settings.dir());
            Nemesis nemesis = new Nemesis(services, links, fleet, injector,
                    settings.faults(), settings.seed(), settings.load().ttl(), line -> progress.accept("fault: " + line));
            nemesis.run(settings.duration());
            loadEnded = System.currentTimeMillis();
            progress.accept("time is up: stopping the writers");
            fleet.stop();
            events = nemesis.settle();
            injected = injector.sent();
            ledger = fleet.ledger();
            resumed = List.copyOf(fleet.resumed());
        }
        long stopped = System.currentTimeMillis();
        catchUp(stack.bootstrap(), settings.control(), progress);
        PipelineVerifier.Result verify = verify(stack, settings.control(), settings.atLeastOnce(), reroute(settings));
        return new Outcome(settings, events, ledger, resumed, verify, started, loadEnded, stopped,
                fates(stack.bootstrap(), ledger),
                injected);
    }

    /** Waits until the enforcer has committed past every input record and the sink past every accepted record and marker. */
    private static void catchUp(String bootstrap, boolean control, Consumer<String> progress) throws Exception {
        long start = System.nanoTime();
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            Await.until("the enforcer and the sink to catch up", CATCH_UP, null,
                    () -> caughtUp(admin, bootstrap, "fence-enforcer", FenceTopics.INPUT)
                            && caughtUp(admin, bootstrap, SINK_GROUP, FenceTopics.ACCEPTED)
                            && caughtUp(admin, bootstrap, SINK_GROUP, FenceTopics.MARKERS)
                            && (!control || caughtUp(admin, bootstrap, UNFENCED_GROUP, FenceTopics.INPUT)));
        }
        progress.accept(String.format("the enforcer and the sink caught up %.1f s after the writers stopped",
                (System.nanoTime() - start) / 1e9));
    }

    /**
     * Whether {@code group} has consumed every record of {@code topic} and of every other partition it has committed (the
     * enforcer's repartition topic): no record at or after its committed offset. Not "committed equals the end": a
     * transactional topic ends with a commit marker, which a consumer never commits past.
     */
    private static boolean caughtUp(Admin admin, String bootstrap, String group, String topic) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                .get();
        Map<TopicPartition, Long> from = new HashMap<>();
        int partitions = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
        for (int p = 0; p < partitions; p++) {
            from.put(new TopicPartition(topic, p), 0L);
        }
        committed.forEach((partition, at) -> {
            if (at != null) {
                from.put(partition, at.offset());
            }
        });
        Map<String, Object> client = Map.of("bootstrap.servers", bootstrap, "isolation.level", "read_committed");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(client, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.assign(from.keySet());
            from.forEach(consumer::seek);
            Map<TopicPartition, Long> end = consumer.endOffsets(from.keySet());
            while (from.keySet().stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
                if (!consumer.poll(Duration.ofMillis(200)).isEmpty()) {
                    return false;
                }
            }
            return true;
        }
    }

    /** The enforcer's rejection of each acknowledged write, from the rejected topic's {@code fence.source.*} and reason. */
    private static Map<String, String> fates(String bootstrap, WriterLedger ledger) {
        Set<String> acked = new HashSet<>();
        ledger.acks().forEach(ack -> acked.add(ack.partition() + "@" + ack.offset()));
        Map<String, String> fates = new HashMap<>();
        Map<String, Object> client = Map.of("bootstrap.servers", bootstrap, "isolation.level", "read_committed");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(client, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = consumer.partitionsFor(FenceTopics.REJECTED).stream()
                    .map(p -> new TopicPartition(p.topic(), p.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            while (partitions.stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    String at = header(record, FenceHeaders.SOURCE_PARTITION) + "@" + header(record, FenceHeaders.SOURCE_OFFSET);
                    if (FenceTopics.INPUT.equals(header(record, FenceHeaders.SOURCE_TOPIC)) && acked.contains(at)) {
                        fates.put(at, header(record, FenceHeaders.REJECTED_REASON));
                    }
                }
            }
        }
        return fates;
    }

    private static String header(ConsumerRecord<byte[], byte[]> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null || header.value() == null ? null : FenceHeaders.decode(header.value());
    }

    /** A started stack's enforcer settings before the command line's: {@link #FAST_REJOIN}, and the guarantee. */
    public static Map<String, String> enforcerSettings(boolean atLeastOnce) {
        Map<String, String> enforcer = new HashMap<>(FAST_REJOIN);
        enforcer.put("processing.guarantee", atLeastOnce ? "at_least_once" : "exactly_once_v2");
        return enforcer;
    }

    /** Whether the enforcers re-route records on another partition than murmur2's (the default policy) or reject them. */
    private static boolean reroute(Settings settings) {
        return !"reject".equalsIgnoreCase(settings.enforcer().getOrDefault("partition.mismatch.policy", "reroute").strip());
    }

    private static PipelineVerifier.Result verify(Endpoints stack, boolean control, boolean atLeastOnce, boolean reroute)
            throws Exception {
        PipelineVerifier.Options options = control
                ? PipelineVerifier.Options.control(FenceTopics.INPUT, FenceTopics.REJECTED, "fence-enforcer", reroute,
                        UNFENCED_GROUP, BillingConnectors.UNFENCED_TABLE)
                : new PipelineVerifier.Options(FenceTopics.INPUT, FenceTopics.ACCEPTED, FenceTopics.REJECTED, FenceTopics.MARKERS,
                        "fence-enforcer", reroute, SINK_GROUP, BillingConnectors.TABLE).atLeastOnce(atLeastOnce);
        try (Connection connection = DriverManager.getConnection(stack.postgresUrl())) {
            return PipelineVerifier.run(Map.of("bootstrap.servers", stack.bootstrap()), options,
                    PipelineVerifier.Database.withRegistry(connection, stack.registry()),
                    new PrintWriter(new OutputStreamWriter(System.err, StandardCharsets.UTF_8), true));
        }
    }
}
