package dev.fencedwrites.interop;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.testing.CommittedRecords;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/**
 * What the pipeline on a {@link LocalStack} shows of one test's keys (those starting with the test's prefix, so tests
 * sharing a stack see only their own): the committed records of a topic and the fenced sink's rows.
 */
final class Pipeline {
    private final LocalStack stack;

    Pipeline(LocalStack stack) {
        this.stack = stack;
    }

    /** Every record of {@code topic} whose key starts with {@code prefix}, read committed, from the beginning to the end. */
    List<ConsumerRecord<String, byte[]>> readAll(String topic, String prefix) {
        return CommittedRecords.withPrefix(stack.kafkaBootstrap(), topic, prefix);
    }

    /** The fenced sink's rows whose key starts with {@code prefix}, column by column; none before the table exists. */
    Map<String, Map<String, Object>> rows(String prefix) throws Exception {
        Map<String, Map<String, Object>> rows = new HashMap<>();
        try (Connection connection = DriverManager.getConnection(stack.postgresUrl())) {
            try (ResultSet tables = connection.getMetaData().getTables(null, null, BillingConnectors.TABLE, null)) {
                if (!tables.next()) {
                    return rows;
                }
            }
            try (PreparedStatement statement = connection
                    .prepareStatement("SELECT * FROM " + BillingConnectors.TABLE + " WHERE resource_key LIKE ?")) {
                statement.setString(1, prefix.replace("_", "\\_").replace("%", "\\%") + "%");
                try (ResultSet result = statement.executeQuery()) {
                    while (result.next()) {
                        Map<String, Object> row = new HashMap<>();
                        for (int c = 1; c <= result.getMetaData().getColumnCount(); c++) {
                            row.put(result.getMetaData().getColumnName(c), result.getObject(c));
                        }
                        rows.put(result.getString("resource_key"), row);
                    }
                }
            }
        }
        return rows;
    }

    /** The last header {@code name} of {@code record}, decoded as the contract says, or {@code null}. */
    static String header(ConsumerRecord<?, ?> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? null : FenceHeaders.decode(header.value());
    }
}
