package dev.fencedwrites.enforcer;

import static dev.fencedwrites.enforcer.FenceEnforcerConfig.*;

import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.etcd.EtcdSettings;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.streams.StreamsConfig;

/**
 * The enforcer's {@link ConfigDef}: each setting's type, default, validator, documentation, group
 * and order, as {@link FenceEnforcerConfig#DEFINITION} publishes it and the checked-in
 * {@code CONFIGURATION.rst} renders it (one method per group, in the reference's order). Parsing
 * and cross-setting checks stay in {@link FenceEnforcerConfig}.
 */
final class FenceEnforcerConfigDefinition {
    private static final String GROUP_KAFKA = "Kafka";
    private static final String GROUP_HTTP = "HTTP";
    private static final String GROUP_TOPICS = "Topics";
    private static final String GROUP_VERIFICATION = "Token verification";
    private static final String GROUP_EXPIRY = "Fence expiry";

    private FenceEnforcerConfigDefinition() {
    }

    static ConfigDef definition() {
        return expiry(tokenVerification(http(topics(kafka(new ConfigDef())))));
    }

    /** Cluster, application id, topics and processing guarantee. */
    private static ConfigDef kafka(ConfigDef definition) {
        return definition
                .define(BOOTSTRAP_SERVERS, Type.LIST, ConfigDef.NO_DEFAULT_VALUE, Importance.HIGH,
                        "Kafka brokers to bootstrap from, host:port, comma-separated.", GROUP_KAFKA, 1, ConfigDef.Width.LONG,
                        "Bootstrap servers")
                .define(APPLICATION_ID, Type.STRING, ConfigDef.NO_DEFAULT_VALUE, new ConfigDef.NonEmptyString(),
                        Importance.HIGH,
                        "Kafka Streams application id: consumer group, prefix of internal topics. Instances with the same id "
                                + "share the work. Required, as in Kafka Streams: an enforcer started with a default id "
                                + "against a shared cluster would join the running enforcers' group and take their "
                                + "partitions.",
                        GROUP_KAFKA, 2, ConfigDef.Width.MEDIUM, "Application id")
                .define(INPUT_TOPIC, Type.STRING, FenceTopics.INPUT, new ConfigDef.NonEmptyString(), Importance.HIGH,
                        "Topic workers publish fenced writes to.", GROUP_KAFKA, 3, ConfigDef.Width.MEDIUM, "Input topic")
                .define(ACCEPTED_TOPIC, Type.STRING, FenceTopics.ACCEPTED, new ConfigDef.NonEmptyString(), Importance.HIGH,
                        "Topic accepted records are forwarded to, byte for byte.", GROUP_KAFKA, 4, ConfigDef.Width.MEDIUM,
                        "Accepted topic")
                .define(REJECTED_TOPIC, Type.STRING, FenceTopics.REJECTED, new ConfigDef.NonEmptyString(), Importance.HIGH,
                        "Topic rejected records go to, with fence.rejected.* headers.", GROUP_KAFKA, 5, ConfigDef.Width.MEDIUM,
                        "Rejected topic")
                .define(MARKERS_TOPIC, Type.STRING, FenceTopics.MARKERS, Importance.MEDIUM,
                        "Topic each winning FENCE marker is published to (its key, null value, its fence headers, "
                                + "fence.marker.target.topic and fence.source.*), for the sink to raise the row's fence at "
                                + "takeover. Empty: markers only raise the enforcer's fence.",
                        GROUP_KAFKA, 6, ConfigDef.Width.MEDIUM, "Markers topic")
                .define(STATE_DIR, Type.STRING, null, Importance.MEDIUM,
                        "Directory of the local state store (RocksDB); when unset, fence-enforcer under the JVM's "
                                + "java.io.tmpdir. The changelog topic restores it when lost.",
                        GROUP_KAFKA, 7, ConfigDef.Width.LONG, "State directory")
                .define(PROCESSING_GUARANTEE, Type.STRING, StreamsConfig.EXACTLY_ONCE_V2,
                        ConfigDef.ValidString.in(StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE), Importance.MEDIUM,
                        "exactly_once_v2: each input record's outcome and the fence update commit atomically. at_least_once: "
                                + "after a crash the records since the last commit are decided again against the fence each "
                                + "met the first time, so an outcome may be written twice but none is lost and no rejected "
                                + "write is ever accepted.",
                        GROUP_KAFKA, 8, ConfigDef.Width.SHORT, "Processing guarantee")
                .define(PARTITION_MISMATCH_POLICY, Type.STRING, PartitionMismatch.REROUTE.configValue(),
                        ConfigDef.CaseInsensitiveValidString.in(PartitionMismatch.REROUTE.configValue(),
                                PartitionMismatch.REJECT.configValue()),
                        Importance.MEDIUM,
                        "What to do with a record on another input partition than murmur2 of its key assigns (its key's "
                                + "fence lives there; librdkafka clients such as kcat, Python, Go and .NET default to CRC32). "
                                + "reroute: send it through the repartition topic <application.id>-fence-reroute-repartition "
                                + "(internal, the input's partition count, transactional under exactly_once_v2) to that "
                                + "partition and decide it there: one extra write and read per misrouted record, none for "
                                + "the others. reject: reject it WRONG_PARTITION (strict: no extra topic, no extra hop, "
                                + "every writer must use murmur2).",
                        GROUP_KAFKA, 9, ConfigDef.Width.SHORT, "Partition mismatch policy");
    }

