package dev.fencedwrites.enforcer;

import dev.fencedwrites.buildinfo.ModuleVersion;
import dev.fencedwrites.enforcer.internal.CommittedFences;
import dev.fencedwrites.enforcer.internal.EtcdTokenVerifier;
import dev.fencedwrites.enforcer.internal.FenceExpiry;
import dev.fencedwrites.enforcer.internal.FenceProductionExceptionHandler;
import dev.fencedwrites.enforcer.internal.FenceStoreRocksDBConfig;
import dev.fencedwrites.enforcer.internal.RejectedTopicMetadata;
import dev.fencedwrites.etcd.EtcdSettings;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.kafka.KafkaStreamsMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.state.HostInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** Runs the fence enforcer: loads the configuration, builds the topology, starts Kafka Streams and the HTTP endpoints. */
@Command(name = "fence-enforcer", mixinStandardHelpOptions = true, versionProvider = FenceEnforcerApp.Version.class,
        description = {
                "Keeps the highest accepted fencing token per key and routes every input record to the accepted or the "
                        + "rejected topic.",
                "Settings come from the properties file, then FENCE_ENFORCER_* environment variables (e.g. "
                        + "FENCE_ENFORCER_BOOTSTRAP_SERVERS), the etcd.* ones from FENCE_ETCD_* as producer-lib reads them "
                        + "(e.g. FENCE_ETCD_ENDPOINTS)."},
        footer = {
                "", "Example:", "  fence-enforcer --config enforcer.properties",
                "  with enforcer.properties holding:",
                "    bootstrap.servers=127.0.0.1:9092",
                "    application.id=billing-enforcer       (required: every instance of one enforcer, and no other, uses it)",
                "    etcd.endpoints=http://127.0.0.1:2379    (token verification: each token is checked against the etcd the "
                        + "writers lock with)",
                "",
                "Without etcd.endpoints the enforcer refuses to start unless token.verification.enable=false says that any "
                        + "positive fence.token is to be believed."})
public final class FenceEnforcerApp implements Callable<Integer> {
    private static final Logger LOG = LoggerFactory.getLogger(FenceEnforcerApp.class);
    /**
     * How long SIGTERM waits for Kafka Streams to close (commit, leave the group) before the JVM exits; a container's stop
     * grace period must be longer (docker/compose.yaml's {@code stop_grace_period}).
     */
    public static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(30);
    /** How often Micrometer looks for Kafka metrics made since the last look (its default is 60 s). */
    private static final Duration STREAMS_METRICS_REFRESH = Duration.ofSeconds(10);

    @Option(names = {"-c",
            "--config"}, paramLabel = "FILE",
            description = "Properties file; every setting is in "
                    + "fence-enforcer-streams/CONFIGURATION.rst (docs/operate/enforcer.md).")
    Path configFile;

