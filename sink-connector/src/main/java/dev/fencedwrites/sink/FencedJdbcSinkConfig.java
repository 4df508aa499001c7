package dev.fencedwrites.sink;

import dev.fencedwrites.contract.Redaction;
import dev.fencedwrites.sink.internal.TableName;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigDef.Width;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.connect.sink.SinkTask;
import org.slf4j.LoggerFactory;

/** Configuration of the fenced PostgreSQL sink connector. */
public final class FencedJdbcSinkConfig extends AbstractConfig {
    public static final String CONNECTION_URL = "connection.url";
    public static final String CONNECTION_USER = "connection.user";
    public static final String CONNECTION_PASSWORD = "connection.password";
    public static final String CONNECTION_POOL_SIZE = "connection.pool.size";
    public static final String TABLE_NAME = "table.name";
    public static final String AUTO_CREATE = "auto.create";
    public static final String AUTO_EVOLVE = "auto.evolve";
    /** In {@link #TABLE_NAME}: replaced by the record's topic. */
    public static final String TOPIC_PLACEHOLDER = "${topic}";
    public static final String FENCE_GUARD_ENABLED = "fence.guard.enabled";
    public static final String SCHEMA_REGISTRY_URL = "schema.registry.url";
    public static final String MAX_RETRIES = "max.retries";
    public static final String RETRY_BACKOFF_MS = "retry.backoff.ms";
    public static final String RETRY_BACKOFF_MAX_MS = "retry.backoff.max.ms";
    public static final String MARKER_PENDING_MAX = "fence.marker.pending.max";

    private static final String GROUP_CONNECTION = "Connection";
    private static final String GROUP_WRITES = "Writes";
    private static final String GROUP_RETRIES = "Retries";

    /** The definition, from which the configuration reference is generated. */
    public static final ConfigDef DEFINITION = new ConfigDef()
            .define(CONNECTION_URL, Type.STRING, ConfigDef.NO_DEFAULT_VALUE, new ConfigDef.NonEmptyString(), Importance.HIGH,
                    "PostgreSQL JDBC URL, e.g. jdbc:postgresql://127.0.0.1:5432/postgres.", GROUP_CONNECTION, 1, Width.LONG,
                    "JDBC URL")
            .define(CONNECTION_USER, Type.STRING, null, Importance.HIGH,
                    "Database user (may also be given in the URL).", GROUP_CONNECTION, 2, Width.MEDIUM, "User")
            .define(CONNECTION_PASSWORD, Type.PASSWORD, null, Importance.HIGH,
                    "Database password.", GROUP_CONNECTION, 3, Width.MEDIUM, "Password")
            .define(CONNECTION_POOL_SIZE, Type.INT, 2, ConfigDef.Range.between(1, 64), Importance.LOW,
                    "Maximum connections in the task's HikariCP pool.", GROUP_CONNECTION, 4, Width.SHORT, "Pool size")
            .define(SCHEMA_REGISTRY_URL, Type.STRING, ConfigDef.NO_DEFAULT_VALUE, new ConfigDef.NonEmptyString(), Importance.HIGH,
                    "Confluent-compatible schema registry the record values' schema ids resolve against.", GROUP_CONNECTION, 5,
                    Width.LONG, "Schema registry URL")
            .define(TABLE_NAME, Type.STRING, TOPIC_PLACEHOLDER, new ConfigDef.NonEmptyString(), Importance.HIGH,
                    "Table the rows are written to, one row per record key: table or schema.table, read as PostgreSQL reads a "
                            + "name (an unquoted part in lower case, a part in double quotes exactly, each cut to 63 bytes); "
                            + "the sink quotes every"
                            + " name it writes, so keywords such as order or user are fine. " + TOPIC_PLACEHOLDER
                            + " is replaced by the"
                            + " record's topic, lower-cased, with every character other than letters, digits and _ turned into _"
                            + " (fenced-writes-accepted becomes fenced_writes_accepted, a topic order the table order).",
                    GROUP_WRITES, 1, Width.MEDIUM, "Table")
            .define(AUTO_CREATE, Type.BOOLEAN, true, Importance.MEDIUM,
                    "Create a missing table: a fixed table name at start (key, fence and delete columns), a per-topic one at "
                            + "its first record.",
                    GROUP_WRITES, 2, Width.SHORT, "Auto-create")
            .define(AUTO_EVOLVE, Type.BOOLEAN, true, Importance.MEDIUM,
                    "Add a nullable column for each field of a record schema that the table lacks (new fields as the schema "
                            + "evolves, and the first schema's fields in a table the sink created). false: such a record fails "
                            + "the task, naming the missing columns.",
                    GROUP_WRITES, 3, Width.SHORT, "Auto-evolve")
            .define(FENCE_GUARD_ENABLED, Type.BOOLEAN, true, Importance.HIGH,
                    "Guard the upsert with the fencing decision rule. false writes every record unconditionally: only for "
                            + "demonstrating what the fence prevents.",
                    GROUP_WRITES, 4, Width.SHORT, "Fence guard")
            .define(MARKER_PENDING_MAX, Type.INT, 10_000, ConfigDef.Range.atLeast(1), Importance.LOW,
                    "How many takeover FENCE markers may wait for their row. A marker waits while its row is below the "
                            + "fence it superseded (fence.marker.previous: the previous holder's accepted writes are still on "
                            + "their way), is tried again with every batch, and holds back its partition's committed offset. "
                            + "Past this many, the oldest is given up with a WARN (markers-given-up-total): its row's fence "
                            + "then rises with its holder's next write.",
                    GROUP_WRITES, 5, Width.SHORT, "Waiting markers")
            .define(MAX_RETRIES, Type.INT, -1, ConfigDef.Range.atLeast(-1), Importance.MEDIUM,
                    "How often a batch that failed with a transient error (connection lost, deadlock or serialization failure, "
                            + "lock or statement timeout, database shutdown, schema registry unreachable) is retried before "
                            + "the task fails; -1: until it succeeds, so a database or registry that restarts never stops the "
                            + "task (Connect does not restart a failed task by itself). Other database errors fail the task at "
                            + "once; records whose data the database refuses go to the dead-letter topic.",
                    GROUP_RETRIES, 1, Width.SHORT, "Max retries")
            .define(RETRY_BACKOFF_MS, Type.LONG, 1000L, ConfigDef.Range.atLeast(0), Importance.LOW,
                    "Wait before the first retry, in milliseconds; doubled after each failed retry up to "
                            + "retry.backoff.max.ms. 0: Connect retries at its next offset commit (offset.flush.interval.ms), "
                            + "which also caps any longer wait.",
                    GROUP_RETRIES, 2, Width.SHORT, "Retry backoff (ms)")
            .define(RETRY_BACKOFF_MAX_MS, Type.LONG, 60_000L, ConfigDef.Range.atLeast(0), Importance.LOW,
                    "Longest wait between retries, in milliseconds; a value below retry.backoff.ms counts as "
                            + "retry.backoff.ms.",
                    GROUP_RETRIES, 3, Width.SHORT, "Retry backoff max (ms)");

