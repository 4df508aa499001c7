package dev.fencedwrites.sink;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceOp;
import dev.fencedwrites.contract.FenceStamp;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.avro.AvroSerdeConfig;
import dev.fencedwrites.avro.connect.AvroConverter;
import dev.fencedwrites.sink.internal.ColumnMapping;
import dev.fencedwrites.sink.internal.RecordTable;
import dev.fencedwrites.sink.internal.ConnectHeaderLookup;
import dev.fencedwrites.avro.connect.RegistryErrors;
import dev.fencedwrites.sink.internal.ResourceKeys;
import dev.fencedwrites.sink.internal.SinkMetrics;
import dev.fencedwrites.sink.internal.SqlErrors;
import dev.fencedwrites.sink.internal.TableName;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Savepoint;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumMap;
import java.util.List;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes each record (any Avro record schema, mapped to columns by {@link ColumnMapping}) with the
 * fence-guarded upsert, one transaction per batch of a few multi-row statements
 * ({@link RecordTable#writeAll}), and reports every record the database guard refuses to the errant record reporter (the
 * dead-letter topic) with {@code fence.rejected.reason}, {@code fence.rejected.stage=sink} and
 * {@code fence.rejected.highest}. Expects {@code key.converter=StringConverter} (or {@code ByteArrayConverter}: keys decoded as UTF-8),
 * {@code value.converter=ByteArrayConverter} (Confluent wire format bytes) and
 * {@code header.converter=ByteArrayConverter} (headers byte for byte, also on the dead-letter topic).
 */
public final class FencedJdbcSinkTask extends SinkTask {
    private static final Logger LOG = LoggerFactory.getLogger(FencedJdbcSinkTask.class);

    private final Map<RejectionReason, AtomicLong> rejected = new EnumMap<>(RejectionReason.class);
    private final AtomicLong written = new AtomicLong();
    private final AtomicLong fencesRaised = new AtomicLong();
    /** The connector's {@code topics} and {@code topics.regex}: markers for other topics are not applied. */
    private java.util.Set<String> readTopics = java.util.Set.of();
    private java.util.regex.Pattern readTopicsPattern;
    private FencedJdbcSinkConfig config;
    private HikariDataSource pool;
    private final Map<TableName, RecordTable> tables = new HashMap<>();
    private boolean guarded;
    private AvroConverter values;
    private ErrantRecordReporter reporter;
    private SinkMetrics metrics = new SinkMetrics(null);
    private int failedAttempts;
    /** Per source partition: the offset after the last record written or reported. */
    private final Map<TopicPartition, OffsetAndMetadata> handled = new ConcurrentHashMap<>();

    private record Rejection(SinkRecord record, RejectionReason reason, Fence highest, String detail) {
        /** Not written and not a rejection: a FENCE marker the unguarded sink ignores, or one the row's fence already covers. */
        static final Rejection SKIPPED = new Rejection(null, null, null, null);
    }

    @Override
    public String version() {
        return Version.get();
    }

    @Override
    public void start(Map<String, String> props) {
        config = new FencedJdbcSinkConfig(props);
        String topics = props.getOrDefault(SinkTask.TOPICS_CONFIG, "");
        readTopics = java.util.Arrays.stream(topics.split(",")).map(String::trim).filter(t -> !t.isEmpty()).collect(java.util.stream.Collectors.toSet());
        String regex = props.get(SinkTask.TOPICS_REGEX_CONFIG);
        readTopicsPattern = regex == null || regex.isBlank() ? null : java.util.regex.Pattern.compile(regex.trim());
        handled.clear();
        tables.clear();
        for (RejectionReason reason : RejectionReason.values()) {
            rejected.put(reason, new AtomicLong());
        }
        HikariConfig hikari = new HikariConfig();
        hikari.setJdbcUrl(config.getString(FencedJdbcSinkConfig.CONNECTION_URL));
        hikari.setUsername(config.getString(FencedJdbcSinkConfig.CONNECTION_USER));
        hikari.setPassword(config.password());
        hikari.setMaximumPoolSize(config.getInt(FencedJdbcSinkConfig.CONNECTION_POOL_SIZE));
        hikari.setAutoCommit(false);
        hikari.setPoolName("fenced-jdbc-sink");
        pool = new HikariDataSource(hikari);
        guarded = config.getBoolean(FencedJdbcSinkConfig.FENCE_GUARD_ENABLED);
        if (!guarded) {
            LOG.warn("fence.guard.enabled=false: every record overwrites its row unconditionally; stale writes WILL win");
        }
        if (!config.tableNamePerTopic()) {
            // A fixed table: check (or create) it now, so a misfit stops the task before any record.
            RecordTable table = table(config.tableName(null));
            try (Connection connection = pool.getConnection()) {
                if (config.getBoolean(FencedJdbcSinkConfig.AUTO_CREATE)) {
                    try (Statement statement = connection.createStatement()) {
                        statement.execute(table.createStatement(List.of()));
                    }
                    connection.commit();
                }
                List<String> mismatches = table.ownColumnMismatches(connection);
                connection.rollback();
                if (!mismatches.isEmpty()) {
                    throw new ConnectException(table.misfitMessage(mismatches));
                }
            } catch (SQLException | ConnectException e) {
                pool.close();
                throw e instanceof ConnectException connect ? connect
                        : new ConnectException("cannot prepare table " + table.name() + ": " + e.getMessage(), e);
            }
        }
        values = new AvroConverter(AvroSerdeConfig.clientFrom(config.registryClientSettings()), false);
        try {
            reporter = context.errantRecordReporter();
        } catch (NoSuchMethodError | NoClassDefFoundError e) {
            reporter = null;
        }
        metrics = new SinkMetrics(pluginMetrics());
        if (reporter == null) {
            LOG.warn("no errant record reporter (configure errors.tolerance=all and errors.deadletterqueue.topic.name): fenced records are only logged and counted");
        }
        LOG.info("writing to table {} with the fence guard {}", config.getString(FencedJdbcSinkConfig.TABLE_NAME), guarded ? "on" : "OFF");
    }

    private RecordTable table(TableName name) {
        return tables.computeIfAbsent(name, n -> new RecordTable(n, guarded, config.getBoolean(FencedJdbcSinkConfig.AUTO_CREATE),
                config.getBoolean(FencedJdbcSinkConfig.AUTO_EVOLVE)));
    }

    @Override
    public void put(Collection<SinkRecord> records) {
        if (records.isEmpty()) {
            return;
        }
        List<Rejection> rejections = new ArrayList<>();
        int applied = 0;
        int raised = 0;
        try (Connection connection = pool.getConnection()) {
            try {
                // Pass 1: decode and check each record; those that cannot be written are rejected here.
                List<SinkRecord> ordered = new ArrayList<>(records);
                Rejection[] outcome = new Rejection[ordered.size()];
                Map<RecordTable, List<Integer>> byTable = new LinkedHashMap<>();
                Map<Integer, RecordTable.Row> rows = new HashMap<>();
                for (int i = 0; i < ordered.size(); i++) {
                    SinkRecord record = ordered.get(i);
                    RecordTable table = table(config.tableName(tableTopic(record)));
                    Object prepared = prepare(connection, table, record);
                    if (prepared instanceof RecordTable.Row row) {
                        rows.put(i, row);
                        byTable.computeIfAbsent(table, t -> new ArrayList<>()).add(i);
                    } else {
                        outcome[i] = (Rejection) prepared;
                    }
                }
                // Pass 2: the guarded upsert for all rows, a few round trips per table and batch.
                for (Map.Entry<RecordTable, List<Integer>> entry : byTable.entrySet()) {
                    List<Integer> indexes = entry.getValue();
                    List<RecordTable.Outcome> outcomes = entry.getKey().writeAll(connection, indexes.stream().map(rows::get).toList());
                    for (int r = 0; r < indexes.size(); r++) {
                        RecordTable.Outcome result = outcomes.get(r);
                        boolean marker = rows.get(indexes.get(r)).marker();
                        if (result.decision().accepted()) {
                            if (marker) {
                                raised++;
                            } else {
                                applied++;
                            }
                        } else if (marker && result.decision().reason() != RejectionReason.MALFORMED_VALUE) {
                            // The row's fence is already as high: the holder's own write got there first (the
                            // markers topic and the accepted topic are not ordered against each other), or a later holder's.
                            outcome[indexes.get(r)] = Rejection.SKIPPED;
                        } else {
                            outcome[indexes.get(r)] = new Rejection(ordered.get(indexes.get(r)), result.decision().reason(), result.highest(), result.detail());
                        }
                    }
                }
                if (reporter == null) {
                    for (Rejection rejection : outcome) {
                        if (rejection != null && (rejection.reason() == RejectionReason.MALFORMED_VALUE || rejection.reason() == RejectionReason.MALFORMED_KEY)) {
                            // A fenced write needs no dead-letter queue to be refused, but a record that can never be written does.
                            SinkRecord bad = rejection.record();
                            throw new ConnectException("the record at " + bad.topic() + "-" + bad.kafkaPartition() + "@" + bad.kafkaOffset()
                                    + " (key " + printable(bad.key()) + ") cannot be written and no dead-letter queue is configured"
                                    + " (errors.tolerance=all, errors.deadletterqueue.topic.name): " + rejection.detail());
                        }
                    }
                }
                connection.commit();
                for (Rejection rejection : outcome) {
                    if (rejection != null && rejection != Rejection.SKIPPED) {
                        rejections.add(rejection);
                    }
                }
            } catch (SQLException | RuntimeException e) {
                connection.rollback();
                tables.values().forEach(RecordTable::forgetCatalog); // a rolled-back CREATE or ALTER is gone
                throw e;
            }
        } catch (RecordTable.SchemaMismatchException e) {
            throw new ConnectException(e.getMessage(), e);
        } catch (SQLException | TransientFailure e) {
            if (e instanceof SQLException sql && !SqlErrors.isTransient(sql)) {
                // Data errors never get here (writeAll dead-letters those records); this is the table or the database itself.
                throw new ConnectException("the database refused the batch and retrying cannot help: " + SqlErrors.describe(sql), e);
            }
            if (++failedAttempts > config.getInt(FencedJdbcSinkConfig.MAX_RETRIES)) {
                throw new ConnectException("giving up after " + (failedAttempts - 1) + " retries (max.retries): "
                        + (e instanceof SQLException sql ? SqlErrors.describe(sql) : e.getMessage()), e);
            }
            LOG.warn("batch of {} records failed (attempt {}), retrying in {} ms: {}", records.size(), failedAttempts,
                    config.getLong(FencedJdbcSinkConfig.RETRY_BACKOFF_MS), e instanceof SQLException sql ? SqlErrors.describe(sql) : e.getMessage());
            context.timeout(config.getLong(FencedJdbcSinkConfig.RETRY_BACKOFF_MS));
            throw new RetriableException(e);
        }
        failedAttempts = 0;
        written.addAndGet(applied);
        metrics.written(applied);
        fencesRaised.addAndGet(raised);
        metrics.fencesRaised(raised);
        rejections.forEach(this::report);
        for (SinkRecord record : records) {
            handled.merge(new TopicPartition(record.originalTopic(), record.originalKafkaPartition()),
                    new OffsetAndMetadata(record.originalKafkaOffset() + 1), (a, b) -> a.offset() >= b.offset() ? a : b);
        }
        LOG.debug("batch of {}: {} written, {} row fences raised by markers, {} fenced", records.size(), applied, raised, rejections.size());
    }

    /**
     * Offsets to commit: only past records this task has written or reported (every record of a
     * {@code put} that returned); Connect's own view may include records handed to a {@code put}
     * that failed and will be redelivered.
     */
    @Override
    public Map<TopicPartition, OffsetAndMetadata> preCommit(Map<TopicPartition, OffsetAndMetadata> currentOffsets) {
        Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
        for (TopicPartition partition : currentOffsets.keySet()) {
            OffsetAndMetadata done = handled.get(partition);
            if (done != null) {
                commit.put(partition, done);
            }
        }
        return commit;
    }

    /**
     * Checks one record: a {@link RecordTable.Row} to write, or the {@link Rejection} that keeps it
     * from the table ({@link Rejection#SKIPPED} for a FENCE marker).
     */
    private Object prepare(Connection connection, RecordTable table, SinkRecord record) throws SQLException {
        String rejectedAs = rejectedBefore(record);
        if (rejectedAs != null) {
            return new Rejection(record, RejectionReason.ALREADY_REJECTED, null, "the record carries " + rejectedAs + ": it is a rejected copy,"
                    + " so this connector reads a rejected topic (" + record.topic() + "); set topics to the accepted topic");
        }
        String key;
        try {
            key = ResourceKeys.text(record.key());
        } catch (CharacterCodingException e) {
            return new Rejection(record, RejectionReason.MALFORMED_KEY, null, "the record key is not valid UTF-8 (" + e.getMessage()
                    + "), which a resource id must be");
        }
        if (key == null || key.toString().isEmpty()) {
            return new Rejection(record, RejectionReason.MISSING_KEY, null, "null or empty key");
        }
        FenceStamp.Parsed parsed = FenceStamp.parse(ConnectHeaderLookup.of(record.headers()));
        if (!parsed.valid()) {
            return new Rejection(record, parsed.rejection(), storedFence(connection, table, key.toString()), parsed.detail());
        }
        FenceStamp stamp = parsed.stamp();
        if (stamp.op() == FenceOp.FENCE) {
            if (record.value() != null) {
                return new Rejection(record, RejectionReason.INVALID_MARKER, storedFence(connection, table, key.toString()), "FENCE marker with a value");
            }
            if (!guarded) {
                LOG.debug("skipping FENCE marker for {} with {}: fence.guard.enabled=false", key, stamp.fence());
                return Rejection.SKIPPED;
            }
            String target = tableTopic(record);
            if (!readsTopic(target)) {
                // Another pipeline's marker on a shared markers topic: this connector does not write that topic's records.
                LOG.debug("skipping FENCE marker for {} with {}: it fences topic {}, which this connector does not read", key, stamp.fence(), target);
                return Rejection.SKIPPED;
            }
            // A winning marker from the enforcer's markers topic (or one sent around it): the row's fence rises, its data stays,
            // once the row holds the fence the marker superseded (so it never overtakes the previous holder's accepted writes).
            org.apache.kafka.connect.header.Header previous = record.headers().lastWithName(FenceHeaders.MARKER_PREVIOUS);
            if (previous == null || previous.value() == null) {
                return RecordTable.Row.marker(key.toString(), stamp.fence());
            }
            try {
                return RecordTable.Row.marker(key.toString(), stamp.fence(), Fence.parse(printable(previous.value())));
            } catch (IllegalArgumentException e) {
                LOG.warn("skipping FENCE marker for {} with {}: {} {}", key, stamp.fence(), FenceHeaders.MARKER_PREVIOUS, e.getMessage());
                return Rejection.SKIPPED;
            }
        }
        if (record.value() == null) {
            return new RecordTable.Row(key.toString(), null, stamp.fence());
        }
        Struct value;
        if (record.value() instanceof Struct struct) {
            value = struct; // value.converter=dev.fencedwrites.avro.connect.AvroConverter, or another converter giving Structs
        } else {
            try {
                Object decoded = values.toConnectData(record.topic(), toBytes(record.value())).value();
                if (!(decoded instanceof Struct struct)) {
                    return new Rejection(record, RejectionReason.MALFORMED_VALUE, storedFence(connection, table, key.toString()),
                            "the value is not an Avro record");
                }
                value = struct;
            } catch (DataException e) {
                if (e.getCause() instanceof SerializationException cause && RegistryErrors.isTransient(cause)) {
                    throw new TransientFailure(cause);
                }
                if (e.getCause() instanceof SerializationException cause && RegistryErrors.isRefused(cause)) {
                    throw new ConnectException("the schema registry refused this connector's credentials: " + cause.getMessage(), cause);
                }
                return new Rejection(record, RejectionReason.MALFORMED_VALUE, storedFence(connection, table, key.toString()), e.getMessage());
            }
        }
        try {
            ColumnMapping.columns(value.schema());
        } catch (DataException e) {
            return new Rejection(record, RejectionReason.MALFORMED_VALUE, storedFence(connection, table, key.toString()), e.getMessage());
        }
        return new RecordTable.Row(key.toString(), value, stamp.fence());
    }

    /** The first {@code fence.rejected.*} header as {@code name=value} (the reason when there is one), or {@code null} when the record has none. */
    private static String rejectedBefore(SinkRecord record) {
        org.apache.kafka.connect.header.Header found = record.headers().lastWithName(FenceHeaders.REJECTED_REASON);
        if (found == null) {
            for (org.apache.kafka.connect.header.Header header : record.headers()) {
                if (header.key().startsWith(FenceHeaders.REJECTED_PREFIX)) {
                    found = header;
                    break;
                }
            }
        }
        return found == null ? null : found.key() + "=" + printable(found.value());
    }

    /** A key or header value for logs and messages: bytes as (lenient) UTF-8 text. */
    private static String printable(Object value) {
        return value instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : String.valueOf(value);
    }

    /**
     * Whether this connector reads {@code topic} (its {@code topics} list or {@code topics.regex}):
     * a marker fences the records of one topic, and only a connector that writes those records
     * may raise their rows' fences.
     */
    private boolean readsTopic(String topic) {
        return readTopics.contains(topic) || (readTopicsPattern != null && readTopicsPattern.matcher(topic).matches());
    }

    /**
     * The topic whose table a record goes to: for a marker the enforcer published, the accepted
     * topic it names in {@code fence.marker.target.topic}; otherwise the record's own topic. Only
     * a FENCE marker is routed by the header: a write keeps its producer's headers through the
     * enforcer, so on a write the header is the producer's, not the enforcer's.
     */
    private static String tableTopic(SinkRecord record) {
        org.apache.kafka.connect.header.Header target = record.headers().lastWithName(FenceHeaders.MARKER_TARGET_TOPIC);
        if (target != null && target.value() != null && isMarker(record)) {
            String topic = target.value() instanceof byte[] bytes ? FenceHeaders.decode(bytes) : target.value().toString();
            if (!topic.isBlank()) {
                return topic;
            }
        }
        return record.topic();
    }

    private static boolean isMarker(SinkRecord record) {
        FenceStamp.Parsed parsed = FenceStamp.parse(ConnectHeaderLookup.of(record.headers()));
        return parsed.valid() && parsed.stamp().op() == FenceOp.FENCE;
    }

    /** The key's stored fence for a rejection's {@code fence.rejected.highest}; a key the database refuses has none. */
    private Fence storedFence(Connection connection, RecordTable table, String key) throws SQLException {
        Savepoint before = connection.setSavepoint();
        try {
            Fence fence = table.storedFence(connection, key);
            connection.releaseSavepoint(before);
            return fence;
        } catch (SQLException e) {
            if (!RecordTable.isDataError(e)) {
                throw e;
            }
            connection.rollback(before);
            return null;
        }
    }

    /** A failure that may pass on retry, such as the schema registry being unreachable. */
    private static final class TransientFailure extends RuntimeException {
        TransientFailure(Throwable cause) {
            super(cause.getMessage(), cause);
        }
    }

    /** Connect's plugin metrics for this task; none on runtimes before Kafka 4.1 (KIP-877). */
    private org.apache.kafka.common.metrics.PluginMetrics pluginMetrics() {
        try {
            return context.pluginMetrics();
        } catch (AbstractMethodError | NoSuchMethodError | UnsupportedOperationException e) {
            LOG.warn("this Connect runtime has no plugin metrics (Kafka 4.1+): the sink's counts are only logged");
            return null;
        }
    }

    /** The raw value; any other type means the worker is misconfigured, which no record can fix. */
    private static byte[] toBytes(Object value) {
        if (value == null || value instanceof byte[]) {
            return (byte[]) value;
        }
        throw new ConnectException("record value is a " + value.getClass().getName()
                + ", expected raw bytes or a Struct: set value.converter=org.apache.kafka.connect.converters.ByteArrayConverter"
                + " (or dev.fencedwrites.avro.connect.AvroConverter) for this connector");
    }

    private void report(Rejection rejection) {
        long count = rejected.get(rejection.reason()).incrementAndGet();
        metrics.fenced(rejection.reason());
        SinkRecord record = rejection.record();
        LOG.info("fenced at the database: key={} reason={} highest={} ({}); {} so far", printable(record.key()), rejection.reason(), rejection.highest(), rejection.detail(), count);
        if (reporter == null) {
            return;
        }
        ConnectHeaders headers = new ConnectHeaders();
        record.headers().forEach(headers::add);
        addText(headers, FenceHeaders.REJECTED_REASON, rejection.reason().name());
        addText(headers, FenceHeaders.REJECTED_STAGE, FenceHeaders.STAGE_SINK);
        addText(headers, FenceHeaders.REJECTED_HIGHEST, rejection.highest() == null ? "" : rejection.highest().toString());
        addText(headers, FenceHeaders.SOURCE_TOPIC, record.originalTopic());
        addText(headers, FenceHeaders.SOURCE_PARTITION, String.valueOf(record.originalKafkaPartition()));
        addText(headers, FenceHeaders.SOURCE_OFFSET, String.valueOf(record.originalKafkaOffset()));
        // Connect's reporter sends the original consumer record for any record the framework made
        // (including record.newRecord(...)), dropping added headers; a record built here is converted
        // with the worker's converters instead, so it carries these headers and the original bytes.
        // It names the original topic-partition, which the reporter's offset-commit wait is keyed by.
        SinkRecord withReason = new SinkRecord(record.originalTopic(), record.originalKafkaPartition(), record.keySchema(), record.key(),
                record.valueSchema(), record.value(), record.originalKafkaOffset(), record.timestamp(), record.timestampType(), headers);
        reporter.report(withReason, new FencedWriteException(rejection.reason(), rejection.detail()));
    }

    private static void addText(ConnectHeaders headers, String name, String value) {
        headers.addBytes(name, FenceHeaders.encode(value));
    }

    /** Records written and fenced so far by reason, for logs and tests. */
    public Map<String, Long> counts() {
        Map<String, Long> counts = new java.util.LinkedHashMap<>();
        counts.put("written", written.get());
        counts.put("fences_raised", fencesRaised.get());
        rejected.forEach((reason, n) -> counts.put(reason.name(), n.get()));
        return counts;
    }

    @Override
    public void open(Collection<TopicPartition> partitions) {
        failedAttempts = 0;
    }

    @Override
    public void close(Collection<TopicPartition> partitions) {
        partitions.forEach(handled::remove);
    }

    @Override
    public void stop() {
        LOG.info("stopping; outcomes of this task: {}", counts());
        if (pool != null) {
            pool.close();
        }
    }
}