    /** {@code --version}: the project's version as the build filtered it into {@code fence-enforcer-streams.properties}. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[]{"fenced-writes " + ModuleVersion.read(FenceEnforcerApp.class, "fence-enforcer-streams.properties",
                    "fence-enforcer-streams")};
        }
    }

    public static void main(String[] args) {
        // The JDK HTTP server waits forever for a half-sent request unless told otherwise (seconds).
        if (System.getProperty("sun.net.httpserver.maxReqTime") == null) {
            System.setProperty("sun.net.httpserver.maxReqTime", "10");
            System.setProperty("sun.net.httpserver.maxRspTime", "30");
        }
        System.exit(new CommandLine(new FenceEnforcerApp()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        FenceEnforcerConfig config;
        try {
            config = FenceEnforcerConfig.load(configFile, System.getenv());
        } catch (ConfigException e) {
            System.err.println("fence-enforcer: invalid configuration: " + e.getMessage());
            return 2;
        }
        Properties streamsProperties = config.streamsProperties();
        logOwnRocksDBConfigSetter(streamsProperties);
        FenceEnforcerTopology.Limits limits;
        try {
            limits = limits(config, streamsProperties);
        } catch (IllegalStateException | ConfigException e) {
            System.err.println("fence-enforcer: " + e.getMessage());
            return 2;
        }
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        JvmGcMetrics gc = bindProcessMetrics(registry);
        handleProductionErrors(config, streamsProperties, registry);
        // The HTTP server binds first so that application.server can name its real port (http.port=0 picks one).
        EnforcerHttpServer http = new EnforcerHttpServer(config.getString(FenceEnforcerConfig.HTTP_HOST),
                config.getInt(FenceEnforcerConfig.HTTP_PORT), registry, config.httpCredentials().orElse(null));
        HostInfo self = config.advertisedServer(http.port());
        streamsProperties.put(StreamsConfig.APPLICATION_SERVER_CONFIG, self.host() + ":" + self.port());
        EtcdTokenVerifier tokens;
        try {
            tokens = verifier(config, streamsProperties, registry);
        } catch (IllegalArgumentException e) {
            System.err.println("fence-enforcer: token verification: " + e.getMessage());
            http.close();
            gc.close();
            return 2;
        }
        CommittedFences committed = new CommittedFences();
        FenceExpiry expiry = expiry(config, tokens, streamsProperties, registry);
        Topology topology = FenceEnforcerTopology.build(settings(config, limits, tokens, committed, expiry), registry);
        KafkaStreams streams = new KafkaStreams(topology, streamsProperties, clients(config, streamsProperties));
        StreamsProgress progress = new StreamsProgress(registry);
        CountDownLatch stopped = watch(streams, progress, registry);
        ScheduledExecutorService refresher = Executors.newSingleThreadScheduledExecutor(daemon("kafka-metrics-refresh"));
        // Kafka's metrics appear as clients are made and partitions assigned; Micrometer binds new ones at each refresh.
        KafkaStreamsMetrics streamsMetrics = new KafkaStreamsMetrics(streams, List.of(), refresher, STREAMS_METRICS_REFRESH);
        streamsMetrics.bindTo(registry);
        committed.start(CommittedFences.observationInterval(
                FenceEnforcerConfig.quietStreamsConfig(streamsProperties).getLong(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG)));
        PauseWatch pauses = pauseWatch(streamsProperties, streams);
        pauses.start();
        http.attach(streams, self, progress, committed, pauses);
        Runtime.getRuntime().addShutdownHook(shutdownHook(streams, http, tokens));
        http.start();
        LOG.info("fence enforcer: {} -> {} / {} (winning markers -> {}), HTTP on port {}, advertised as {}", config.inputTopic(),
                config.acceptedTopic(), config.rejectedTopic(), config.markersTopic().orElse("nowhere"), http.port(), self);
        streams.start();
        Optional.ofNullable(expiry).ifPresent(FenceExpiry::start);
        stopped.await();
        closeAll(expiry, streamsMetrics, pauses, committed, gc);
        refresher.shutdownNow();
        return streams.state() == KafkaStreams.State.ERROR ? 1 : 0;
    }

    /** Closes each part that is not {@code null}, in order. */
    private static void closeAll(AutoCloseable... parts) throws Exception {
        for (AutoCloseable part : parts) {
            if (part != null) {
                part.close();
            }
        }
    }

    /** Says first, before anything can wait on Kafka, that tokens go unverified when they do. */
    private static void warnIfUnverified(FenceEnforcerConfig config) {
        if (config.tokenVerification().isEmpty()) {
            LOG.warn("token verification is off ({}=false): any positive fence.token is believed, so one forged or "
                    + "mistaken token can block a key for good", FenceEnforcerConfig.TOKEN_VERIFICATION_ENABLE);
        }
    }

    /** Kafka Streams' configured clients, each producer knowing the rejected topic from the start (RejectedTopicMetadata). */
    private static RejectedTopicMetadata clients(FenceEnforcerConfig config, Properties streamsProperties) {
        return new RejectedTopicMetadata(FenceEnforcerConfig.quietStreamsConfig(streamsProperties).getKafkaClientSupplier(),
                List.of(config.rejectedTopic()));
    }

    /** The topology's settings as {@code config} names them, with the verifier and fence expiry when they are on. */
    private static FenceEnforcerTopology.Settings settings(FenceEnforcerConfig config, FenceEnforcerTopology.Limits limits,
            TokenVerifier tokens, CommittedFences committed, FenceExpiry expiry) {
        FenceEnforcerTopology.Settings settings = FenceEnforcerTopology.Settings.from(config, limits)
                .withCommittedFences(committed);
        settings = expiry == null ? settings : settings.withExpiry(expiry);
        return tokens == null ? settings : settings.withVerifier(tokens);
    }

