package dev.fencedwrites.sink;

import dev.fencedwrites.avro.AvroSerdeConfig;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.avro.SchemaRegistryException;
import dev.fencedwrites.buildinfo.ModuleVersion;
import dev.fencedwrites.sink.internal.ResourceKeys;
import dev.fencedwrites.sink.internal.TableName;
import dev.fencedwrites.sink.internal.TableStructure;
import dev.fencedwrites.sink.internal.TaskContexts;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;

/** Kafka Connect sink writing accepted fenced records to PostgreSQL with a fence-guarded upsert. */
public final class FencedJdbcSinkConnector extends SinkConnector {
    private Map<String, String> props;

    /**
     * Checks the settings once more (Connect may start a connector without validating it) and keeps them for the tasks.
     *
     * @throws ConfigException naming {@code table.name} or {@code key.converter} when they cannot work
     */
    @Override
    public void start(Map<String, String> props) {
        TaskContexts.requireSupportedRuntime();
        new FencedJdbcSinkConfig(props); // checks table.name too
        String keyProblem = keyConverterProblem(props);
        if (keyProblem != null) {
            throw new ConfigException(KEY_CONVERTER, props.get(KEY_CONVERTER), keyProblem);
        }
        for (Map.Entry<String, String> required : REQUIRED_WORKER_OVERRIDES.entrySet()) {
            String problem = requiredOverrideProblem(props, required.getKey());
            if (problem != null) {
                throw new ConfigException(required.getKey(), props.get(required.getKey()), problem);
            }
        }
        this.props = Map.copyOf(props);
    }

    /** Connect's connector-level override of the worker's key converter. */
    static final String KEY_CONVERTER = "key.converter";
    /** Connect's connector-level override of the worker's header converter. */
    static final String HEADER_CONVERTER = "header.converter";
    /** The connector-level override of the sink consumer's isolation level (KIP-458). */
    static final String ISOLATION_LEVEL_OVERRIDE = "consumer.override.isolation.level";
    /**
     * Settings the connector's own configuration must carry, with the value each must have: a worker-level setting is not
     * visible to a connector, so only these make the guarantee hold whatever the worker says.
     */
    static final Map<String, String> REQUIRED_WORKER_OVERRIDES = Map.of(
            HEADER_CONVERTER, "org.apache.kafka.connect.converters.ByteArrayConverter",
            ISOLATION_LEVEL_OVERRIDE, "read_committed");

    /**
     * Why {@code key}, one of {@link #REQUIRED_WORKER_OVERRIDES}, is wrong in the connector's configuration, or {@code null}.
     * Connect's default header converter (SimpleHeaderConverter) parses header values: {@code fence.marker.previous}
     * "10.50" arrives as the number 10.5 and tokens of 10^7 and above in exponent form. Connect's default isolation level
     * (read_uncommitted) hands the task records of aborted enforcer transactions, which the enforcer never decided.
     */
    private static String requiredOverrideProblem(Map<String, String> props, String key) {
        String required = REQUIRED_WORKER_OVERRIDES.get(key);
        String value = props.get(key);
        // Connect also takes a plugin's simple class name as its alias, e.g. header.converter=ByteArrayConverter.
        if (value != null && (value.strip().equalsIgnoreCase(required)
                || HEADER_CONVERTER.equals(key) && required.endsWith("." + value.strip()))) {
            return null;
        }
        String why = HEADER_CONVERTER.equals(key)
                ? "the fence headers must reach the task byte for byte (Connect's default SimpleHeaderConverter parses "
                        + "\"10.50\" as the number 10.5 and writes large tokens in exponent form)"
                : "the task must see only committed enforcer outputs (Connect's default read_uncommitted also hands it "
                        + "records of aborted enforcer transactions, which were never decided)";
        return "set " + key + "=" + required + " in the connector's configuration, where it overrides the worker's: " + why
                + (value == null ? "" : "; got " + value);
    }

