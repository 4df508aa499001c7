package dev.fencedwrites.enforcer;

import dev.fencedwrites.enforcer.internal.EtcdTokenVerifier;
import dev.fencedwrites.enforcer.internal.FenceStoreRocksDBConfig;
import dev.fencedwrites.etcd.EtcdSettings;
import java.io.IOException;
import java.io.Reader;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.internals.StreamsConfigUtils;
import org.apache.kafka.streams.state.HostInfo;
import org.apache.kafka.streams.state.RocksDBConfigSetter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The enforcer's configuration. Sources, later ones winning: the properties file, then
 * environment variables {@code FENCE_ENFORCER_<NAME>} with the name upper-cased and dots as
 * underscores (e.g. {@code FENCE_ENFORCER_BOOTSTRAP_SERVERS}). Any Kafka Streams setting passes
 * through with the prefix {@value #STREAMS_PREFIX} (e.g. {@code streams.commit.interval.ms}).
 */
public final class FenceEnforcerConfig extends AbstractConfig {
    public static final String BOOTSTRAP_SERVERS = "bootstrap.servers";
    public static final String APPLICATION_ID = "application.id";
    public static final String INPUT_TOPIC = "input.topic";
    public static final String ACCEPTED_TOPIC = "accepted.topic";
    public static final String REJECTED_TOPIC = "rejected.topic";
    public static final String MARKERS_TOPIC = "markers.topic";
    public static final String STATE_DIR = "state.dir";
    public static final String PROCESSING_GUARANTEE = "processing.guarantee";
    public static final String PARTITION_MISMATCH_POLICY = "partition.mismatch.policy";
    public static final String HTTP_HOST = "http.host";
    public static final String HTTP_PORT = "http.port";
    public static final String HTTP_ADVERTISED_HOST = "http.advertised.host";
    public static final String HTTP_AUTH_BASIC_USER = "http.auth.basic.user";
    public static final String HTTP_AUTH_BASIC_PASSWORD = "http.auth.basic.password";
    public static final String TOPICS_CREATE_ENABLE = "topics.create.enable";
    public static final String TOPICS_CREATE_PARTITIONS = "topics.create.partitions";
    public static final String TOPICS_CREATE_REPLICATION_FACTOR = "topics.create.replication.factor";
    public static final String TOKEN_VERIFICATION_ENABLE = "token.verification.enable";
    public static final String TOKEN_VERIFICATION_COMPACTED_POLICY = "token.verification.compacted.policy";
    public static final String TOKEN_VERIFICATION_RETRY_BACKOFF_MS = "token.verification.retry.backoff.ms";
    public static final String TOKEN_VERIFICATION_RETRY_BACKOFF_MAX_MS = "token.verification.retry.backoff.max.ms";
    public static final String TOKEN_VERIFICATION_CACHE_SIZE = "token.verification.cache.size";
    public static final String TOKEN_VERIFICATION_READ_AHEAD_MAX = "token.verification.read.ahead.max";
    public static final String TOKEN_VERIFICATION_INDEX_MAX = "token.verification.index.max";
    public static final String FENCE_EXPIRY_ENABLE = "fence.expiry.enable";
    public static final String FENCE_EXPIRY_INTERVAL_MS = "fence.expiry.interval.ms";
    public static final String FENCE_EXPIRY_BATCH_SIZE = "fence.expiry.batch.size";
    /** Prefix of Kafka Streams settings passed through unchanged. */
    public static final String STREAMS_PREFIX = "streams.";
    private static final Logger LOG = LoggerFactory.getLogger(FenceEnforcerConfig.class);
    private static final String ETCD_PREFIX = "etcd.";
    /** Kafka Streams settings the enforcer sets from its own, by the enforcer's setting to use instead. */
    private static final Map<String, String> OWNED = Map.of(StreamsConfig.APPLICATION_ID_CONFIG, APPLICATION_ID,
            StreamsConfig.PROCESSING_GUARANTEE_CONFIG, PROCESSING_GUARANTEE, StreamsConfig.STATE_DIR_CONFIG, STATE_DIR,
            StreamsConfig.APPLICATION_SERVER_CONFIG, HTTP_ADVERTISED_HOST + " and " + HTTP_PORT);
    /** The prefix of the Kafka Streams properties the enforcer sets for its own parts (the RocksDB setter's). */
    private static final String INTERNAL_PREFIX = "fenced-writes.";
    /** Kafka Streams' client prefixes, longest first where one starts another. */
    private static final List<String> CLIENT_PREFIXES = List.of(StreamsConfig.MAIN_CONSUMER_PREFIX,
            StreamsConfig.RESTORE_CONSUMER_PREFIX, StreamsConfig.GLOBAL_CONSUMER_PREFIX, StreamsConfig.CONSUMER_PREFIX,
            StreamsConfig.PRODUCER_PREFIX, StreamsConfig.ADMIN_CLIENT_PREFIX);
    private static final Set<String> EXCEPTION_HANDLERS = Set.of(
            StreamsConfig.DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG, "default.deserialization.exception.handler",
            StreamsConfig.PRODUCTION_EXCEPTION_HANDLER_CLASS_CONFIG, "default.production.exception.handler",
            StreamsConfig.PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG);
    /**
     * Internal topic configs that could drop a fence or a re-routed record: compaction and timestamps the changelog checks
     * depend on, retention (the repartition topic keeps records until Kafka Streams purges them), unclean elections.
     */
    private static final Set<String> UNSAFE_TOPIC_CONFIGS = Set.of(
            StreamsConfig.topicPrefix(TopicConfig.CLEANUP_POLICY_CONFIG),
            StreamsConfig.topicPrefix(TopicConfig.MIN_COMPACTION_LAG_MS_CONFIG),
            StreamsConfig.topicPrefix(TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG),
            StreamsConfig.topicPrefix(TopicConfig.RETENTION_MS_CONFIG),
            StreamsConfig.topicPrefix(TopicConfig.RETENTION_BYTES_CONFIG),
            StreamsConfig.topicPrefix(TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG));

    /** Prefix of the environment variables read. */
    public static final String ENV_PREFIX = "FENCE_ENFORCER_";

    /** The definition, from which the configuration reference is generated. */
    public static final ConfigDef DEFINITION = FenceEnforcerConfigDefinition.definition();

    public FenceEnforcerConfig(Map<?, ?> props) {
        super(DEFINITION, props);
    }

    /**
     * Loads the properties file (if not {@code null}) and overlays the environment.
     *
     * @throws ConfigException if the file cannot be read or a value is invalid
     */
    public static FenceEnforcerConfig load(Path file, Map<String, String> env) {
        Map<String, Object> props = new HashMap<>();
        if (file != null) {
            Properties fromFile = new Properties();
            try (Reader reader = Files.newBufferedReader(file)) {
                fromFile.load(reader);
            } catch (IOException e) {
                throw new ConfigException("cannot read enforcer configuration " + file + ": " + e.getMessage());
            }
            fromFile.forEach((k, v) -> props.put(k.toString(), v));
            props.keySet().forEach(key -> refuseUnknown(key, key, true));
        }
        env.forEach((name, value) -> {
            if (name.startsWith(ENV_PREFIX)) {
                String key = propertyName(name.substring(ENV_PREFIX.length()));
                refuseUnknown(key, name, false);
                if (key.startsWith(ETCD_PREFIX)) {
                    LOG.warn("{} is deprecated and will be removed after 0.1: set {}, the name producer-lib reads too", name,
                            EtcdSettings.environmentName(key));
                }
                props.put(key, value);
            }
        });
        etcdFromEnvironment(env).forEach(props::put);
        FenceEnforcerConfig config = new FenceEnforcerConfig(props);
        config.validate();
        return config;
    }

    /**
     * The settings as a properties file names them, checked as {@link #load} checks a file: for a tool that starts the
     * enforcer with settings of its own (the local stack, the bench) and wants the enforcer's refusal before it starts.
     *
     * @throws ConfigException naming an unknown key, an invalid value or a refused combination
     */
    public static FenceEnforcerConfig of(Map<String, String> settings) {
        settings.keySet().forEach(key -> refuseUnknown(key, key, true));
        FenceEnforcerConfig config = new FenceEnforcerConfig(settings);
        config.validate();
        return config;
    }

    /**
     * The {@code etcd.*} settings of the environment by their one convention, {@code FENCE_ETCD_*} (producer-lib's too,
     * {@link EtcdSettings#fromEnvironment}). The old names, {@code FENCE_ENFORCER_ETCD_*}, still work (with a warning);
     * both names set to different values are refused.
     *
     * @throws ConfigException naming an unknown {@code FENCE_ETCD_*} variable, or both names of one setting
     */
    static Map<String, String> etcdFromEnvironment(Map<String, String> env) {
        Map<String, String> etcd;
        try {
            etcd = EtcdSettings.fromEnvironment(env);
        } catch (IllegalArgumentException e) {
            throw new ConfigException(e.getMessage());
        }
        etcd.forEach((key, value) -> {
            String old = ENV_PREFIX + key.toUpperCase(Locale.ROOT).replace('.', '_');
            if (env.containsKey(old) && !env.get(old).trim().equals(value)) {
                throw new ConfigException(EtcdSettings.environmentName(key) + " and " + old + " (its deprecated name) are "
                        + "both set, to different values: keep " + EtcdSettings.environmentName(key) + " alone");
            }
        });
        return etcd;
    }

    /**
     * Refuses a setting the enforcer would otherwise ignore: a Kafka client or Streams setting without the
     * {@value #STREAMS_PREFIX} prefix (e.g. {@code security.protocol}: ignored, the enforcer would connect without it),
     * and, from the file, any other unknown key (a typo). An unknown environment variable that is no Kafka setting is
     * left alone: a shell carries variables for other programs.
     *
     * @param source the key as given: the file's key or the environment variable's name
     * @throws ConfigException naming the setting and the prefix
     */
    static void refuseUnknown(String key, String source, boolean fromFile) {
        if (DEFINITION.names().contains(key) || key.startsWith(STREAMS_PREFIX)) {
            return;
        }
        String prefixed = fromFile
                ? STREAMS_PREFIX + key
                : ENV_PREFIX + (STREAMS_PREFIX + key).toUpperCase(Locale.ROOT)
                        .replace("_", "__").replace('.', '_');
        if (KafkaSettingNames.contains(key)) {
            throw new ConfigException(
                    source + " is a Kafka client or Streams setting, which the enforcer passes on only with the "
                            + "prefix " + STREAMS_PREFIX + ": set " + prefixed + " instead");
        }
        if (fromFile) {
            throw new ConfigException("unknown setting " + source + " (the enforcer's own settings are listed in "
                    + "fence-enforcer-streams/CONFIGURATION.rst; Kafka Streams and client settings take the prefix "
                    + STREAMS_PREFIX + ", e.g. " + prefixed + ")");
        }
    }

    /**
     * An environment variable's name (after the prefix) as a property name: lower case, {@code _}
     * becomes {@code .}, and {@code __} stands for a literal {@code _} (as in Confluent's images),
     * e.g. {@code STREAMS_RACK_AWARE_ASSIGNMENT_TRAFFIC__COST} is {@code streams.rack.aware.assignment.traffic_cost}.
     */
    static String propertyName(String envName) {
        return envName.toLowerCase(Locale.ROOT).replace("__", "\u0000").replace('_', '.').replace("\u0000", "_");
    }

    /**
     * Checks what {@link ConfigDef} alone cannot: the three topics differ (an output equal to the
     * input would feed records back forever), and the Kafka Streams settings are valid.
     *
     * @throws ConfigException naming the problem
     */
    void validate() {
        if (inputTopic().equals(acceptedTopic()) || inputTopic().equals(rejectedTopic())
                || acceptedTopic().equals(rejectedTopic())) {
            throw new ConfigException("input.topic, accepted.topic and rejected.topic must be three different topics, got "
                    + inputTopic() + ", " + acceptedTopic() + ", " + rejectedTopic());
        }
        if (markersTopic().isPresent()
                && List.of(inputTopic(), acceptedTopic(), rejectedTopic()).contains(markersTopic().get())) {
            throw new ConfigException(MARKERS_TOPIC, markersTopic().get(),
                    "must differ from input.topic, accepted.topic and rejected.topic "
                            + "(a marker's null value would read as a delete there)");
        }
        refuseUnsafePassThrough(originalsWithPrefix(STREAMS_PREFIX),
                StreamsConfig.EXACTLY_ONCE_V2.equals(getString(PROCESSING_GUARANTEE)));
        refuseUnusableRocksDBConfigSetter();
        quietStreamsConfig(streamsProperties());
        httpCredentials();
        tokenVerification();
        refuseUnsafeExpiry();
        if (getLong(TOKEN_VERIFICATION_RETRY_BACKOFF_MAX_MS) < getLong(TOKEN_VERIFICATION_RETRY_BACKOFF_MS)) {
            throw new ConfigException(TOKEN_VERIFICATION_RETRY_BACKOFF_MAX_MS, getLong(TOKEN_VERIFICATION_RETRY_BACKOFF_MAX_MS),
                    "must be at least " + TOKEN_VERIFICATION_RETRY_BACKOFF_MS + " ("
                            + getLong(TOKEN_VERIFICATION_RETRY_BACKOFF_MS) + ")");
        }
    }

    /**
     * Refuses a {@code streams.rocksdb.config.setter} that Kafka Streams could not use: it makes one with {@code
     * Utils.newInstance} as each store opens, so a class that is missing, not a {@code RocksDBConfigSetter}, or without a
     * public constructor without arguments would stop the stream thread then, not the enforcer at start.
     *
     * @throws ConfigException naming the setting
     */
    private void refuseUnusableRocksDBConfigSetter() {
        String setting = STREAMS_PREFIX + StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG;
        Object value = originalsWithPrefix(STREAMS_PREFIX).get(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG);
        if (value == null) {
            return;
        }
        Class<?> type = (Class<?>) ConfigDef.parseType(setting, value, ConfigDef.Type.CLASS);
        if (!RocksDBConfigSetter.class.isAssignableFrom(type)) {
            throw new ConfigException(setting, value, "not a " + RocksDBConfigSetter.class.getName());
        }
        try {
            Utils.newInstance(type);
        } catch (KafkaException e) {
            throw new ConfigException(setting, value, "Kafka Streams could not make one: " + e.getMessage());
        }
    }

    /**
     * Refuses fence expiry where its proof does not hold (docs/concepts/fence-expiry.md): without token verification a
     * token need not be an etcd revision of a lock at all, so the oldest live lock bounds nothing; under
     * {@code at_least_once} a crash between raising the floor and the next commit replays records decided against the
     * floor, and a floor lost with that crash could accept on replay a write rejected the first time (both topics).
     *
     * @throws ConfigException naming the settings
     */
    private void refuseUnsafeExpiry() {
        if (!getBoolean(FENCE_EXPIRY_ENABLE)) {
            return;
        }
        if (tokenVerification().isEmpty()) {
            throw new ConfigException(FENCE_EXPIRY_ENABLE + "=true needs " + TOKEN_VERIFICATION_ENABLE + "=true: a fence "
                    + "expires when its token is below the oldest live lock in etcd, which bounds only tokens etcd issued; "
                    + "with verification off any positive token is believed");
        }
        if (!StreamsConfig.EXACTLY_ONCE_V2.equals(getString(PROCESSING_GUARANTEE))) {
            throw new ConfigException(FENCE_EXPIRY_ENABLE + "=true needs " + PROCESSING_GUARANTEE + "="
                    + StreamsConfig.EXACTLY_ONCE_V2 + ", got " + getString(PROCESSING_GUARANTEE) + ": under at_least_once "
                    + "a crash can lose a raised floor while records decided against it are replayed, and a write rejected "
                    + "at the floor could then be accepted the second time");
        }
    }

    /** Fence expiry's settings, or empty when {@value #FENCE_EXPIRY_ENABLE} is false. */
    public Optional<Expiry> expiry() {
        return getBoolean(FENCE_EXPIRY_ENABLE)
                ? Optional.of(new Expiry(Duration.ofMillis(getLong(FENCE_EXPIRY_INTERVAL_MS)), getInt(FENCE_EXPIRY_BATCH_SIZE)))
                : Optional.empty();
    }

    /**
     * Fence expiry's settings.
     *
     * @param interval how often the oldest live lock is read
     * @param batch    keys a task examines per scan step
     */
    public record Expiry(Duration interval, int batch) {
    }

    /**
     * Refuses a {@value #STREAMS_PREFIX} setting that would silently win over the enforcer's own, or weaken what the fence
     * rests on: the fence store's changelog must keep every raise, in order (a lost or reordered changelog record restores a
     * lower fence, under which a stale write is accepted), every input record must reach an output topic (a custom
     * exception handler may drop one; a consumer that starts at the latest offset skips re-routed records), and under
     * {@code exactly_once_v2} every consumer reads committed records only. Kafka Streams applies a client setting with or
     * without a client prefix ({@code producer.}, {@code main.consumer.}, {@code restore.consumer.}, {@code admin.}, ...),
     * and its {@code topic.} prefix to the changelog and the repartition topic.
     *
     * @param passThrough  the {@value #STREAMS_PREFIX} settings, without the prefix
     * @param exactlyOnce  whether {@value #PROCESSING_GUARANTEE} is {@code exactly_once_v2}
     * @throws ConfigException naming the setting and what to set instead
     */
    static void refuseUnsafePassThrough(Map<String, Object> passThrough, boolean exactlyOnce) {
        for (Map.Entry<String, Object> setting : new TreeMap<>(passThrough).entrySet()) {
            String refusal = unsafePassThrough(setting.getKey(), String.valueOf(setting.getValue()).strip(), exactlyOnce);
            if (refusal != null) {
                throw new ConfigException(STREAMS_PREFIX + setting.getKey() + "=" + setting.getValue() + " is refused: "
                        + refusal);
            }
        }
    }

    /** Why {@code key=value} (without {@value #STREAMS_PREFIX}) is refused, or null when it is not. */
    private static String unsafePassThrough(String key, String value, boolean exactlyOnce) {
        String setting = clientSetting(key);
        if (OWNED.containsKey(key) || setting.equals(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG)) {
            return "it would override the enforcer's own setting, which the enforcer reads too (topic checks, changelog "
                    + "configs, the replay history): set " + OWNED.getOrDefault(key, BOOTSTRAP_SERVERS) + " instead";
        }
        if (key.startsWith(INTERNAL_PREFIX)) {
            return "it names a setting the enforcer passes to its own parts of Kafka Streams. Remove it";
        }
        if (EXCEPTION_HANDLERS.contains(key)) {
            return "it would replace the enforcer's handler, which sends every input record to the accepted or the "
                    + "rejected topic or stops the stream thread; another handler may drop a record. Remove it";
        }
        if (setting.equals(ProducerConfig.ACKS_CONFIG) && !List.of("all", "-1").contains(value)) {
            return "the fence store's changelog needs acks=all: a changelog record acknowledged by fewer replicas can be "
                    + "lost when the partition's leader changes, and a restore then gives a lower fence, under which a stale "
                    + "write is accepted";
        }
        if (setting.equals(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG) && !"true".equalsIgnoreCase(value)) {
            return "the fence store's changelog needs an idempotent producer: without it a retried send can land after a "
                    + "later one, compaction keeps the older fence, and a restore then gives a lower fence, under which a "
                    + "stale write is accepted";
        }
        if (setting.equals(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG) && !"earliest".equalsIgnoreCase(value)) {
            return "the enforcer reads its topics from the earliest offset: a consumer that starts elsewhere skips records "
                    + "already re-routed to the repartition topic, which then reach neither output. Remove it";
        }
        if (exactlyOnce && setting.equals(ConsumerConfig.ISOLATION_LEVEL_CONFIG) && !"read_committed".equalsIgnoreCase(value)) {
            return "under processing.guarantee=exactly_once_v2 every consumer must read committed records only: "
                    + "read_uncommitted decides re-routed records and restores fences of aborted transactions. Remove it";
        }
        if (UNSAFE_TOPIC_CONFIGS.contains(key)
                && !(key.equals(StreamsConfig.topicPrefix(TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG))
                        && "false".equalsIgnoreCase(value))) {
            return "it would change the enforcer's internal topics: the fence store's changelog must keep every raise "
                    + "with the configs processing.guarantee sets, and the re-route repartition topic every record until "
                    + "it is decided (docs/operate/guarantees.md). Remove it";
        }
        return null;
    }

    /** The client setting {@code key} names: {@code key} without a Kafka Streams client prefix. */
    private static String clientSetting(String key) {
        for (String prefix : CLIENT_PREFIXES) {
            if (key.startsWith(prefix)) {
                return key.substring(prefix.length());
            }
        }
        return key;
    }

    /**
     * How to reach etcd to verify tokens, or empty when {@value #TOKEN_VERIFICATION_ENABLE} is false. Running without
     * verification is a choice that must be written down: unset without {@code etcd.endpoints} is refused, not read as off.
     *
     * @throws ConfigException naming the settings, when verification is on or unset without endpoints, or an etcd setting is
     *         invalid
     */
    public Optional<EtcdSettings> tokenVerification() {
        List<String> endpoints = getList(EtcdSettings.ENDPOINTS).stream().map(String::strip).filter(e -> !e.isEmpty()).toList();
        Boolean enable = getBoolean(TOKEN_VERIFICATION_ENABLE);
        if (Boolean.FALSE.equals(enable)) {
            return Optional.empty();
        }
        if (endpoints.isEmpty()) {
            throw new ConfigException(EtcdSettings.ENDPOINTS + " is not set: token verification needs the etcd cluster the "
                    + "writers take their locks from (e.g. " + EtcdSettings.ENDPOINTS + "=http://127.0.0.1:2379). To run "
                    + "without it, set " + TOKEN_VERIFICATION_ENABLE + "=false: any positive fence.token is then believed, "
                    + "and one forged or mistaken token blocks its key for good");
        }
        // Read by etcd-lock's own loader, as producer-lib reads them: the same checks and messages.
        Properties etcd = new Properties();
        for (EtcdSettings.Definition setting : EtcdSettings.DEFINITIONS) {
            Object value = get(setting.key());
            if (value instanceof Password password) {
                value = password.value();
            } else if (value instanceof List<?> list) {
                value = String.join(",", list.stream().map(String::valueOf).toList());
            }
            if (value != null) {
                etcd.setProperty(setting.key(), value.toString());
            }
        }
        try {
            return Optional.of(EtcdSettings.load(etcd, Map.of()));
        } catch (IllegalArgumentException e) {
            throw new ConfigException("token verification: " + e.getMessage());
        }
    }

    /** HTTP Basic credentials of /metrics and /fences/{key}: a user and a password. */
    public record HttpCredentials(String user, String password) {
        @Override
        public String toString() {
            return "HttpCredentials[user=" + user + ", password=(hidden)]";
        }
    }

    /**
     * The credentials /metrics and /fences/{key} ask for, or empty when they ask for none, which only a loopback
     * {@value #HTTP_HOST} may do.
     *
     * @throws ConfigException naming the settings, when only one of the pair is set, or {@value #HTTP_HOST} is not a loopback
     *         address and neither is
     */
    public Optional<HttpCredentials> httpCredentials() {
        String user = getString(HTTP_AUTH_BASIC_USER);
        String password = getPassword(HTTP_AUTH_BASIC_PASSWORD) == null ? null : getPassword(HTTP_AUTH_BASIC_PASSWORD).value();
        boolean hasUser = user != null && !user.isBlank();
        boolean hasPassword = password != null && !password.isEmpty();
        if (hasUser != hasPassword) {
            throw new ConfigException(HTTP_AUTH_BASIC_USER + " and " + HTTP_AUTH_BASIC_PASSWORD + " go together: set both, or "
                    + "neither (then " + HTTP_HOST + " must be a loopback address)");
        }
        if (hasUser) {
            if (user.contains(":")) {
                throw new ConfigException(HTTP_AUTH_BASIC_USER, user, "must not contain ':' (RFC 7617)");
            }
            return Optional.of(new HttpCredentials(user, password));
        }
        String host = getString(HTTP_HOST);
        if (!loopback(host)) {
            throw new ConfigException(HTTP_HOST + "=" + host + " would serve /fences/{key} (key names and their fences) and "
                    + "/metrics to the network without credentials: set " + HTTP_AUTH_BASIC_USER + " and "
                    + HTTP_AUTH_BASIC_PASSWORD + " (the probes /health/* stay open), or bind a loopback address such as "
                    + "127.0.0.1 behind a proxy");
        }
        return Optional.empty();
    }

    /** Whether {@code host} is the wildcard address (0.0.0.0, ::), which binds every interface but names none. */
    private static boolean anyLocal(String host) {
        try {
            return InetAddress.getByName(host).isAnyLocalAddress();
        } catch (UnknownHostException e) {
            return false;
        }
    }

    private static boolean loopback(String host) {
        try {
            return InetAddress.getByName(host).isLoopbackAddress();
        } catch (UnknownHostException e) {
            return false;
        }
    }

    /** The verifier's policy, backoff, cache size, read-ahead bound and lock tenure index bound. */
    public EtcdTokenVerifier.Options tokenVerificationOptions() {
        return new EtcdTokenVerifier.Options(
                EtcdTokenVerifier.CompactedPolicy
                        .valueOf(getString(TOKEN_VERIFICATION_COMPACTED_POLICY).toUpperCase(Locale.ROOT)),
                Duration.ofMillis(getLong(TOKEN_VERIFICATION_RETRY_BACKOFF_MS)),
                Duration.ofMillis(getLong(TOKEN_VERIFICATION_RETRY_BACKOFF_MAX_MS)),
                getInt(TOKEN_VERIFICATION_CACHE_SIZE),
                getInt(TOKEN_VERIFICATION_READ_AHEAD_MAX),
                getInt(TOKEN_VERIFICATION_INDEX_MAX));
    }

    /** This instance's {@code application.server}: the advertised host and the HTTP server's bound port. */
    public HostInfo advertisedServer(int boundPort) {
        String host = getString(HTTP_ADVERTISED_HOST);
        if (host == null || host.isBlank()) {
            host = getString(HTTP_HOST);
            if (anyLocal(host)) {
                try {
                    host = InetAddress.getLocalHost().getHostName();
                } catch (UnknownHostException e) {
                    host = "localhost";
                }
            }
        }
        return new HostInfo(host, boundPort);
    }

    public String inputTopic() {
        return getString(INPUT_TOPIC);
    }

    public String acceptedTopic() {
        return getString(ACCEPTED_TOPIC);
    }

    public String rejectedTopic() {
        return getString(REJECTED_TOPIC);
    }

    /** What to do with a record on another partition than murmur2 assigns its key ({@value #PARTITION_MISMATCH_POLICY}). */
    public PartitionMismatch partitionMismatch() {
        return PartitionMismatch.of(getString(PARTITION_MISMATCH_POLICY));
    }

    /** The markers topic, or empty when {@value #MARKERS_TOPIC} is set empty (markers then only raise the enforcer's fence). */
    public Optional<String> markersTopic() {
        String topic = getString(MARKERS_TOPIC);
        return topic == null || topic.isBlank() ? Optional.empty() : Optional.of(topic.strip());
    }

    /** The Kafka Streams properties: the enforcer's own settings plus every {@code streams.*} passthrough. */
    public Properties streamsProperties() {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, String.join(",", getList(BOOTSTRAP_SERVERS)));
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, getString(APPLICATION_ID));
        String stateDir = getString(STATE_DIR);
        props.put(StreamsConfig.STATE_DIR_CONFIG,
                stateDir != null ? stateDir : System.getProperty("java.io.tmpdir") + "/fence-enforcer");
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, getString(PROCESSING_GUARANTEE));
        // The topology has no global store, so this changes nothing but Kafka Streams 4.3's warning at each StreamsConfig
        // (the default becomes true in Kafka 5.0).
        props.put(StreamsConfig.PROCESSING_EXCEPTION_HANDLER_GLOBAL_ENABLED_CONFIG, "true");
        // The task reads two partitions under re-routing (the input's and the repartition topic's). With the default
        // 0, Kafka Streams checks on every record whether to wait for the empty one, and formats a trace message each time
        // (String.format: a fifth of the stream thread's time in a profile). -1 never waits for an empty partition
        // (KIP-695); the enforcer orders nothing across partitions by time, so it loses nothing by not waiting.
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, "-1");
        props.putAll(originalsWithPrefix(STREAMS_PREFIX));
        // The fence store's RocksDB options (a setter of the user's own runs first, for every store).
        FenceStoreRocksDBConfig.install(props, getBoolean(FENCE_EXPIRY_ENABLE));
        if (StreamsConfigUtils.totalCacheSize(quietStreamsConfig(props)) == 0) {
            props.put(FenceStoreRocksDBConfig.WITHOUT_CACHE_CONFIG, Boolean.TRUE);
        }
        return props;
    }

    /**
     * Whether the fence store sits behind Kafka Streams' record cache: unless {@code streams.statestore.cache.max.bytes} (or
     * the older {@code streams.cache.max.bytes.buffering}) is 0, as Kafka Streams reads them; at 0 Kafka Streams builds every
     * store without its caching layer ({@code InternalTopologyBuilder#rewriteTopology}).
     */
    public boolean fenceStoreCache() {
        return StreamsConfigUtils.totalCacheSize(quietStreamsConfig(streamsProperties())) > 0;
    }

    /**
     * {@code streamsProperties} as Kafka Streams reads them, validated (a {@link ConfigException} names a bad setting), without
     * logging the whole block: Kafka Streams logs it once when it starts, and the enforcer reads the settings several times
     * before that (validation, topic checks, the commit interval).
     */
    static StreamsConfig quietStreamsConfig(Map<?, ?> streamsProperties) {
        return new StreamsConfig(streamsProperties, false) {
        };
    }
}
