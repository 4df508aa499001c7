package dev.fencedwrites.enforcer;

import dev.fencedwrites.schemas.FenceTopics;
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
    /** Prefix of Kafka Streams settings passed through unchanged. */
    public static final String STREAMS_PREFIX = "streams.";
    /** Prefix of the environment variables read. */
    public static final String ENV_PREFIX = "FENCE_ENFORCER_";

    private static final String GROUP_KAFKA = "Kafka";
    private static final String GROUP_HTTP = "HTTP";
    private static final String GROUP_TOPICS = "Topics";

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
                    GROUP_HTTP, 3, ConfigDef.Width.MEDIUM, "Advertised HTTP host");

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