    /**
     * Why the connector's {@code key.converter} override cannot give resource ids, or {@code null}: one of
     * Connect's number and boolean converters never gives text. Others (String, ByteArray, JSON, Avro)
     * may, and the task checks each key ({@code ResourceKeys}); a worker-level setting is not visible here.
     */
    private static String keyConverterProblem(Map<String, String> props) {
        String converter = props.get(KEY_CONVERTER);
        if (converter == null || !ResourceKeys.NON_TEXT_CONVERTERS.contains(converter.trim())) {
            return null;
        }
        return KEY_CONVERTER + "=" + converter.trim() + " gives keys that are not text, but each key must be the resource id "
                + "as text: use"
                + " org.apache.kafka.connect.storage.StringConverter (or "
                + "org.apache.kafka.connect.converters.ByteArrayConverter, read as UTF-8)";
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

    /**
     * Connect's checks of each setting, then: can the database be reached with these settings, does
     * the fixed table fit (or will {@code auto.create} make it), does each existing table of a listed
     * topic fit ({@code table.name} with {@code ${topic}} and {@code topics}), does the schema registry
     * answer, can a {@code key.converter} override give text keys, and does the configuration carry the
     * worker overrides the sink needs ({@code header.converter}, {@code consumer.override.isolation.level})?
     * Problems are attached to {@code connection.url}, {@code table.name}, {@code schema.registry.url} and the keys named,
     * so Connect's REST API shows them before the connector is created (Connect counts the errors of
     * every value returned, its own keys included: {@code AbstractHerder.generateResult}).
     */
    @Override
    public Config validate(Map<String, String> connectorConfigs) {
        Config config = super.validate(connectorConfigs);
        Map<String, ConfigValue> values = new HashMap<>();
        config.configValues().forEach(value -> values.put(value.name(), value));
        List<ConfigValue> withProblems = new ArrayList<>(config.configValues());
        addProblem(withProblems, KEY_CONVERTER, keyConverterProblem(connectorConfigs));
        for (String key : REQUIRED_WORKER_OVERRIDES.keySet()) {
            addProblem(withProblems, key, requiredOverrideProblem(connectorConfigs, key));
        }
        config = new Config(withProblems);
        if (config.configValues().stream().anyMatch(value -> !value.errorMessages().isEmpty())) {
            return config;
        }
        FencedJdbcSinkConfig parsed;
        try {
            parsed = new FencedJdbcSinkConfig(connectorConfigs); // checks table.name too
        } catch (ConfigException e) {
            values.get(FencedJdbcSinkConfig.TABLE_NAME).addErrorMessage(e.getMessage());
            return config;
        }
        checkTables(parsed, connectorConfigs.get("topics"), values);
        checkRegistry(parsed, values);
        return config;
    }

    /**
     * Adds {@code problem}, when not {@code null}, as an error of {@code key}. The value is left {@code null}: Connect's herder
     * renders each returned value with its own definition of the key, and a {@code String} where it defines a class
     * ({@code key.converter}, {@code header.converter}) failed the whole validation with HTTP 500.
     */
    private static void addProblem(List<ConfigValue> values, String key, String problem) {
        if (problem == null) {
            return;
        }
        ConfigValue value = values.stream().filter(v -> v.name().equals(key)).findFirst().orElseGet(() -> {
            ConfigValue added = new ConfigValue(key, null, List.of(), new ArrayList<>());
            values.add(added);
            return added;
        });
        value.addErrorMessage(problem);
    }

    /**
     * Connects as the task will and checks the fixed table, or the table of each listed topic; problems go to
     * {@code table.name}, a failed connection to {@code connection.url}.
     */
    private static void checkTables(FencedJdbcSinkConfig parsed, String topics, Map<String, ConfigValue> values) {
        Properties login = new Properties();
        if (parsed.connectionUser() != null) {
            login.setProperty("user", parsed.connectionUser());
        }
        if (parsed.password() != null) {
            login.setProperty("password", parsed.password());
        }
        login.setProperty("loginTimeout", "5");
        try (Connection connection = DriverManager.getConnection(parsed.connectionUrl(), login)) {
            List<TableName> tables = new ArrayList<>();
            if (!parsed.tableNamePerTopic()) {
                tables.add(parsed.tableName(null));
            } else if (topics != null) {
                for (String topic : topics.split(",")) {
                    if (!topic.isBlank() && !tables.contains(parsed.tableName(topic.trim()))) {
                        tables.add(parsed.tableName(topic.trim()));
                    }
                }
            }
            for (TableName name : tables) {
                TableStructure table = new TableStructure(name, false, false);
                List<String> mismatches = table.ownColumnMismatches(connection);
                boolean missing = mismatches.size() == 1 && mismatches.get(0).contains("does not exist");
                if (!mismatches.isEmpty() && !(missing && parsed.autoCreate())) {
                    values.get(FencedJdbcSinkConfig.TABLE_NAME).addErrorMessage(String.join("; ", mismatches)
                            + (missing
                                    ? " (set auto.create=true, or create it as: " + table.createStatement(List.of()) + ")"
                                    : ""));
                }
            }
        } catch (SQLException e) {
            values.get(FencedJdbcSinkConfig.CONNECTION_URL).addErrorMessage("cannot connect to the database: " + e.getMessage());
        }
    }

    /** Asks the schema registry for its subjects; problems go to {@code schema.registry.url}. */
    private static void checkRegistry(FencedJdbcSinkConfig parsed, Map<String, ConfigValue> values) {
        // Through the task's own client, so several URLs, credentials and TLS settings are tried as the task will use them.
        Map<String, Object> registrySettings = parsed.registryClientSettings();
        registrySettings.putIfAbsent(AvroSerdeConfig.CLIENT_PREFIX + AvroSerdeConfig.HTTP_CONNECT_TIMEOUT_MS, 5_000);
        registrySettings.putIfAbsent(AvroSerdeConfig.CLIENT_PREFIX + AvroSerdeConfig.HTTP_READ_TIMEOUT_MS, 5_000);
        try {
            new RestSchemaRegistryClient(registrySettings).subjects();
        } catch (SchemaRegistryException e) {
            values.get(FencedJdbcSinkConfig.SCHEMA_REGISTRY_URL).addErrorMessage(e.httpStatus() == -1
                    ? "cannot reach the schema registry: " + e.getMessage()
                    : "the schema registry answered GET /subjects with HTTP " + e.httpStatus()
                            + "; is this a Confluent-compatible registry URL? "
                            + e.getMessage());
        } catch (ConfigException e) {
            values.get(FencedJdbcSinkConfig.SCHEMA_REGISTRY_URL)
                    .addErrorMessage("invalid schema registry settings: " + e.getMessage());
        }
    }

    @Override
    public ConfigDef config() {
        return FencedJdbcSinkConfig.DEFINITION;
    }

    @Override
    public String version() {
        return ModuleVersion.read(FencedJdbcSinkConnector.class, "sink-connector.properties", "sink-connector");
    }
}