    /**
     * Checks (or creates) the topics and returns the size limits of what the enforcer writes; sets the
     * producer's {@code max.request.size} to the largest record the output topics take, unless set.
     *
     * @throws IllegalStateException when a topic is missing, too narrow or its size limits cannot be read
     */
    private static FenceEnforcerTopology.Limits limits(FenceEnforcerConfig config, Properties streamsProperties)
            throws Exception {
        warnIfUnverified(config);
        TopicCheck.Topics topics = TopicCheck.prepare(config, Duration.ofSeconds(60));
        if (!streamsProperties.containsKey(StreamsConfig.producerPrefix(ProducerConfig.MAX_REQUEST_SIZE_CONFIG))
                && !streamsProperties.containsKey(ProducerConfig.MAX_REQUEST_SIZE_CONFIG)) {
            streamsProperties.put(StreamsConfig.producerPrefix(ProducerConfig.MAX_REQUEST_SIZE_CONFIG),
                    Math.max(topics.largestOutput(), TopicCheck.DEFAULT_MAX_REQUEST_SIZE));
        }
        // The rejected topic's metadata must stay in each producer between rejections (RejectedTopicMetadata).
        if (!streamsProperties.containsKey(ProducerConfig.METADATA_MAX_IDLE_CONFIG)) {
            streamsProperties.putIfAbsent(StreamsConfig.producerPrefix(ProducerConfig.METADATA_MAX_IDLE_CONFIG),
                    RejectedTopicMetadata.METADATA_MAX_IDLE_MS);
        }
        FenceEnforcerTopology.Limits limits = topics.limits(streamsProperties);
        LOG.info(
                "largest records written: accepted {} B, rejected {} B, fence changelog {} B, re-route repartition {} B "
                        + "(max.message.bytes capped by max.request.size)",
                limits.acceptedMaxBytes(), limits.rejectedMaxBytes(), limits.storeMaxBytes(), limits.rerouteMaxBytes());
        return limits;
    }

    /**
     * Binds Micrometer's JVM and process meters: {@code jvm_memory_*}, {@code jvm_gc_*},
     * {@code jvm_threads_*}, {@code jvm_classes_*}, {@code process_cpu_usage}, {@code system_cpu_*},
     * {@code process_uptime_seconds}, {@code process_files_open_files}. Returns the GC binder, which
     * holds GC notification listeners until closed.
     */
    public static JvmGcMetrics bindProcessMetrics(MeterRegistry registry) {
        new JvmMemoryMetrics().bindTo(registry);
        JvmGcMetrics gc = new JvmGcMetrics();
        gc.bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ClassLoaderMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        new FileDescriptorMetrics().bindTo(registry);
        return gc;
    }

    /**
     * A record Kafka still refuses is logged, counted and replaced by a reference record on
     * the rejected topic (at_least_once), or stops the thread loudly (see the handler).
     */
    private static void handleProductionErrors(FenceEnforcerConfig config, Properties streamsProperties,
            PrometheusMeterRegistry registry) {
        streamsProperties.put(StreamsConfig.PRODUCTION_EXCEPTION_HANDLER_CLASS_CONFIG,
                FenceProductionExceptionHandler.class.getName());
        streamsProperties.put(FenceProductionExceptionHandler.REJECTED_TOPIC_CONFIG, config.rejectedTopic());
        streamsProperties.put(FenceProductionExceptionHandler.METER_REGISTRY_CONFIG, registry);
    }

    /**
     * The token verifier, or {@code null} when {@code token.verification.enable=false} (warned of at start); the main
     * consumer reads tokens ahead for it ({@link TokenVerifier#readAheadOnPoll}).
     *
     * @throws IllegalArgumentException when the etcd settings cannot make a client
     */
    private static EtcdTokenVerifier verifier(FenceEnforcerConfig config, Properties streamsProperties,
            PrometheusMeterRegistry registry) {
        Optional<EtcdSettings> etcd = config.tokenVerification();
        if (etcd.isEmpty()) {
            return null;
        }
        EtcdTokenVerifier verifier = new EtcdTokenVerifier(etcd.get(), config.tokenVerificationOptions(), registry);
        LOG.info("fencing tokens that raise a fence are verified against etcd {} (lock prefix {}, compacted revisions: {}); {}",
                etcd.get().endpoints(),
                etcd.get().lockPrefix(), config.getString(FenceEnforcerConfig.TOKEN_VERIFICATION_COMPACTED_POLICY),
                verifier.probe(etcd.get()));
        TokenVerifier.readAheadOnPoll(streamsProperties, verifier);
        return verifier;
    }

