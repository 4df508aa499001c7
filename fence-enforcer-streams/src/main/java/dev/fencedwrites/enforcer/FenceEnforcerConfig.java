package dev.fencedwrites.enforcer;

import dev.fencedwrites.enforcer.internal.EtcdTokenVerifier;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.etcd.LockKeys;
import dev.fencedwrites.contract.FenceTopics;
import java.time.Duration;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.state.HostInfo;

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
    public static final String HTTP_HOST = "http.host";
    public static final String HTTP_PORT = "http.port";
    public static final String HTTP_ADVERTISED_HOST = "http.advertised.host";
    public static final String TOPICS_CREATE_ENABLE = "topics.create.enable";
    public static final String TOPICS_CREATE_PARTITIONS = "topics.create.partitions";
    public static final String TOPICS_CREATE_REPLICATION_FACTOR = "topics.create.replication.factor";
    public static final String TOKEN_VERIFICATION_ENABLE = "token.verification.enable";
    public static final String TOKEN_VERIFICATION_COMPACTED_POLICY = "token.verification.compacted.policy";
    public static final String TOKEN_VERIFICATION_RETRY_BACKOFF_MS = "token.verification.retry.backoff.ms";
    public static final String TOKEN_VERIFICATION_RETRY_BACKOFF_MAX_MS = "token.verification.retry.backoff.max.ms";
    public static final String TOKEN_VERIFICATION_CACHE_SIZE = "token.verification.cache.size";
    /** Prefix of Kafka Streams settings passed through unchanged. */
    public static final String STREAMS_PREFIX = "streams.";
    /** Prefix of the environment variables read. */
    public static final String ENV_PREFIX = "FENCE_ENFORCER_";

    private static final String GROUP_KAFKA = "Kafka";
    private static final String GROUP_HTTP = "HTTP";
    private static final String GROUP_TOPICS = "Topics";
    private static final String GROUP_VERIFICATION = "Token verification";

    /** The definition, from which the configuration reference is generated. */
    public static final ConfigDef DEFINITION = new ConfigDef()
            .define(BOOTSTRAP_SERVERS, Type.LIST, ConfigDef.NO_DEFAULT_VALUE, Importance.HIGH,
                    "Kafka brokers to bootstrap from, host:port, comma-separated.", GROUP_KAFKA, 1, ConfigDef.Width.LONG, "Bootstrap servers")
            .define(APPLICATION_ID, Type.STRING, "fence-enforcer", new ConfigDef.NonEmptyString(), Importance.HIGH,
                    "Kafka Streams application id: consumer group, prefix of internal topics. Instances with the same id share the work.",
                    GROUP_KAFKA, 2, ConfigDef.Width.MEDIUM, "Application id")
            .define(INPUT_TOPIC, Type.STRING, FenceTopics.INPUT, new ConfigDef.NonEmptyString(), Importance.HIGH,
                    "Topic workers publish fenced writes to.", GROUP_KAFKA, 3, ConfigDef.Width.MEDIUM, "Input topic")
            .define(ACCEPTED_TOPIC, Type.STRING, FenceTopics.ACCEPTED, new ConfigDef.NonEmptyString(), Importance.HIGH,
                    "Topic accepted records are forwarded to, byte for byte.", GROUP_KAFKA, 4, ConfigDef.Width.MEDIUM, "Accepted topic")
            .define(REJECTED_TOPIC, Type.STRING, FenceTopics.REJECTED, new ConfigDef.NonEmptyString(), Importance.HIGH,
                    "Topic rejected records go to, with fence.rejected.* headers.", GROUP_KAFKA, 5, ConfigDef.Width.MEDIUM, "Rejected topic")
            .define(MARKERS_TOPIC, Type.STRING, FenceTopics.MARKERS, Importance.MEDIUM,
                    "Topic each winning FENCE marker is published to (its key, null value, its fence headers, "
                    + "fence.marker.target.topic and fence.source.*), for the sink to raise the row's fence at takeover. "
                    + "Empty: markers only raise the enforcer's fence.", GROUP_KAFKA, 6, ConfigDef.Width.MEDIUM, "Markers topic")
            .define(STATE_DIR, Type.STRING, null, Importance.MEDIUM,
                    "Directory of the local state store (RocksDB); when unset, fence-enforcer under the JVM's java.io.tmpdir. "
                    + "The changelog topic restores it when lost.", GROUP_KAFKA, 7, ConfigDef.Width.LONG, "State directory")
            .define(PROCESSING_GUARANTEE, Type.STRING, StreamsConfig.EXACTLY_ONCE_V2,
                    ConfigDef.ValidString.in(StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE), Importance.MEDIUM,
                    "exactly_once_v2: each input record's outcome and the fence update commit atomically. at_least_once: after a crash the records "
                    + "since the last commit are decided again against the fence each met the first time, so an outcome may be written twice but "
                    + "none is lost and no rejected write is ever accepted (issue 13).",
                    GROUP_KAFKA, 8, ConfigDef.Width.SHORT, "Processing guarantee")
            .define(TOPICS_CREATE_ENABLE, Type.BOOLEAN, false, Importance.MEDIUM,
                    "Create missing topics at start. Off: a missing topic stops the enforcer with a message naming it. "
                    + "Accepted and rejected topics are created with the input's partition count; the rejected topic with room for the rejection headers.",
                    GROUP_TOPICS, 1, ConfigDef.Width.SHORT, "Create topics")
            .define(TOPICS_CREATE_PARTITIONS, Type.INT, 3, ConfigDef.Range.atLeast(1), Importance.LOW,
                    "Partitions of the input topic when it is created. Never change it later: keys would move away from their fences.",
                    GROUP_TOPICS, 2, ConfigDef.Width.SHORT, "Input partitions")
            .define(TOPICS_CREATE_REPLICATION_FACTOR, Type.SHORT, (short) -1, ConfigDef.Range.between(-1, Short.MAX_VALUE), Importance.LOW,
                    "Replication factor of created topics; -1 uses the broker's default.", GROUP_TOPICS, 3, ConfigDef.Width.SHORT, "Replication factor")
            .define(HTTP_HOST, Type.STRING, "0.0.0.0", Importance.LOW,
                    "Address the HTTP endpoints (/metrics, /health, /fences/{key}) bind to.", GROUP_HTTP, 1, ConfigDef.Width.MEDIUM, "HTTP host")
            .define(HTTP_PORT, Type.INT, 8090, ConfigDef.Range.between(0, 65535), Importance.LOW,
                    "Port of the HTTP endpoints; 0 picks a free port.", GROUP_HTTP, 2, ConfigDef.Width.SHORT, "HTTP port")
            .define(HTTP_ADVERTISED_HOST, Type.STRING, null, Importance.MEDIUM,
                    "Host name other instances reach this one's HTTP endpoints at (Kafka Streams application.server, used to answer "
                    + "/fences/{key} for keys another instance owns). Unset: http.host, or this machine's host name when http.host is 0.0.0.0.",
                    GROUP_HTTP, 3, ConfigDef.Width.MEDIUM, "Advertised HTTP host")
            .define(TOKEN_VERIFICATION_ENABLE, Type.BOOLEAN, null, Importance.HIGH,
                    "Check the fencing token of every record the decision rule would accept against etcd's history (issue 14): at "
                    + "revision = token, the key's lock (<etcd.lock.prefix><encoded key>/<fence.lease in hex>) must have been the oldest under "
                    + "the lock and attached to that lease. Forged, future and borrowed tokens are rejected (FUTURE_TOKEN, LOCK_NOT_HELD, "
                    + "MISSING_LEASE, MALFORMED_LEASE, UNVERIFIABLE_TOKEN) instead of blocking the key. A holder's writes at its fence are "
                    + "answered from a cache. Unset: on when etcd.endpoints is set. Off: any positive fence.token is believed.",
                    GROUP_VERIFICATION, 1, ConfigDef.Width.SHORT, "Verify tokens")
            .define(EtcdSettings.ENDPOINTS, Type.LIST, "", Importance.HIGH,
                    "etcd client URLs (http:// or https://), comma-separated, of the etcd cluster the writers take their locks from.",
                    GROUP_VERIFICATION, 2, ConfigDef.Width.LONG, "etcd endpoints")
            .define(EtcdSettings.LOCK_PREFIX, Type.STRING, LockKeys.DEFAULT_PREFIX, Importance.MEDIUM,
                    "Key prefix of the writers' lock keys (producer-lib's etcd.lock.prefix).", GROUP_VERIFICATION, 3, ConfigDef.Width.MEDIUM, "Lock prefix")
            .define(EtcdSettings.USER, Type.STRING, null, Importance.MEDIUM,
                    "etcd user (with etcd.password); it needs read access to the lock prefix.", GROUP_VERIFICATION, 4, ConfigDef.Width.MEDIUM, "etcd user")
            .define(EtcdSettings.PASSWORD, Type.PASSWORD, null, Importance.MEDIUM,
                    "Password of etcd.user.", GROUP_VERIFICATION, 5, ConfigDef.Width.MEDIUM, "etcd password")
            .define(EtcdSettings.TLS_CA_FILE, Type.STRING, null, Importance.MEDIUM,
                    "PEM file of the CA that signed etcd's server certificate; default: the JVM's trust store when an endpoint is https://.",
                    GROUP_VERIFICATION, 6, ConfigDef.Width.LONG, "etcd CA file")
            .define(EtcdSettings.TLS_CERT_FILE, Type.STRING, null, Importance.MEDIUM,
                    "PEM client certificate, for etcd's --client-cert-auth (with etcd.tls.key.file).", GROUP_VERIFICATION, 7, ConfigDef.Width.LONG,
                    "etcd client certificate")
            .define(EtcdSettings.TLS_KEY_FILE, Type.STRING, null, Importance.MEDIUM,
                    "PKCS#8 PEM key of etcd.tls.cert.file.", GROUP_VERIFICATION, 8, ConfigDef.Width.LONG, "etcd client key")
            .define(EtcdSettings.CONNECT_TIMEOUT_MS, Type.LONG, 5_000L, ConfigDef.Range.atLeast(1), Importance.LOW,
                    "TCP connect timeout to etcd, in milliseconds.", GROUP_VERIFICATION, 9, ConfigDef.Width.SHORT, "etcd connect timeout")
            .define(EtcdSettings.REQUEST_TIMEOUT_MS, Type.LONG, 5_000L, ConfigDef.Range.atLeast(1), Importance.LOW,
                    "Bound on each etcd read, in milliseconds; a read that times out is retried after the backoff.",
                    GROUP_VERIFICATION, 10, ConfigDef.Width.SHORT, "etcd request timeout")
            .define(TOKEN_VERIFICATION_COMPACTED_POLICY, Type.STRING, "reject", ConfigDef.ValidString.in("reject", "accept"), Importance.MEDIUM,
                    "What to do with a token whose revision etcd has compacted away (the history to check is gone). reject: reject it "
                    + "UNVERIFIABLE_TOKEN, so nothing raises a fence unverified. accept: let it raise the fence and count it "
                    + "(fence_token_verifications_total{outcome=\"compacted_accepted\"}); a compacted revision is below every token etcd issues "
                    + "later, so it cannot block later holders, but it may be a made-up token.",
                    GROUP_VERIFICATION, 11, ConfigDef.Width.SHORT, "Compacted revisions")
            .define(TOKEN_VERIFICATION_RETRY_BACKOFF_MS, Type.LONG, 100L, ConfigDef.Range.atLeast(1), Importance.LOW,
                    "First wait before asking etcd again when it did not answer, in milliseconds; doubled after each failure up to "
                    + "token.verification.retry.backoff.max.ms. The stream thread waits meanwhile: nothing is accepted unverified.",
                    GROUP_VERIFICATION, 12, ConfigDef.Width.SHORT, "Retry backoff")
            .define(TOKEN_VERIFICATION_RETRY_BACKOFF_MAX_MS, Type.LONG, 5_000L, ConfigDef.Range.atLeast(1), Importance.LOW,
                    "Longest wait between attempts to reach etcd, in milliseconds.", GROUP_VERIFICATION, 13, ConfigDef.Width.SHORT, "Retry backoff max")
            .define(TOKEN_VERIFICATION_CACHE_SIZE, Type.INT, 10_000, ConfigDef.Range.atLeast(0), Importance.LOW,
                    "Verdicts kept in memory, per (key, token, lease), least recently used first out; etcd's answers about the past never change.",
                    GROUP_VERIFICATION, 14, ConfigDef.Width.SHORT, "Verdict cache size");

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
        }
        env.forEach((name, value) -> {
            if (name.startsWith(ENV_PREFIX)) {
                props.put(propertyName(name.substring(ENV_PREFIX.length())), value);
            }
        });
        FenceEnforcerConfig config = new FenceEnforcerConfig(props);
        config.validate();
        return config;
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
        if (inputTopic().equals(acceptedTopic()) || inputTopic().equals(rejectedTopic()) || acceptedTopic().equals(rejectedTopic())) {
            throw new ConfigException("input.topic, accepted.topic and rejected.topic must be three different topics, got "
                    + inputTopic() + ", " + acceptedTopic() + ", " + rejectedTopic());
        }
        if (markersTopic().isPresent() && List.of(inputTopic(), acceptedTopic(), rejectedTopic()).contains(markersTopic().get())) {
            throw new ConfigException(MARKERS_TOPIC, markersTopic().get(), "must differ from input.topic, accepted.topic and rejected.topic "
                    + "(a marker's null value would read as a delete there)");
        }
        new StreamsConfig(streamsProperties());
        tokenVerification();
        if (getLong(TOKEN_VERIFICATION_RETRY_BACKOFF_MAX_MS) < getLong(TOKEN_VERIFICATION_RETRY_BACKOFF_MS)) {
            throw new ConfigException(TOKEN_VERIFICATION_RETRY_BACKOFF_MAX_MS, getLong(TOKEN_VERIFICATION_RETRY_BACKOFF_MAX_MS),
                    "must be at least " + TOKEN_VERIFICATION_RETRY_BACKOFF_MS + " (" + getLong(TOKEN_VERIFICATION_RETRY_BACKOFF_MS) + ")");
        }
    }

    /**
     * How to reach etcd to verify tokens, or empty when verification is off: {@value #TOKEN_VERIFICATION_ENABLE}
     * is false, or unset without {@code etcd.endpoints}.
     *
     * @throws ConfigException naming the setting, when verification is on without endpoints or an etcd setting is invalid
     */
    public Optional<EtcdSettings> tokenVerification() {
        List<String> endpoints = getList(EtcdSettings.ENDPOINTS).stream().map(String::strip).filter(e -> !e.isEmpty()).toList();
        Boolean enable = getBoolean(TOKEN_VERIFICATION_ENABLE);
        if (Boolean.FALSE.equals(enable) || (enable == null && endpoints.isEmpty())) {
            return Optional.empty();
        }
        if (endpoints.isEmpty()) {
            throw new ConfigException(TOKEN_VERIFICATION_ENABLE, true, "token verification needs " + EtcdSettings.ENDPOINTS
                    + " (the etcd cluster the writers take their locks from), e.g. http://127.0.0.1:2379");
        }
        try {
            EtcdSettings.Builder builder = EtcdSettings.builder(endpoints).lockPrefix(getString(EtcdSettings.LOCK_PREFIX))
                    .connectTimeout(Duration.ofMillis(getLong(EtcdSettings.CONNECT_TIMEOUT_MS)))
                    .requestTimeout(Duration.ofMillis(getLong(EtcdSettings.REQUEST_TIMEOUT_MS)));
            if (getString(EtcdSettings.USER) != null || getPassword(EtcdSettings.PASSWORD) != null) {
                builder.credentials(getString(EtcdSettings.USER), getPassword(EtcdSettings.PASSWORD) == null ? null : getPassword(EtcdSettings.PASSWORD).value());
            }
            if (getString(EtcdSettings.TLS_CA_FILE) != null) {
                builder.tlsCa(Path.of(getString(EtcdSettings.TLS_CA_FILE)));
            }
            if (getString(EtcdSettings.TLS_CERT_FILE) != null || getString(EtcdSettings.TLS_KEY_FILE) != null) {
                builder.tlsClientCertificate(path(EtcdSettings.TLS_CERT_FILE), path(EtcdSettings.TLS_KEY_FILE));
            }
            return Optional.of(builder.build());
        } catch (IllegalArgumentException e) {
            throw new ConfigException("token verification: " + e.getMessage());
        }
    }

    /** The verifier's policy, backoff and cache size. */
    public EtcdTokenVerifier.Options tokenVerificationOptions() {
        return new EtcdTokenVerifier.Options(EtcdTokenVerifier.CompactedPolicy.valueOf(getString(TOKEN_VERIFICATION_COMPACTED_POLICY).toUpperCase(Locale.ROOT)),
                Duration.ofMillis(getLong(TOKEN_VERIFICATION_RETRY_BACKOFF_MS)), Duration.ofMillis(getLong(TOKEN_VERIFICATION_RETRY_BACKOFF_MAX_MS)),
                getInt(TOKEN_VERIFICATION_CACHE_SIZE));
    }

    private Path path(String key) {
        String value = getString(key);
        return value == null ? null : Path.of(value);
    }

    /** This instance's {@code application.server}: the advertised host and the HTTP server's bound port. */
    public HostInfo advertisedServer(int boundPort) {
        String host = getString(HTTP_ADVERTISED_HOST);
        if (host == null || host.isBlank()) {
            host = getString(HTTP_HOST);
            if ("0.0.0.0".equals(host)) {
                try {
                    host = java.net.InetAddress.getLocalHost().getHostName();
                } catch (java.net.UnknownHostException e) {
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
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir != null ? stateDir : System.getProperty("java.io.tmpdir") + "/fence-enforcer");
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, getString(PROCESSING_GUARANTEE));
        props.putAll(originalsWithPrefix(STREAMS_PREFIX));
        return props;
    }
}
