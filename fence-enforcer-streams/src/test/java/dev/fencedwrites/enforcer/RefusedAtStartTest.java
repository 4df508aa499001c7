package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.kafka.streams.state.RocksDBConfigSetter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.rocksdb.Options;
import picocli.CommandLine;

/**
 * The enforcer's main, started with a configuration it must refuse, exits 2 with one line naming the settings, before it
 * reaches Kafka or etcd (the addresses here lead nowhere): the "refused at start" rows of docs/operate/guarantees.md.
 */
class RefusedAtStartTest {
    @TempDir
    Path dir;

    @Test
    void withoutAnApplicationIdTheEnforcerDoesNotStart() throws Exception {
        Map<String, String> settings = runnable();
        settings.remove("application.id");

        assertThat(start(settings)).startsWith("exit 2:").contains("application.id");
    }

    @Test
    void withoutEtcdEndpointsTheEnforcerDoesNotStartUnlessVerificationIsTurnedOffByName() throws Exception {
        Map<String, String> settings = runnable();
        settings.remove("token.verification.enable");

        assertThat(start(settings)).startsWith("exit 2:").contains("etcd.endpoints is not set")
                .contains("token.verification.enable=false");
    }

    @ParameterizedTest
    @CsvSource({"token.verification.enable, true, etcd.endpoints",
            "http.host, 0.0.0.0, http.auth.basic.password",
            "http.auth.basic.user, prometheus, http.auth.basic.password",
            "http.auth.basic.password, s3cret, http.auth.basic.user"})
    void aContradictionIsRefusedNamingBothSettings(String key, String value, String other) throws Exception {
        Map<String, String> settings = runnable();
        settings.put(key, value);

        assertThat(start(settings)).startsWith("exit 2:").contains(key).contains(other);
    }

    /** Fence expiry's proof needs verified tokens and transactions: without either, turning it on is refused. */
    @Test
    void fenceExpiryIsRefusedWithoutTokenVerificationOrUnderAtLeastOnce() throws Exception {
        Map<String, String> unverified = runnable();
        unverified.put("fence.expiry.enable", "true");
        Map<String, String> atLeastOnce = runnable();
        atLeastOnce.put("fence.expiry.enable", "true");
        atLeastOnce.put("token.verification.enable", "true");
        atLeastOnce.put("etcd.endpoints", "http://127.0.0.1:1");
        atLeastOnce.put("processing.guarantee", "at_least_once");
        Map<String, String> accepted = new LinkedHashMap<>(atLeastOnce);
        accepted.remove("processing.guarantee");

        assertThat(start(unverified)).startsWith("exit 2:").contains("fence.expiry.enable=true")
                .contains("token.verification.enable=true");
        assertThat(start(atLeastOnce)).startsWith("exit 2:").contains("fence.expiry.enable=true")
                .contains("processing.guarantee=exactly_once_v2, got at_least_once");
        assertThat(FenceEnforcerConfig.load(write(accepted), Map.of()).expiry()).isPresent();
    }

    @ParameterizedTest
    @CsvSource({"streams.processing.guarantee, at_least_once, processing.guarantee",
            "streams.application.id, other, application.id", "streams.bootstrap.servers, 127.0.0.1:2, bootstrap.servers",
            "streams.state.dir, /tmp/elsewhere, state.dir", "streams.application.server, h:1, http.advertised.host",
            "streams.production.exception.handler, my.Handler, may drop a record",
            "streams.default.production.exception.handler, my.Handler, may drop a record",
            "streams.processing.exception.handler, my.Handler, may drop a record",
            "streams.deserialization.exception.handler, my.Handler, may drop a record",
            "streams.acks, 1, acks=all", "streams.producer.acks, 0, acks=all",
            "streams.enable.idempotence, false, idempotent producer",
            "streams.producer.enable.idempotence, false, idempotent producer",
            "streams.topic.cleanup.policy, delete, internal topics",
            "streams.topic.min.compaction.lag.ms, 0, internal topics",
            "streams.topic.message.timestamp.type, CreateTime, internal topics",
            "streams.topic.retention.ms, 1000, internal topics",
            "streams.topic.unclean.leader.election.enable, true, internal topics",
            "streams.main.consumer.isolation.level, read_uncommitted, committed records only",
            "streams.restore.consumer.isolation.level, read_uncommitted, committed records only",
            "streams.restore.consumer.bootstrap.servers, 127.0.0.1:2, set bootstrap.servers",
            "streams.admin.bootstrap.servers, 127.0.0.1:2, set bootstrap.servers",
            "streams.main.consumer.auto.offset.reset, latest, earliest offset",
            "streams.auto.offset.reset, none, earliest offset",
            "streams.fenced-writes.rocksdb.config.setter, my.Setter, its own parts of Kafka Streams"})
    void aPassThroughThatWouldWeakenTheFenceIsRefusedNamingIt(String key, String value, String reason) throws Exception {
        Map<String, String> settings = runnable();
        settings.put(key, value);

        assertThat(start(settings)).startsWith("exit 2:").contains(key).contains(reason);
    }