    private final String connectionUrl;
    private final String connectionUser;
    private final String password;
    private final int poolSize;
    private final String tableFormat;
    private final boolean autoCreate;
    private final boolean autoEvolve;
    private final boolean guardEnabled;
    private final int maxRetries;
    private final int markerPendingMax;
    private final Duration retryBackoff;
    private final Duration retryBackoffMax;
    private final Set<String> topics;
    private final Pattern topicsRegex;

    /**
     * Parses and validates {@code props} once into typed values, and logs them with credentials in
     * URLs hidden (see {@link #loggable()}). {@code topics} and {@code topics.regex} (Connect's own
     * settings, passed to each task) are read too, for {@link #readsTopic}.
     *
     * @throws ConfigException naming the setting: a value of the wrong type or out of range, or a
     *                         {@value #TABLE_NAME} that does not give a table name
     */
    public FencedJdbcSinkConfig(Map<?, ?> props) {
        super(DEFINITION, props, false); // AbstractConfig's own log would print URL credentials
        LoggerFactory.getLogger(FencedJdbcSinkConfig.class).info("{} values:{}", getClass().getSimpleName(), loggable());
        connectionUrl = getString(CONNECTION_URL);
        connectionUser = getString(CONNECTION_USER);
        Password secret = getPassword(CONNECTION_PASSWORD);
        password = secret == null ? null : secret.value();
        poolSize = getInt(CONNECTION_POOL_SIZE);
        tableFormat = getString(TABLE_NAME);
        autoCreate = getBoolean(AUTO_CREATE);
        autoEvolve = getBoolean(AUTO_EVOLVE);
        guardEnabled = getBoolean(FENCE_GUARD_ENABLED);
        maxRetries = getInt(MAX_RETRIES);
        markerPendingMax = getInt(MARKER_PENDING_MAX);
        retryBackoff = Duration.ofMillis(getLong(RETRY_BACKOFF_MS));
        retryBackoffMax = Duration.ofMillis(Math.max(getLong(RETRY_BACKOFF_MAX_MS), getLong(RETRY_BACKOFF_MS)));
        Object listed = originals().get(SinkTask.TOPICS_CONFIG);
        topics = listed == null
                ? Set.of()
                : Arrays.stream(listed.toString().split(",")).map(String::trim)
                        .filter(topic -> !topic.isEmpty()).collect(Collectors.toUnmodifiableSet());
        Object regex = originals().get(SinkTask.TOPICS_REGEX_CONFIG);
        topicsRegex = regex == null || regex.toString().isBlank() ? null : Pattern.compile(regex.toString().trim());
        tableName(null); // a table.name that gives no table name fails here, not at the first record
    }