    /** Creation of missing topics at start. */
    private static ConfigDef topics(ConfigDef definition) {
        return definition
                .define(TOPICS_CREATE_ENABLE, Type.BOOLEAN, false, Importance.MEDIUM,
                        "Create missing topics at start. Off: a missing topic stops the enforcer with a message naming it. "
                                + "Accepted and rejected topics are created with the input's partition count; the rejected "
                                + "topic with room for the rejection headers.",
                        GROUP_TOPICS, 1, ConfigDef.Width.SHORT, "Create topics")
                .define(TOPICS_CREATE_PARTITIONS, Type.INT, 3, ConfigDef.Range.atLeast(1), Importance.LOW,
                        "Partitions of the input topic when it is created. Never change it later: keys would move away from "
                                + "their fences.",
                        GROUP_TOPICS, 2, ConfigDef.Width.SHORT, "Input partitions")
                .define(TOPICS_CREATE_REPLICATION_FACTOR, Type.SHORT, (short) -1, ConfigDef.Range.between(-1, Short.MAX_VALUE),
                        Importance.LOW,
                        "Replication factor of created topics; -1 uses the broker's default.", GROUP_TOPICS, 3,
                        ConfigDef.Width.SHORT, "Replication factor");
    }

    /** The HTTP endpoints (/metrics, /health/live, /health/ready, /fences/{key}). */
    private static ConfigDef http(ConfigDef definition) {
        return definition
                .define(HTTP_HOST, Type.STRING, "127.0.0.1", Importance.MEDIUM,
                        "Address the HTTP endpoints bind to: /metrics (Prometheus), /health/live (200 while the Kafka "
                                + "Streams client is alive, restoring included: a Kubernetes livenessProbe), /health/ready "
                                + "(200 only while it is RUNNING: a readinessProbe; /health is the same) and /fences/{key} "
                                + "(which names keys and their fences). The default, loopback, is safe on a shared network. "
                                + "Any other address (0.0.0.0 in a container or a pod) is refused at start unless "
                                + "http.auth.basic.user and http.auth.basic.password are set: /metrics and /fences/{key} then "
                                + "ask for them, the probes never do.",
                        GROUP_HTTP, 1,
                        ConfigDef.Width.MEDIUM, "HTTP host")
                .define(HTTP_PORT, Type.INT, 8090, ConfigDef.Range.between(0, 65535), Importance.LOW,
                        "Port of the HTTP endpoints; 0 picks a free port.", GROUP_HTTP, 2, ConfigDef.Width.SHORT, "HTTP port")
                .define(HTTP_ADVERTISED_HOST, Type.STRING, null, Importance.MEDIUM,
                        "Host name other instances reach this one's HTTP endpoints at (Kafka Streams application.server, used "
                                + "to answer /fences/{key} for keys another instance owns). Unset: http.host, or this "
                                + "machine's host name when http.host is 0.0.0.0.",
                        GROUP_HTTP, 3, ConfigDef.Width.MEDIUM, "Advertised HTTP host")
                .define(HTTP_AUTH_BASIC_USER, Type.STRING, null, Importance.MEDIUM,
                        "User that /metrics and /fences/{key} ask for with HTTP Basic authentication (RFC 7617), with "
                                + "http.auth.basic.password; the probes /health/* never ask. Every instance of one "
                                + "application.id needs the same pair: an instance sends it when it forwards /fences/{key} to "
                                + "the owner. Basic credentials travel in clear text: on an untrusted network terminate TLS "
                                + "in front of the enforcer (a sidecar or proxy).",
                        GROUP_HTTP, 4, ConfigDef.Width.MEDIUM, "HTTP user")
                .define(HTTP_AUTH_BASIC_PASSWORD, Type.PASSWORD, null, Importance.MEDIUM,
                        "Password of http.auth.basic.user.", GROUP_HTTP, 5, ConfigDef.Width.MEDIUM, "HTTP password");
    }

