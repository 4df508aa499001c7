package dev.fencedwrites.sink;

import dev.fencedwrites.avro.AvroSerdeConfig;
import dev.fencedwrites.avro.connect.AvroConverter;
import dev.fencedwrites.buildinfo.ModuleVersion;
import dev.fencedwrites.sink.internal.ColumnMapping;
import dev.fencedwrites.sink.internal.HandledOffsets;
import dev.fencedwrites.sink.internal.PendingMarkers;
import dev.fencedwrites.sink.internal.RecordDecoder;
import dev.fencedwrites.sink.internal.SchemaMismatchException;
import dev.fencedwrites.sink.internal.SinkMetrics;
import dev.fencedwrites.sink.internal.SinkOutcomes;
import dev.fencedwrites.sink.internal.SinkTables;
import dev.fencedwrites.sink.internal.SinkWriter;
import dev.fencedwrites.sink.internal.SqlErrors;
import dev.fencedwrites.sink.internal.TaskContexts;
import dev.fencedwrites.sink.internal.TransientFailure;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes each record (any Avro record schema, mapped to columns by {@link ColumnMapping}) with the
 * fence-guarded upsert, one transaction per {@code put} ({@link SinkWriter}), and reports every record
 * the database guard refuses to the errant record reporter (the dead-letter topic) with
 * {@code fence.rejected.reason}, {@code fence.rejected.stage=sink} and {@code fence.rejected.highest}
 * ({@link SinkOutcomes}). Expects {@code key.converter=StringConverter} (or {@code ByteArrayConverter}:
 * keys decoded as UTF-8), {@code value.converter=ByteArrayConverter} (Confluent wire format bytes) and
 * {@code header.converter=ByteArrayConverter} (headers byte for byte, also on the dead-letter topic).
 *
 * <p>Only wires the parts and applies Connect's habits: a batch that failed transiently is retried
 * through {@code context.timeout} with a growing backoff, until it succeeds unless {@code max.retries}
 * is set, and offsets are committed only past
 * records written or reported ({@link #preCommit}). The database comes from a factory (HikariCP by default).
 */
public final class FencedJdbcSinkTask extends SinkTask {
    private static final Logger LOG = LoggerFactory.getLogger(FencedJdbcSinkTask.class);

    private final Function<FencedJdbcSinkConfig, DataSource> dataSources;
    private final HandledOffsets handled = new HandledOffsets();
    private PendingMarkers pending = new PendingMarkers(1);
    private FencedJdbcSinkConfig config;
    private DataSource dataSource;
    private SinkWriter writer;
    private SinkMetrics metrics = new SinkMetrics(null);
    private SinkOutcomes outcomes = new SinkOutcomes(null, metrics);
    private int failedAttempts;

    /** The task Connect creates: connections from a HikariCP pool ({@link HikariPools#open}). */
    public FencedJdbcSinkTask() {
        this(HikariPools::open);
    }

    /**
     * A task whose connections come from {@code dataSources}, called once per {@link #start}; a
     * {@link AutoCloseable} data source is closed when the task stops.
     */
    FencedJdbcSinkTask(Function<FencedJdbcSinkConfig, DataSource> dataSources) {
        this.dataSources = dataSources;
    }

    @Override
    public String version() {
        return ModuleVersion.read(FencedJdbcSinkTask.class, "sink-connector.properties", "sink-connector");
    }

    @Override
    public void start(Map<String, String> props) {
        TaskContexts.requireSupportedRuntime();
        config = new FencedJdbcSinkConfig(props);
        handled.clear();
        pending = new PendingMarkers(config.markerPendingMax());
        dataSource = dataSources.apply(config);
        if (!config.guardEnabled()) {
            LOG.warn("fence.guard.enabled=false: every record overwrites its row unconditionally; stale writes WILL win");
        }
        SinkTables tables = new SinkTables(config::tableName, config.guardEnabled(), config.autoCreate(), config.autoEvolve());
        if (!config.tableNamePerTopic()) {
            prepareFixedTable(tables);
        }
        AvroConverter values = new AvroConverter(AvroSerdeConfig.clientFrom(config.registryClientSettings()), false);
        ErrantRecordReporter reporter = TaskContexts.errantRecordReporter(context);
        PendingMarkers waiting = pending;
        metrics = new SinkMetrics(TaskContexts.pluginMetrics(context), waiting::size);
        outcomes = new SinkOutcomes(reporter, metrics);
        writer = new SinkWriter(dataSource, new RecordDecoder(values, config.guardEnabled(), config::readsTopic), tables,
                reporter != null);
        LOG.info("writing to table {} with the fence guard {}", config.tableFormat(), config.guardEnabled() ? "on" : "OFF");
    }

    /** A fixed table: check (or create) it now, so a misfit stops the task before any record. */
    private void prepareFixedTable(SinkTables tables) {
        try (Connection connection = dataSource.getConnection()) {
            tables.prepareFixed(connection);
        } catch (SQLException | ConnectException e) {
            closeDataSource();
            throw e instanceof ConnectException connect
                    ? connect
                    : new ConnectException("cannot prepare table " + config.tableName(null) + ": " + e.getMessage(), e);
        }
    }

    /**
     * Writes {@code records} and the takeover markers still waiting for their row, in one transaction;
     * an empty {@code put} tries the waiting markers again.
     */
    @Override
    public void put(Collection<SinkRecord> records) {
        List<SinkRecord> batch = pending.notWaiting(records);
        List<SinkRecord> waiting = pending.records();
        if (batch.isEmpty() && waiting.isEmpty()) {
            return;
        }
        // Data first, then the markers, oldest first: the batch's writes may bring a marker's row up to the fence it
        // superseded. The markers topic is not ordered against the accepted topic, so this order is as good as any.
        List<SinkRecord> all = new ArrayList<>(batch.size() + waiting.size());
        batch.stream().filter(record -> !RecordDecoder.isTakeoverMarker(record)).forEach(all::add);
        all.addAll(waiting);
        batch.stream().filter(RecordDecoder::isTakeoverMarker).forEach(all::add);
        SinkWriter.Result result;
        try {
            result = writer.write(all);
        } catch (SchemaMismatchException e) {
            throw new ConnectException(e.getMessage(), e);
        } catch (SQLException | TransientFailure e) {
            if (batch.isEmpty() && (e instanceof TransientFailure || SqlErrors.isTransient((SQLException) e))) {
                // Only waiting markers were tried: they are tried again with the next batch, and an idle task does not fail
                // for a database outage it would not have noticed without them.
                LOG.debug("trying {} waiting markers again failed; they wait for the next batch: {}", waiting.size(),
                        e.toString());
                return;
            }
            throw retryOrFail(e, all.size());
        }
        failedAttempts = 0;
        outcomes.committed(result);
        giveUp(pending.replace(result.waiting())); // before the offsets: a marker that now waits holds its offset back
        handled.handled(records);
        LOG.debug("batch of {}: {} written, {} row fences raised by markers, {} fenced, {} markers waiting", records.size(),
                result.written(), result.fencesRaised(), result.rejections().size(), pending.size());
    }

    private void giveUp(List<SinkRecord> markers) {
        for (SinkRecord marker : markers) {
            LOG.warn("giving up the FENCE marker for key {} at {}-{}@{}: more than {}={} markers wait for their row; the row's"
                    + " fence rises with its holder's next write instead", RecordDecoder.printable(marker.key()),
                    marker.originalTopic(), marker.originalKafkaPartition(), marker.originalKafkaOffset(),
                    FencedJdbcSinkConfig.MARKER_PENDING_MAX, config.markerPendingMax());
        }
        metrics.markersGivenUp(markers.size());
    }

    /**
     * A {@link RetriableException} after {@code context.timeout}: {@code retry.backoff.ms}, doubled after each failed retry
     * up to {@code retry.backoff.max.ms}; or the task's end, for an error no retry can fix or after {@code max.retries}
     * (unless -1).
     */
    private ConnectException retryOrFail(Exception e, int batchSize) {
        String problem = e instanceof SQLException sql ? SqlErrors.describe(sql) : e.getMessage();
        if (e instanceof SQLException sql && !SqlErrors.isTransient(sql)) {
            // Data errors never get here (the batch writer dead-letters those records); this is the table or the database itself.
            return new ConnectException("the database refused the batch and retrying cannot help: " + problem, e);
        }
        failedAttempts++;
        if (config.maxRetries() >= 0 && failedAttempts > config.maxRetries()) {
            return new ConnectException("giving up after " + (failedAttempts - 1) + " retries (max.retries): " + problem, e);
        }
        long backoffMs = backoffMillis(failedAttempts, config.retryBackoff().toMillis(), config.retryBackoffMax().toMillis());
        LOG.warn("batch of {} records failed (attempt {}), retrying in {} ms: {}", batchSize, failedAttempts, backoffMs, problem);
        context.timeout(backoffMs);
        return new RetriableException(e);
    }

    /**
     * The wait before retry {@code attempt} (1: the first): {@code first}, doubled each time, at most {@code max}. A wait of 0
     * does not spin: Connect then waits for its next offset commit ({@code WorkerSinkTask} uses only a positive timeout).
     */
    static long backoffMillis(int attempt, long first, long max) {
        long wait = first;
        for (int i = 1; i < attempt && wait < max; i++) {
            wait *= 2;
        }
        return Math.min(wait, max);
    }

    /**
     * Offsets to commit: only past records this task has written or reported (every record of a
     * {@code put} that returned); Connect's own view may include records handed to a {@code put}
     * that failed and will be redelivered. A partition's offset stops at its oldest takeover marker
     * still waiting for its row, so a restart delivers that marker again.
     */
    @Override
    public Map<TopicPartition, OffsetAndMetadata> preCommit(Map<TopicPartition, OffsetAndMetadata> currentOffsets) {
        return handled.committable(currentOffsets, pending.holdBack());
    }

    /** Records written and fenced so far by reason, for logs and tests. */
    public Map<String, Long> counts() {
        return outcomes.counts();
    }

    @Override
    public void open(Collection<TopicPartition> partitions) {
        failedAttempts = 0;
    }

    @Override
    public void close(Collection<TopicPartition> partitions) {
        handled.forget(partitions);
        pending.forget(partitions);
    }

    @Override
    public void stop() {
        LOG.info("stopping; outcomes of this task: {}", counts());
        closeDataSource();
    }

    private void closeDataSource() {
        if (dataSource instanceof AutoCloseable closeable) {
            try {
                closeable.close();
            } catch (Exception e) {
                LOG.warn("closing the connection pool failed: {}", e.toString());
            }
        }
        dataSource = null;
    }
}