    /**
     * Kafka Streams makes a RocksDB config setter as each store opens: one it cannot make would stop the stream thread
     * there, so the enforcer refuses it at start, with expiry on or off.
     */
    @ParameterizedTest
    @CsvSource({"com.example.MissingSetter, false", "java.lang.String, false",
            "dev.fencedwrites.enforcer.RefusedAtStartTest$SetterWithoutDefaultConstructor, false",
            "com.example.MissingSetter, true"})
    void aRocksDBConfigSetterKafkaStreamsCouldNotMakeIsRefusedNamingIt(String setter, boolean expiry) throws Exception {
        Map<String, String> settings = runnable();
        settings.put("streams.rocksdb.config.setter", setter);
        if (expiry) {
            settings.put("fence.expiry.enable", "true");
            settings.put("token.verification.enable", "true");
            settings.put("etcd.endpoints", "http://127.0.0.1:1");
        }
        assertThat(start(settings)).startsWith("exit 2:").contains("streams.rocksdb.config.setter").contains(setter);
    }

    /** A setter Kafka Streams cannot make: no constructor without arguments. */
    public static final class SetterWithoutDefaultConstructor implements RocksDBConfigSetter {
        public SetterWithoutDefaultConstructor(int unused) {
        }

        @Override
        public void setConfig(String storeName, Options options, Map<String, Object> configs) {
        }

        @Override
        public void close(String storeName, Options options) {
        }
    }

    @Test
    void theSafeValuesOfThoseSettingsAreAccepted() {
        Map<String, Object> safe = Map.of("acks", "all", "producer.acks", "-1", "enable.idempotence", "true",
                "producer.enable.idempotence", "TRUE", "topic.max.message.bytes", "2097152", "commit.interval.ms", "50",
                "topic.unclean.leader.election.enable", "false", "main.consumer.isolation.level", "read_committed",
                "auto.offset.reset", "earliest");

        FenceEnforcerConfig.refuseUnsafePassThrough(safe, true);
        // at_least_once reads uncommitted records by default: nothing is written in transactions to be aborted.
        FenceEnforcerConfig.refuseUnsafePassThrough(Map.of("main.consumer.isolation.level", "read_uncommitted"), false);
    }

    /** A configuration the enforcer accepts (it would then try to reach a broker that is not there). */
    private static Map<String, String> runnable() {
        Map<String, String> settings = new LinkedHashMap<>();
        settings.put("bootstrap.servers", "127.0.0.1:1");
        settings.put("application.id", "refused-at-start");
        settings.put("token.verification.enable", "false");
        return settings;
    }

    private Path write(Map<String, String> settings) throws Exception {
        return Files.writeString(dir.resolve("enforcer.properties"), settings.entrySet().stream()
                .map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining("\n", "", "\n")));
    }

    /** Runs the enforcer's command line on {@code settings}; returns "exit N: " and what it wrote to standard error. */
    private String start(Map<String, String> settings) throws Exception {
        Path file = write(settings);
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream saved = System.err;
        int exit;
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            exit = new CommandLine(new FenceEnforcerApp()).execute("--config", file.toString());
        } finally {
            System.setErr(saved);
        }
        return "exit " + exit + ": " + err.toString(StandardCharsets.UTF_8);
    }
}
