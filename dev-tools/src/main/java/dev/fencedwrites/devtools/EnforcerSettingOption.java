package dev.fencedwrites.devtools;

import dev.fencedwrites.cli.EnvFile;
import dev.fencedwrites.enforcer.FenceEnforcerConfig;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.kafka.common.config.ConfigException;
import picocli.CommandLine.Option;

/**
 * {@code --enforcer-setting NAME=VALUE} of {@code fence up} and {@code fence chaos}: a setting of the enforcers the stack
 * starts, by its name in the enforcer's properties file (docs/reference/configuration.md), checked as the enforcer checks
 * its file before anything starts. The stack's own settings (where the services are, the topics, the state directory) are
 * refused here: the stack sets them.
 */
final class EnforcerSettingOption {
    /** Settings the local stack gives its enforcers itself. */
    static final Set<String> STACK_OWNED = Set.of(FenceEnforcerConfig.BOOTSTRAP_SERVERS, FenceEnforcerConfig.APPLICATION_ID,
            FenceEnforcerConfig.STATE_DIR, FenceEnforcerConfig.HTTP_PORT, FenceEnforcerConfig.INPUT_TOPIC,
            FenceEnforcerConfig.ACCEPTED_TOPIC, FenceEnforcerConfig.REJECTED_TOPIC, FenceEnforcerConfig.MARKERS_TOPIC);

    /** Prefixes of the settings the stack gives its enforcers itself: etcd, and the Kafka security of a secured stack. */
    static final List<String> STACK_OWNED_PREFIXES = List.of("etcd.", "streams.security.", "streams.sasl.", "streams.ssl.");

    @Option(names = "--enforcer-setting", paramLabel = "NAME=VALUE", description = "A setting of the enforcers this command "
            + "starts, by its name in the enforcer's properties file (docs/reference/configuration.md), e.g. "
            + "fence.expiry.enable=true or streams.commit.interval.ms=50; repeatable. Refused before anything starts: what the "
            + "enforcer would refuse, and what the stack sets itself (bootstrap.servers, application.id, state.dir, "
            + "http.port, the topics, etcd.*, the Kafka security settings) and processing.guarantee.")
    Map<String, String> settings = new LinkedHashMap<>();

    /**
     * The settings given, on top of {@code own} (the command's defaults for them).
     *
     * @param own the settings the command gives the enforcers itself, which a given setting may replace
     * @throws IllegalArgumentException naming the setting, when the stack sets it or the enforcer would refuse it
     */
    Map<String, String> over(Map<String, String> own) {
        for (String name : settings.keySet()) {
            if (STACK_OWNED.contains(name) || STACK_OWNED_PREFIXES.stream().anyMatch(name::startsWith)) {
                throw new IllegalArgumentException("--enforcer-setting " + name + ": the stack sets this itself ("
                        + STACK_OWNED.stream().sorted().collect(Collectors.joining(", ")) + ", "
                        + String.join("*, ", STACK_OWNED_PREFIXES) + "*)");
            }
            if (name.equals(FenceEnforcerConfig.PROCESSING_GUARANTEE)) {
                throw new IllegalArgumentException("--enforcer-setting " + name + ": ./fence up runs exactly_once_v2, which "
                        + "fence chaos --stack and verify assume; fence chaos --processing-guarantee at_least_once starts an "
                        + "at_least_once stack of its own");
            }
        }
        Map<String, String> merged = new LinkedHashMap<>(own);
        merged.putAll(settings);
        Map<String, String> check = new HashMap<>(merged);
        check.put(FenceEnforcerConfig.BOOTSTRAP_SERVERS, "127.0.0.1:9092");
        check.put(FenceEnforcerConfig.APPLICATION_ID, "fence-enforcer");
        check.put("etcd.endpoints", "http://127.0.0.1:2379");
        try {
            FenceEnforcerConfig.of(check);
        } catch (ConfigException e) {
            throw new IllegalArgumentException("--enforcer-setting: " + e.getMessage(), e);
        }
        return merged;
    }

    /** The options as given, for a command line that repeats the run. */
    String given() {
        return settings.entrySet().stream()
                .map(s -> " --enforcer-setting " + EnvFile.shellQuoted(s.getKey() + "=" + s.getValue()))
                .collect(Collectors.joining());
    }

    boolean isEmpty() {
        return settings.isEmpty();
    }
}