    /** Token verification against etcd. */
    private static ConfigDef tokenVerification(ConfigDef definition) {
        definition.define(TOKEN_VERIFICATION_ENABLE, Type.BOOLEAN, null, Importance.HIGH,
                "Check the fencing token of every record the decision rule would accept against etcd's history: at "
                        + "revision = token, the key's lock (<etcd.lock.prefix><encoded key>/<fence.lease in hex>) must have "
                        + "been the oldest under the lock and attached to that lease. Forged, future and borrowed tokens are "
                        + "rejected (FUTURE_TOKEN, LOCK_NOT_HELD, MISSING_LEASE, MALFORMED_LEASE, UNVERIFIABLE_TOKEN) instead "
                        + "of blocking the key. A holder's writes at its fence are answered from a cache. Unset: on when "
                        + "etcd.endpoints is set, and refused at start without it. false: any positive fence.token is "
                        + "believed, so one forged or mistaken token blocks a key for good; only for pipelines whose "
                        + "every writer is trusted.",
                GROUP_VERIFICATION, 1, ConfigDef.Width.SHORT, "Verify tokens");
        etcd(definition);
        return definition
                .define(TOKEN_VERIFICATION_COMPACTED_POLICY, Type.STRING, "reject", ConfigDef.ValidString.in("reject", "accept"),
                        Importance.MEDIUM,
                        "What to do with a token whose revision etcd has compacted away (the history to check is gone) and "
                                + "that the index of lock holders (token.verification.index.max) does not hold. "
                                + "reject: reject it UNVERIFIABLE_TOKEN, so nothing raises a fence unverified. accept: one more "
                                + "read, at etcd's current revision: the token raises the fence (counted as "
                                + "fence_enforcer_token_verifications_total{outcome=\"compacted_accepted\"}) only when its "
                                + "lease holds the key's lock now, in a tenure that began at or before the token; otherwise "
                                + "it is rejected UNVERIFIABLE_TOKEN. A holder whose tenure outlived the compaction keeps "
                                + "writing; a revision borrowed from another resource or lease raises nothing.",
                        GROUP_VERIFICATION, 11, ConfigDef.Width.SHORT, "Compacted revisions")
                .define(TOKEN_VERIFICATION_RETRY_BACKOFF_MS, Type.LONG, 100L, ConfigDef.Range.atLeast(1), Importance.LOW,
                        "First wait before asking etcd again when it did not answer, in milliseconds; doubled after each "
                                + "failure up to token.verification.retry.backoff.max.ms. The stream thread waits meanwhile "
                                + "(tokens the index of lock holders holds are decided from it): nothing is accepted "
                                + "unverified.",
                        GROUP_VERIFICATION, 12, ConfigDef.Width.SHORT, "Retry backoff")
                .define(TOKEN_VERIFICATION_RETRY_BACKOFF_MAX_MS, Type.LONG, 5_000L, ConfigDef.Range.atLeast(1), Importance.LOW,
                        "Longest wait between attempts to reach etcd, in milliseconds.", GROUP_VERIFICATION, 13,
                        ConfigDef.Width.SHORT, "Retry backoff max")
                .define(TOKEN_VERIFICATION_CACHE_SIZE, Type.INT, 10_000, ConfigDef.Range.atLeast(0), Importance.LOW,
                        "Verdicts kept in memory, per (key, token, lease), least recently used first out; etcd's answers about "
                                + "the past never change.",
                        GROUP_VERIFICATION, 14, ConfigDef.Width.SHORT, "Verdict cache size")
                .define(TOKEN_VERIFICATION_READ_AHEAD_MAX, Type.INT, 10_000, ConfigDef.Range.atLeast(0), Importance.LOW,
                        "Most etcd reads sent ahead of their decision. The main consumer starts the read of every polled "
                                + "record with a fence.token and a fence.lease whose verdict is not cached, so a poll's reads "
                                + "are in flight together and each decision waits only for its own answer; an answer waits "
                                + "for its decision until newer reads push it out. 0 turns reading ahead off: each decision "
                                + "then waits for one read at a time. The verdicts are the same either way.",
                        GROUP_VERIFICATION, 15, ConfigDef.Width.SHORT, "Read-ahead reads")
                .define(TOKEN_VERIFICATION_INDEX_MAX, Type.INT, 100_000, ConfigDef.Range.atLeast(0), Importance.LOW,
                        "Most ended lock tenures kept in the local index of lock holders. The index starts with the "
                                + "enforcer, at etcd's current revision (a snapshot of etcd.lock.prefix, then a watch from "
                                + "it), and answers a token between its first revision and the last event it has seen "
                                + "without reading etcd; other tokens (a backlog from before the start) are read. The oldest "
                                + "ended tenures are dropped beyond this bound (a few hundred bytes each), raising the first "
                                + "revision answered; the keys alive under the lock names it indexes (up to 256 bytes) are "
                                + "always kept. 0 turns the index off. Verdicts are etcd's either way (see "
                                + "docs/concepts/verified-tokens.md).",
                        GROUP_VERIFICATION, 16, ConfigDef.Width.SHORT, "Lock tenure index size");
    }

