package dev.fencedwrites.sink;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;

/** Kafka Connect sink writing accepted fenced records to PostgreSQL with a fence-guarded upsert. */
public final class FencedJdbcSinkConnector extends SinkConnector {
    private Map<String, String> props;

    @Override
    public void start(Map<String, String> props) {
        new FencedJdbcSinkConfig(props).tableName();
        this.props = Map.copyOf(props);
    }

    @Override
    public Class<? extends Task> taskClass() {
        return FencedJdbcSinkTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        List<Map<String, String>> configs = new ArrayList<>(maxTasks);
        for (int i = 0; i < maxTasks; i++) {
            configs.add(props);
        }
        return configs;
    }

    @Override
    public void stop() {
    }

    @Override
    public ConfigDef config() {
        return FencedJdbcSinkConfig.DEFINITION;
    }

    @Override
    public String version() {
        return Version.get();
    }
}