    /**
     * Fence expiry as {@code config} sets it, not started yet; {@code null} when off. The floor waits for the input's
     * committed offsets, and under {@code reroute} for the repartition topic's too ({@link FenceExpiry}).
     */
    private static FenceExpiry expiry(FenceEnforcerConfig config, EtcdTokenVerifier tokens, Properties streamsProperties,
            PrometheusMeterRegistry registry) {
        if (config.expiry().isEmpty()) {
            return null;
        }
        FenceEnforcerConfig.Expiry settings = config.expiry().get();
        String applicationId = config.getString(FenceEnforcerConfig.APPLICATION_ID);
        List<String> topics = config.partitionMismatch() == PartitionMismatch.REROUTE
                ? List.of(config.inputTopic(), FenceEnforcerTopology.rerouteTopic(applicationId))
                : List.of(config.inputTopic());
        LOG.info("fence expiry is on: every {} the oldest live lock under the lock prefix is read, and fences below it are "
                + "dropped once {} are committed past that read", settings.interval(), topics);
        Admin admin = Admin.create(TopicAdmin.adminProperties(streamsProperties));
        Map<String, Object> reader = FenceEnforcerConfig.quietStreamsConfig(streamsProperties)
                .getRestoreConsumerConfigs(applicationId + "-fence-expiry");
        reader.remove(ConsumerConfig.GROUP_ID_CONFIG);
        reader.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        reader.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        reader.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        reader.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 1);
        return new FenceExpiry(tokens::oldestLiveLock, FenceExpiry.offsets(admin, new KafkaConsumer<>(reader,
                new ByteArrayDeserializer(), new ByteArrayDeserializer()), applicationId, Duration.ofSeconds(10)),
                topics, settings.interval(), settings.batch(), registry, () -> System.nanoTime() / 1_000_000);
    }

    /**
     * Logs state changes and tells {@code progress} (restores too), and counts stream thread failures; the latch opens when
     * the instance stops (NOT_RUNNING or ERROR).
     */
    private static CountDownLatch watch(KafkaStreams streams, StreamsProgress progress, MeterRegistry registry) {
        streams.setGlobalStateRestoreListener(progress);
        streams.setUncaughtExceptionHandler(StreamThreadFailures.standard(registry, streams));
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((newState, oldState) -> {
            LOG.info("Kafka Streams state {} -> {}", oldState, newState);
            progress.state(newState);
            if (newState == KafkaStreams.State.NOT_RUNNING || newState == KafkaStreams.State.ERROR) {
                stopped.countDown();
            }
        });
        return stopped;
    }

    private static ThreadFactory daemon(String name) {
        return runnable -> {
            Thread thread = new Thread(runnable, name);
            thread.setDaemon(true);
            return thread;
        };
    }

    private static Thread shutdownHook(KafkaStreams streams, EnforcerHttpServer http, TokenVerifier tokens) {
        return new Thread(() -> {
            LOG.info("shutting down (at most {} s)", SHUTDOWN_TIMEOUT.toSeconds());
            if (tokens != null) {
                // A stream thread waiting for etcd stops waiting (its record is decided again by whoever owns the task next).
                tokens.close();
            }
            // Leave the group so the other instances take over now, not after the session timeout.
            streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                    .withTimeout(SHUTDOWN_TIMEOUT));
            http.close();
        }, "enforcer-shutdown");
    }

    /** Says at start that a {@code streams.rocksdb.config.setter} of the user's own runs, and before what. */
    private static void logOwnRocksDBConfigSetter(Properties streamsProperties) {
        if (streamsProperties.get(FenceStoreRocksDBConfig.USER_SETTER_CONFIG) instanceof Class<?> own) {
            LOG.info("streams.{}={} runs for every store, before the fence store's own options ({})",
                    StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, own.getName(),
                    FenceStoreRocksDBConfig.class.getSimpleName());
        }
    }

    /**
     * The watch behind {@code /fences/{key}}'s 503s: pauses, stalled stream threads and, under the classic group protocol,
     * a coordinator that stopped answering heartbeats (classic or {@code streams} group protocol).
     */
    private static PauseWatch pauseWatch(Properties streamsProperties, KafkaStreams streams) {
        PauseWatch.Settings settings = PauseWatch.Settings.of(streamsProperties);
        return new PauseWatch(classicGroupProtocol(streamsProperties) ? settings : settings.underStreamsProtocol(),
                PauseWatch.threadCommits(streams), PauseWatch.mainConsumerHeartbeats(streams), System::nanoTime);
    }

    /**
     * Whether Kafka Streams runs the classic consumer group protocol, whose heartbeat timing the client configures (the
     * {@code streams} protocol of KIP-1071 takes it from the broker).
     */
    private static boolean classicGroupProtocol(Properties streamsProperties) {
        Object protocol = streamsProperties.getOrDefault(StreamsConfig.GROUP_PROTOCOL_CONFIG,
                StreamsConfig.DEFAULT_GROUP_PROTOCOL);
        return "classic".equalsIgnoreCase(protocol.toString().strip());
    }
}
