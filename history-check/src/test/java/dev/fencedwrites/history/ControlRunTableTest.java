package dev.fencedwrites.history;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.FenceHeaders;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.connect.errors.DataException;
import org.junit.jupiter.api.Test;

/**
 * verify's table check in a control run ({@link PipelineVerifier.Options#control}): the input read as the accepted topic,
 * through a sink with the guard off, which skips {@code FENCE} markers. The rows come from a fake result set: the rule
 * under test is which rows verify expects, not SQL (the ITs run it against PostgreSQL).
 */
class ControlRunTableTest {
    private static final String INPUT = "fenced-writes";
    private final List<ConsumerRecord<byte[], byte[]>> input = new ArrayList<>();

    private void write(String key, long token, long seq) {
        append(key, token, seq, "v" + token + "." + seq, "WRITE");
    }

    private void marker(String key, long token) {
        append(key, token, 0, null, "FENCE");
    }

    private void append(String key, long token, long seq, String value, String op) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(FenceHeaders.TOKEN, FenceHeaders.encode(token));
        headers.add(FenceHeaders.SEQ, FenceHeaders.encode(seq));
        headers.add(FenceHeaders.OP, FenceHeaders.encode(op));
        byte[] bytes = key.getBytes(StandardCharsets.UTF_8);
        int partition = Utils.toPositive(Utils.murmur2(bytes)) % 2;
        long offset = input.stream().filter(r -> r.partition() == partition).count();
        input.add(new ConsumerRecord<>(INPUT, partition, offset, 0L, TimestampType.CREATE_TIME, 0, 0, bytes,
                value == null ? null : value.getBytes(StandardCharsets.UTF_8), headers, Optional.empty()));
    }

    /** verify's findings for the control table holding {@code rows}: {key, fence_token, fence_seq, deleted} each. */
    private Findings verify(Object[][] rows) throws Exception {
        Findings findings = new Findings();
        Scope scope = new Scope(INPUT, INPUT, "fenced-writes-rejected", null, 2, true,
                Map.of(0, Long.MAX_VALUE, 1, Long.MAX_VALUE));
        TopicSource topics = (topic, pass, from, until, handler) -> (INPUT.equals(topic)
                ? input
                : List
                        .<ConsumerRecord<byte[], byte[]>>of())
                .forEach(handler);
        HistoryCheck history = PipelineVerifier.check(scope, topics, true, findings);
        new TableAudit(findings, "billing_summary_unfenced", scope, (topic, partition, offset) -> true, value -> {
            throw new DataException("values are not compared here");
        }, keys -> Map.of()).run(table(rows), history.keys());
        return findings;
    }

    @Test
    void aRowLeftBehindByAStaleWriteIsReportedAndASkippedMarkerIsNot() throws Exception {
        write("stale", 3, 1);
        write("stale", 6, 1);
        write("late-marker", 5, 1);
        marker("late-marker", 7); // a new holder took the lock and wrote nothing yet: the control sink skipped its marker
        marker("marker-only", 9);

        Findings findings = verify(new Object[][]{{"stale", 3L, 1L, false}, {"late-marker", 5L, 1L, false}});

        assertThat(findings.described()).filteredOn(v -> v.kind().name().startsWith("ROW_"))
                .extracting(v -> v.kind() + " " + v.key()).containsExactly("ROW_BEHIND stale");
    }

    @Test
    void aControlTableAtEveryKeysHighestWriteHasNoRowFinding() throws Exception {
        write("a", 3, 1);
        marker("a", 6);
        write("a", 6, 1);
        write("a", 6, 2);

        Findings findings = verify(new Object[][]{{"a", 6L, 2L, false}});

        assertThat(findings.described()).filteredOn(v -> v.kind().name().startsWith("ROW_")).isEmpty();
        assertThat(findings.byKind()).doesNotContainKey(ViolationKind.ROW_BEHIND);
    }

    /** A connection whose one query returns {@code rows}. */
    private static Connection table(Object[][] rows) {
        int[] at = {-1};
        ClassLoader loader = ControlRunTableTest.class.getClassLoader();
        ResultSet result = (ResultSet) Proxy.newProxyInstance(loader, new Class<?>[]{ResultSet.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "next" -> ++at[0] < rows.length;
                    case "getString" -> (String) rows[at[0]][0];
                    case "getLong" -> (Long) rows[at[0]][(Integer) args[0] - 1];
                    case "getBoolean" -> (Boolean) rows[at[0]][3];
                    case "wasNull" -> false;
                    default -> null;
                });
        PreparedStatement statement = (PreparedStatement) Proxy.newProxyInstance(loader,
                new Class<?>[]{PreparedStatement.class},
                (proxy, method, args) -> "executeQuery".equals(method.getName()) ? result : null);
        return (Connection) Proxy.newProxyInstance(loader, new Class<?>[]{Connection.class},
                (proxy, method, args) -> "prepareStatement".equals(method.getName()) ? statement : null);
    }
}