    /**
     * Every value, one {@code name = value} line each, sorted by name, with the user info of
     * {@value #SCHEMA_REGISTRY_URL}'s URLs and the {@code password} parameter of
     * {@value #CONNECTION_URL} replaced by {@code ***} (passwords are hidden by their type).
     */
    String loggable() {
        StringBuilder lines = new StringBuilder();
        new TreeMap<>(values()).forEach((name, value) -> {
            String text = String.valueOf(value);
            if (SCHEMA_REGISTRY_URL.equals(name)) {
                text = Redaction.urlList(text);
            } else if (CONNECTION_URL.equals(name)) {
                text = Redaction.url(text);
            }
            lines.append(System.lineSeparator()).append('\t').append(name).append(" = ").append(text);
        });
        return lines.toString();
    }

    /** {@value #CONNECTION_URL}. */
    public String connectionUrl() {
        return connectionUrl;
    }

    /** {@value #CONNECTION_USER}, or {@code null} (given in the URL, or none). */
    public String connectionUser() {
        return connectionUser;
    }

    /** {@value #CONNECTION_PASSWORD} in clear, or {@code null}. */
    public String password() {
        return password;
    }

    /** {@value #CONNECTION_POOL_SIZE}: the most connections the task's pool opens. */
    public int poolSize() {
        return poolSize;
    }

    /** {@value #AUTO_CREATE}. */
    public boolean autoCreate() {
        return autoCreate;
    }

    /** {@value #AUTO_EVOLVE}. */
    public boolean autoEvolve() {
        return autoEvolve;
    }

    /** {@value #FENCE_GUARD_ENABLED}: {@code false} writes every record unconditionally. */
    public boolean guardEnabled() {
        return guardEnabled;
    }

    /** {@value #MAX_RETRIES}: retries of a batch that failed with a transient error before the task fails; -1: no limit. */
    public int maxRetries() {
        return maxRetries;
    }

    /** {@value #MARKER_PENDING_MAX}: how many takeover markers may wait for their row. */
    public int markerPendingMax() {
        return markerPendingMax;
    }

    /** {@value #RETRY_BACKOFF_MS}: the wait before the first retry. */
    public Duration retryBackoff() {
        return retryBackoff;
    }

    /** {@value #RETRY_BACKOFF_MAX_MS}: the longest wait between retries, at least {@link #retryBackoff()}. */
    public Duration retryBackoffMax() {
        return retryBackoffMax;
    }

    /** {@value #TABLE_NAME} as configured, {@value #TOPIC_PLACEHOLDER} included. */
    public String tableFormat() {
        return tableFormat;
    }

    /**
     * Whether the connector reads {@code topic}: it is in {@code topics} or matches {@code topics.regex}
     * (Connect's settings). A marker fences the records of one topic, and only a connector that writes
     * those records may raise their rows' fences.
     */
    public boolean readsTopic(String topic) {
        return topics.contains(topic) || (topicsRegex != null && topicsRegex.matcher(topic).matches());
    }

    /** Whether the table name depends on the record's topic. */
    public boolean tableNamePerTopic() {
        return tableFormat.contains(TOPIC_PLACEHOLDER);
    }

    /**
     * The table for records of {@code topic} (ignored without the placeholder): {@value #TOPIC_PLACEHOLDER}
     * replaced by the topic in lower case with every character other than a-z, 0-9 and _ as _ (so
     * the result never holds a dot or a quote of the topic's), then read by {@link TableName#parse}.
     *
     * @throws ConfigException naming {@value #TABLE_NAME} if the result is not a table name
     */
    public TableName tableName(String topic) {
        String format = tableFormat;
        String table = format.contains(TOPIC_PLACEHOLDER)
                ? format.replace(TOPIC_PLACEHOLDER,
                        topic == null ? "topic" : topic.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9_]", "_"))
                : format;
        try {
            return TableName.parse(table);
        } catch (IllegalArgumentException e) {
            throw new ConfigException(TABLE_NAME, format, "must give table or schema.table: " + e.getMessage());
        }
    }

    /**
     * The schema registry client's settings among the connector's: {@value #SCHEMA_REGISTRY_URL} and
     * every other {@code schema.registry.*} or {@code basic.auth.*} key (Confluent's names, see
     * {@code dev.fencedwrites.avro.AvroSerdeConfig}). Bare {@code max.retries} here is the
     * sink's own, so the client's retries are {@code schema.registry.max.retries}, 0 unless set: the
     * sink already retries a registry outage as a whole (max.retries, retry.backoff.ms).
     */
    public Map<String, Object> registryClientSettings() {
        Map<String, Object> settings = new HashMap<>();
        originals().forEach((key, value) -> {
            if (key.startsWith("schema.registry.") || key.startsWith("basic.auth.")) {
                settings.put(key, value);
            }
        });
        settings.putIfAbsent("schema.registry." + MAX_RETRIES, 0);
        return settings;
    }
}
