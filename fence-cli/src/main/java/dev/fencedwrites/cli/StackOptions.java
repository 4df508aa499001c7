package dev.fencedwrites.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.CommonClientConfigs;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;

/**
 * The options the {@code fence} subcommands share, declared once on the root command and inherited
 * ({@link ScopeType#INHERIT}), so {@code fence produce KEY --bootstrap X} and {@code fence --bootstrap X produce KEY}
 * both work; a subcommand that does not use one refuses it (see {@link FenceMain}). Each setting comes from its option,
 * else the environment variable, else the stack's env file (see {@link StackSettings}).
 */
public final class StackOptions {
    public static final String ENV_FILE = "--env-file";
    public static final String BOOTSTRAP = "--bootstrap";
    /** {@link #BOOTSTRAP}'s alias, the name Kafka's own tools use. */
    public static final String BOOTSTRAP_SERVER = "--bootstrap-server";
    public static final String ETCD = "--etcd";
    public static final String SCHEMA_REGISTRY = "--schema-registry";
    public static final String COMMAND_CONFIG = "--command-config";
    public static final String CLIENT_SETTING = "-X";
    /** The env file's (or the environment's) client properties file, the default of {@code --command-config}. */
    public static final String COMMAND_CONFIG_VARIABLE = "KAFKA_COMMAND_CONFIG";
    static final Set<String> NAMES = Set.of(ENV_FILE, BOOTSTRAP, ETCD, SCHEMA_REGISTRY, COMMAND_CONFIG, CLIENT_SETTING);

    @Option(names = ENV_FILE, paramLabel = "FILE", scope = ScopeType.INHERIT, description = "The stack's KEY=value settings: "
            + "where up and demo write them while they run (default: .fence/stack.env for up,"
            + " .fence/demo.env for demo), where the other commands read them (default: .fence/stack.env, else .fence/demo.env).")
    Path file;
    @Option(names = {BOOTSTRAP, BOOTSTRAP_SERVER}, paramLabel = "HOST:PORT", scope = ScopeType.INHERIT,
            description = "Kafka bootstrap servers (default: bootstrap.servers from --command-config or -X, else "
                    + "KAFKA_BOOTSTRAP from the environment or the env file).")
    String bootstrap;
    @Option(names = COMMAND_CONFIG, paramLabel = "FILE", scope = ScopeType.INHERIT, description = "Kafka client properties "
            + "(security.protocol, sasl.*, ssl.*, ...) for every Kafka client of the command, as kafka-console-consumer's "
            + "--command-config (default: KAFKA_COMMAND_CONFIG from the environment or the env file, which ./fence up "
            + "--secured writes).")
    Path commandConfig;
    @Option(names = CLIENT_SETTING, paramLabel = "KEY=VALUE", scope = ScopeType.INHERIT, description = "One Kafka client "
            + "setting, as kcat's -X; repeatable; wins over --command-config, e.g. -X sasl.mechanism=SCRAM-SHA-512.")
    Map<String, String> clientSettings;
    @Option(names = ETCD, paramLabel = "URLS", scope = ScopeType.INHERIT, description = "etcd endpoints, comma-separated "
            + "(default: ETCD_ENDPOINTS from the environment or the env file).")
    String etcd;
    @Option(names = SCHEMA_REGISTRY, paramLabel = "URL", scope = ScopeType.INHERIT, description = "Schema registry URL "
            + "(default: SCHEMA_REGISTRY_URL from the environment or the env file).")
    String registry;

    /** The env file given with {@code --env-file}, else {@code fallback}: where {@code up} and {@code demo} write theirs. */
    public Path envFileOr(Path fallback) {
        return file != null ? file : fallback;
    }

    /** Whether {@code --env-file} was given (then the commands read only that file). */
    public boolean hasEnvFile() {
        return file != null;
    }

    /**
     * {@code --bootstrap}, else {@code bootstrap.servers} of {@code --command-config} or {@code -X}, else
     * {@code KAFKA_BOOTSTRAP}; with {@code wait}, waits for a stack's env file to appear.
     */
    public String bootstrap(boolean wait, PrintWriter err) throws IOException {
        Object fromClient = bootstrap == null ? kafkaClient().get(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG) : null;
        return fromClient != null ? fromClient.toString() : setting("KAFKA_BOOTSTRAP", BOOTSTRAP, bootstrap, wait, err);
    }

    /**
     * The settings every Kafka client of the command takes on top of its own: the properties of {@code --command-config}
     * (else of the file {@value #COMMAND_CONFIG_VARIABLE} names in the environment or the env file), then
     * each {@code -X}.
     *
     * @throws IllegalStateException naming the file when it cannot be read
     */
    public Map<String, Object> kafkaClient() {
        Map<String, Object> settings = new LinkedHashMap<>();
        String fromStack = commandConfig == null ? StackSettings.find(COMMAND_CONFIG_VARIABLE, file) : null;
        Path config = commandConfig != null ? commandConfig : fromStack == null ? null : Path.of(fromStack);
        if (config != null) {
            Properties properties = new Properties();
            try (Reader reader = Files.newBufferedReader(config)) {
                properties.load(reader);
            } catch (IOException e) {
                throw new IllegalStateException("cannot read " + COMMAND_CONFIG + " " + config + ": " + e);
            }
            properties.forEach((key, value) -> settings.put(key.toString(), value.toString()));
        }
        if (clientSettings != null) {
            settings.putAll(clientSettings);
        }
        return settings;
    }

    /**
     * {@link #kafkaClient()} for describing an error: empty when the client properties cannot be read, so an error
     * handler never throws (the unreadable file is then the error being reported).
     */
    Map<String, Object> kafkaClientForErrors() {
        try {
            return kafkaClient();
        } catch (IllegalStateException e) {
            return Map.of();
        }
    }

    /**
     * The connection options given on the command line, as {@code " --name value"} each, shell-quoted ({@code --env-file},
     * {@code --bootstrap}, {@code --etcd}, {@code --schema-registry}; empty when none was), to print a command to run again.
     */
    public String given() {
        return given(ENV_FILE, file) + given(BOOTSTRAP, bootstrap) + given(ETCD, etcd) + given(SCHEMA_REGISTRY, registry);
    }

    private static String given(String name, Object value) {
        return value == null ? "" : " " + name + " " + EnvFile.shellQuoted(value.toString());
    }

    /** {@code --etcd}, else {@code ETCD_ENDPOINTS}. */
    public String etcd(PrintWriter err) throws IOException {
        return setting("ETCD_ENDPOINTS", ETCD, etcd, false, err);
    }

    /** {@code --schema-registry}, else {@code SCHEMA_REGISTRY_URL}; with {@code wait}, waits for a stack's env file. */
    public String schemaRegistry(boolean wait, PrintWriter err) throws IOException {
        return setting("SCHEMA_REGISTRY_URL", SCHEMA_REGISTRY, registry, wait, err);
    }

    /** An optional setting: {@code name} from the environment or the stack's env file, else {@code null}. */
    public String optional(String name) {
        return StackSettings.find(name, file);
    }

    /**
     * {@code explicit} when given, else {@code name} from the environment or the stack's env file.
     *
     * @param option the command's option for this setting, named when there is none
     * @param wait   wait for a stack to write its env file (when following)
     * @throws IllegalStateException naming what to start or pass, when no source has the setting
     */
    public String setting(String name, String option, String explicit, boolean wait, PrintWriter err) throws IOException {
        return explicit != null ? explicit : StackSettings.get(name, option, file, wait, err);
    }
}
