package dev.fencedwrites.sink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.RejectionReason;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link FencedJdbcSinkTask} with its {@code DataSource} from a test factory: records whose fate the
 * headers and key decide are reported without a statement, and the task opens and closes only what
 * the factory gives. The fake connection answers only {@code commit}, {@code rollback} and {@code close}.
 */
class SinkTaskWithoutDatabaseTest {
    private static final String TOPIC = "fenced-writes-accepted";

    private final List<String> calls = new ArrayList<>();
    private final List<FencedJdbcSinkConfig> configs = new ArrayList<>();
    private final FencedJdbcSinkTask task = new FencedJdbcSinkTask(config -> {
        configs.add(config);
        return fakeDataSource();
    });
    private final Map<String, String> props = Map.of(
            FencedJdbcSinkConfig.CONNECTION_URL, "jdbc:postgresql://127.0.0.1:1/none",
            FencedJdbcSinkConfig.SCHEMA_REGISTRY_URL, "http://127.0.0.1:1",
            FencedJdbcSinkConfig.CONNECTION_POOL_SIZE, "3",
            SinkTask.TOPICS_CONFIG, TOPIC);
    private final RecordingSinkTaskContext context = new RecordingSinkTaskContext(props);

    @AfterEach
    void stopTask() {
        task.stop();
    }

    @Test
    void recordsWithoutAKeyOrFromARejectedTopicAreReportedWithoutAStatement() {
        task.initialize(context);
        task.start(props);
        ConnectHeaders rejectedCopy = fence();
        rejectedCopy.addBytes(FenceHeaders.REJECTED_REASON, FenceHeaders.encode("STALE_TOKEN"));

        task.put(List.of(record(null, fence(), 10), record("customer-42", rejectedCopy, 11)));

        assertThat(context.reports()).extracting(report -> ((FencedWriteException) report.error()).reason())
                .containsExactly(RejectionReason.MISSING_KEY, RejectionReason.ALREADY_REJECTED);
        assertThat(calls).containsExactly("getConnection", "commit", "close");
        assertThat(task.counts()).containsEntry("MISSING_KEY", 1L).containsEntry("ALREADY_REJECTED", 1L).containsEntry("written",
                0L);
    }

    @Test
    void theFactoryGetsTheParsedSettingsOncePerStartAndStopClosesWhatItGave() {
        task.initialize(context);
        task.start(props);

        assertThat(configs).singleElement().satisfies(config -> {
            assertThat(config.connectionUrl()).isEqualTo("jdbc:postgresql://127.0.0.1:1/none");
            assertThat(config.poolSize()).isEqualTo(3);
        });
        task.stop();
        assertThat(calls).containsExactly("close data source");
    }

    private DataSource fakeDataSource() {
        Connection connection = (Connection) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[]{Connection.class},
                (proxy, method, args) -> {
                    if (!List.of("commit", "rollback", "close").contains(method.getName())) {
                        throw new UnsupportedOperationException("no database in this test: " + method.getName());
                    }
                    calls.add(method.getName());
                    return null;
                });
        return (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[]{DataSource.class, AutoCloseable.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("getConnection")) {
                        calls.add("getConnection");
                        return connection;
                    }
                    if (method.getName().equals("close")) {
                        calls.add("close data source");
                        return null;
                    }
                    throw new UnsupportedOperationException("no database in this test: " + method.getName());
                });
    }

    private static ConnectHeaders fence() {
        ConnectHeaders headers = new ConnectHeaders();
        headers.addBytes(FenceHeaders.TOKEN, FenceHeaders.encode(7));
        headers.addBytes(FenceHeaders.SEQ, FenceHeaders.encode(1));
        return headers;
    }

    private static SinkRecord record(String key, ConnectHeaders headers, long offset) {
        return new SinkRecord(TOPIC, 0, null, key, null, null, offset, 1_790_000_000_000L, TimestampType.CREATE_TIME, headers);
    }
}