    /** Fence expiry: dropping the fences of ended lock tenures. */
    private static ConfigDef expiry(ConfigDef definition) {
        return definition
                .define(FENCE_EXPIRY_ENABLE, Type.BOOLEAN, false, Importance.MEDIUM,
                        "Drop the fences of keys whose lock tenures have all ended, so that the fence store and its "
                                + "changelog hold about one fence per live lock instead of one per key ever written. Every "
                                + "fence.expiry.interval.ms the enforcer reads M, the create revision of the oldest live key "
                                + "under etcd.lock.prefix; once every input record written before that read is decided and "
                                + "committed, each partition raises its floor to M and drops the fences below it. A key "
                                + "without a fence at or above the floor is fenced at the floor: a write whose token is below "
                                + "it is rejected STALE_TOKEN, with the floor as the fence it met. Needs token verification and "
                                + "processing.guarantee=exactly_once_v2; refused at start otherwise. The fence store's RocksDB "
                                + "then runs with small memtables and early full compactions, so that dropped fences free "
                                + "their bytes. Off by default: see docs/concepts/fence-expiry.md for the proof, its "
                                + "assumptions and why.",
                        GROUP_EXPIRY, 1, ConfigDef.Width.SHORT, "Expire fences")
                .define(FENCE_EXPIRY_INTERVAL_MS, Type.LONG, 60_000L, ConfigDef.Range.atLeast(1_000), Importance.LOW,
                        "How often the oldest live lock is read from etcd, in milliseconds; a floor is raised at most "
                                + "this often, after the committed offsets catch up. Each task looks for a new floor every "
                                + "tenth of it (at least every second), which commits an idle task that often.",
                        GROUP_EXPIRY, 2, ConfigDef.Width.SHORT, "Expiry interval")
                .define(FENCE_EXPIRY_BATCH_SIZE, Type.INT, 10_000, ConfigDef.Range.atLeast(1), Importance.LOW,
                        "Keys a task examines per step of its scan for fences below a new floor; a step runs every "
                                + "100 ms on the stream thread, between records, until the store has been scanned.",
                        GROUP_EXPIRY, 3, ConfigDef.Width.SHORT, "Expiry batch size");
    }

    /** What the enforcer adds to etcd-lock's description of a setting. */
    private static final Map<String, String> ETCD_NOTES = Map.of(
            EtcdSettings.ENDPOINTS, " The cluster the writers take their locks from; empty only with "
                    + TOKEN_VERIFICATION_ENABLE + "=false.",
            EtcdSettings.USER, " It needs read access to the lock prefix.",
            EtcdSettings.REQUEST_TIMEOUT_MS, " The enforcer only reads; its default is shorter than producer-lib's, and a"
                    + " read that times out is retried after the backoff.",
            EtcdSettings.LOCK_PREFIX, " It must be the writers' etcd.lock.prefix.");

    /**
     * Where and how the verifier reaches etcd: etcd-lock's {@link EtcdSettings#DEFINITIONS}, the keys and defaults
     * producer-lib reads, but for the endpoints (none: verification may be off) and a 5 s request timeout.
     */
    private static void etcd(ConfigDef definition) {
        int order = 2;
        for (EtcdSettings.Definition etcd : EtcdSettings.DEFINITIONS) {
            String key = etcd.key();
            Object defaultValue = switch (key) {
                case EtcdSettings.ENDPOINTS -> "";
                case EtcdSettings.REQUEST_TIMEOUT_MS -> 5_000L;
                default -> etcd.defaultValue();
            };
            boolean millis = etcd.type() == EtcdSettings.Type.MILLIS;
            Type type = switch (etcd.type()) {
                case LIST -> Type.LIST;
                case PASSWORD -> Type.PASSWORD;
                case MILLIS -> Type.LONG;
                case STRING -> Type.STRING;
            };
            Importance importance = etcd.required() ? Importance.HIGH : millis ? Importance.LOW : Importance.MEDIUM;
            definition.define(key, type, defaultValue, millis ? ConfigDef.Range.atLeast(1) : null, importance,
                    etcd.documentation() + ETCD_NOTES.getOrDefault(key, ""), GROUP_VERIFICATION, order++,
                    millis ? ConfigDef.Width.SHORT : ConfigDef.Width.LONG, etcd.displayName());
        }
    }
}
