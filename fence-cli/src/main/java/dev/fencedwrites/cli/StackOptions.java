package dev.fencedwrites.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Set;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;

/**
 * The options the {@code fence} subcommands share, declared once on the root command and inherited
 * ({@link ScopeType#INHERIT}), so {@code fence produce KEY --bootstrap X} and {@code fence --bootstrap X produce KEY}
 * both work; a subcommand that does not use one refuses it (see {@link FenceMain}). Each setting comes from its option,
 * else the environment variable, else the stack's env file (see {@link StackSettings}).
 */
public final class StackOptions {
    static final String ENV_FILE = "--env-file";
    static final String BOOTSTRAP = "--bootstrap";
    static final String ETCD = "--etcd";
    static final String SCHEMA_REGISTRY = "--schema-registry";
    static final Set<String> NAMES = Set.of(ENV_FILE, BOOTSTRAP, ETCD, SCHEMA_REGISTRY);

    @Option(names = ENV_FILE, paramLabel = "FILE", scope = ScopeType.INHERIT, description = "The stack's KEY=value settings: "
            + "where up and demo write them while they run (default: .fence/stack.env for up,"
            + " .fence/demo.env for demo), where the other commands read them (default: .fence/stack.env, else .fence/demo.env).")
    Path file;
    @Option(names = BOOTSTRAP, paramLabel = "HOST:PORT", scope = ScopeType.INHERIT, description = "Kafka bootstrap servers "
            + "(default: KAFKA_BOOTSTRAP from the environment or the env file).")
    String bootstrap;
    @Option(names = ETCD, paramLabel = "URLS", scope = ScopeType.INHERIT, description = "etcd endpoints, comma-separated "
            + "(default: ETCD_ENDPOINTS from the environment or the env file).")
    String etcd;
    @Option(names = SCHEMA_REGISTRY, paramLabel = "URL", scope = ScopeType.INHERIT, description = "Schema registry URL "
            + "(default: SCHEMA_REGISTRY_URL from the environment or the env file).")
    String registry;

    /** The env file given with {@code --env-file}, else {@code fallback}: where {@code up} and {@code demo} write theirs. */
    Path envFileOr(Path fallback) {
        return file != null ? file : fallback;
    }

    /** Whether {@code --env-file} was given (then the commands read only that file). */
    boolean hasEnvFile() {
        return file != null;
    }

    /** {@code --bootstrap}, else {@code KAFKA_BOOTSTRAP}; with {@code wait}, waits for a stack's env file to appear. */
    String bootstrap(boolean wait, PrintWriter err) throws IOException {
        return setting("KAFKA_BOOTSTRAP", BOOTSTRAP, bootstrap, wait, err);
    }

    /** {@code --etcd}, else {@code ETCD_ENDPOINTS}. */
    String etcd(PrintWriter err) throws IOException {
        return setting("ETCD_ENDPOINTS", ETCD, etcd, false, err);
    }

    /** {@code --schema-registry}, else {@code SCHEMA_REGISTRY_URL}; with {@code wait}, waits for a stack's env file. */
    String schemaRegistry(boolean wait, PrintWriter err) throws IOException {
        return setting("SCHEMA_REGISTRY_URL", SCHEMA_REGISTRY, registry, wait, err);
    }

    /**
     * {@code explicit} when given, else {@code name} from the environment or the stack's env file.
     *
     * @param option the command's option for this setting, named when there is none
     * @param wait   wait for a stack to write its env file (when following)
     * @throws IllegalStateException naming what to start or pass, when no source has the setting
     */
    String setting(String name, String option, String explicit, boolean wait, PrintWriter err) throws IOException {
        return explicit != null ? explicit : StackSettings.get(name, option, file, wait, err);
    }
}
