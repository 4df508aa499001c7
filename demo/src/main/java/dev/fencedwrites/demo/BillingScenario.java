package dev.fencedwrites.demo;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.localstack.BillingConnectors;
import dev.fencedwrites.localstack.LocalStack;
import dev.fencedwrites.services.Await;
import dev.fencedwrites.services.ChildProcess;
import dev.fencedwrites.services.Http;
import dev.fencedwrites.services.Jvm;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The billing scenario with real processes: worker A takes the lease for {@value #CUSTOMER},
 * computes, checks its lease and queues its write, and is frozen with SIGSTOP before the write leaves
 * the process, past its TTL; worker B takes the lease with a higher token (its FENCE marker raises
 * the fence) and writes; then A is resumed with SIGCONT and its stale write goes out. Reads back what
 * the enforcer, the sink and the database did.
 */
public final class BillingScenario {
    public static final String CUSTOMER = "customer-42";
    public static final String WORKER_A = "worker-A";
    public static final String WORKER_B = "worker-B";
    private static final Duration STEP_TIMEOUT = Duration.ofSeconds(90);
    private static final Pattern STALE_COUNTER = Pattern.compile(
            "^fence_enforcer_records_fenced_total\\{[^}]*reason=\"STALE_TOKEN\"[^}]*} ([0-9.E+-]+)$",
            Pattern.MULTILINE);

    private final LocalStack stack;
    private final Timeline timeline;
    private final long ttlSeconds;

    /** The scenario on {@code stack}, narrated on {@code timeline}; {@code ttlSeconds} is the workers' lease TTL in seconds. */
    public BillingScenario(LocalStack stack, Timeline timeline, long ttlSeconds) {
        this.stack = stack;
        this.timeline = timeline;
        this.ttlSeconds = ttlSeconds;
    }

    /** Runs the demo's scenario: B writes before A resumes. */
    public ScenarioResult run() throws Exception {
        return run(false);
    }

    /**
     * Runs the scenario once on the stack.
     * @param resumeBeforeBWrites resume A as soon as B holds the lease, while B is still computing:
     *                            then only B's FENCE marker stands between A's write and the row
     */
    ScenarioResult run(boolean resumeBeforeBWrites) throws Exception {
        Path dir = Files.createDirectories(stack.dir().resolve("workers-" + UUID.randomUUID().toString().substring(0, 8)));
        try (ChildProcess a = worker(dir, WORKER_A, 10_000, 4, 500, true)) {
            long tokenA = Long.parseLong(awaitEvent(a, "acquired").get("token"));
            timeline.at(WORKER_A, "acquired the lease for " + CUSTOMER + ": fencing token " + tokenA + " (TTL " + ttlSeconds
                    + " s); its FENCE marker raised the key's fence to " + tokenA);
            Map<String, String> queued = awaitEvent(a, "queued");
            timeline.at(WORKER_A, "computed its summary (100.00 EUR), checked its lease (valid=" + queued.get("lease_valid")
                    + ") and queued the write with token " + tokenA);
            awaitEvent(a, "freezing");
            awaitStopped(a);
            timeline.at("demo",
                    "SIGSTOP " + WORKER_A + " (pid " + a.pid() + ") before the write left the process: a stop-the-world pause;"
                            + " its lease keeps ticking");

            long tokenB;
            try (ChildProcess b = worker(dir, WORKER_B, 12_550, 5, resumeBeforeBWrites ? 8_000 : 300, false)) {
                timeline.at(WORKER_B, "waiting for the lease (etcd grants it once A's lease expires)");
                tokenB = Long.parseLong(awaitEvent(b, "acquired").get("token"));
                timeline.at(WORKER_B, "acquired the lease: fencing token " + tokenB + (tokenB > tokenA ? " > " : " <= ") + tokenA
                        + "; its FENCE marker raised the key's fence to " + tokenB);
                if (resumeBeforeBWrites) {
                    timeline.at(WORKER_B, "is computing: it has written nothing yet");
                    resume(a);
                }
                Map<String, String> sent = awaitEvent(b, "sent");
                timeline.at(WORKER_B, "wrote its summary (125.50 EUR, 5 line items) to partition " + sent.get("partition")
                        + " offset " + sent.get("offset"));
                if (b.waitFor(STEP_TIMEOUT) != 0) {
                    throw new IllegalStateException(WORKER_B + " failed" + b.tail());
                }
            }
            Await.until("B's row in " + BillingConnectors.TABLE, STEP_TIMEOUT, null,
                    () -> row(BillingConnectors.TABLE).map(r -> r.fenceToken() == tokenB).orElse(false));
            timeline.at("sink", BillingConnectors.TABLE + " row " + CUSTOMER + " now holds B's summary, fence " + tokenB);
            if (!resumeBeforeBWrites) {
                resume(a);
            }
            if (a.waitFor(STEP_TIMEOUT) != 0) {
                throw new IllegalStateException(WORKER_A + " failed" + a.tail());
            }

            return outcome(tokenA, tokenB, resumeBeforeBWrites);
        }
    }

    /** What became of A's write: its rejection on the rejected topic, the rows, and the unguarded control's row. */
    private ScenarioResult outcome(long tokenA, long tokenB, boolean resumeBeforeBWrites) throws Exception {
        Optional<ConsumerRecord<String, byte[]>> rejected = findRejected(tokenA);
        String reason = rejected.map(r -> header(r, FenceHeaders.REJECTED_REASON)).orElse(null);
        String stage = rejected.map(r -> header(r, FenceHeaders.REJECTED_STAGE)).orElse(null);
        String highest = rejected.map(r -> header(r, FenceHeaders.REJECTED_HIGHEST)).orElse(null);
        if (rejected.isPresent()) {
            timeline.at(stage,
                    "REJECTED " + WORKER_A + "'s write: " + reason + " (token " + tokenA + " < the key's fence " + highest
                            + ", written token.seq)");
        } else {
            timeline.at("demo", "no rejected record found for " + WORKER_A + "'s write; " + whereWasIt(tokenA));
        }
        SummaryRow unfenced = null;
        if (!resumeBeforeBWrites) {
            try {
                Await.until("A's stale write in " + BillingConnectors.UNFENCED_TABLE, Duration.ofSeconds(30), null,
                        () -> row(BillingConnectors.UNFENCED_TABLE).map(r -> WORKER_A.equals(r.computedBy())).orElse(false));
            } catch (IllegalStateException e) {
                timeline.at("demo", "the unguarded control table did not show A's write: " + e.getMessage());
            }
            unfenced = row(BillingConnectors.UNFENCED_TABLE).orElse(null);
        }
        return new ScenarioResult(tokenA, tokenB, reason, stage, highest, row(BillingConnectors.TABLE).orElse(null), unfenced,
                staleCounter());
    }

    /** SIGCONT for A: its queued write leaves the process. */
    private void resume(ChildProcess a) throws InterruptedException {
        a.signal("CONT");
        timeline.at("demo", "SIGCONT " + WORKER_A + ": it resumes as if nothing happened");
        awaitEvent(a, "resumed");
        awaitEvent(a, "sent");
        timeline.at(WORKER_A, "its stale write (100.00 EUR, with the token from before the pause) reached the broker");
    }

    /** Waits until the kernel reports {@code worker} stopped (state T in /proc/PID/stat). */
    private static void awaitStopped(ChildProcess worker) throws InterruptedException {
        Path stat = Path.of("/proc", Long.toString(worker.pid()), "stat");
        Await.until(worker.name() + " to be stopped by SIGSTOP", STEP_TIMEOUT, null, () -> {
            String line = Files.readString(stat, StandardCharsets.US_ASCII);
            return line.substring(line.lastIndexOf(')') + 2).startsWith("T");
        });
    }

    private ChildProcess worker(Path dir, String name, long amountMinor, int lineItems, long computeMs,
            boolean freezeAfterQueue) {
        List<String> args = new ArrayList<>(
                List.of("--name", name, "--resource", CUSTOMER, "--ttl-seconds", Long.toString(ttlSeconds),
                        "--compute-ms", Long.toString(computeMs), "--amount-minor", Long.toString(amountMinor), "--line-items",
                        Integer.toString(lineItems),
                        "--etcd", stack.etcdEndpoints(), "--bootstrap", stack.kafkaBootstrap(), "--schema-registry",
                        stack.schemaRegistryUrl()));
        if (freezeAfterQueue) {
            args.addAll(List.of("--linger-ms", "60000", "--freeze-after-queue"));
        }
        return ChildProcess.start(name, Jvm.command(List.of("-Xmx256m"), stack.dir().resolve("log4j2.properties"),
                BillingWorker.class.getName(), args), dir, dir.resolve(name + ".log"), Map.of());
    }

    /** Waits for the worker's {@code EVENT <name>} line and returns its key=value fields. */
    private static Map<String, String> awaitEvent(ChildProcess worker, String name) throws InterruptedException {
        String prefix = "EVENT " + name + " ";
        String[] found = new String[1];
        Await.until(worker.name() + " to report '" + name + "'", STEP_TIMEOUT, null, () -> {
            for (String line : Files.readAllLines(worker.log(), StandardCharsets.UTF_8)) {
                if (line.startsWith(prefix)) {
                    found[0] = line.substring(prefix.length());
                    return true;
                }
            }
            if (!worker.isAlive()) {
                throw new Await.GiveUp(worker.name() + " exited before '" + name + "'" + worker.tail());
            }
            return false;
        });
        Map<String, String> fields = new HashMap<>();
        for (String pair : found[0].trim().split(" ")) {
            int eq = pair.indexOf('=');
            if (eq > 0) {
                fields.put(pair.substring(0, eq), pair.substring(eq + 1));
            }
        }
        return fields;
    }

    /** Reads the row for {@value #CUSTOMER}; empty when the table or row does not exist yet. */
    Optional<SummaryRow> row(String table) throws SQLException {
        try (Connection connection = DriverManager.getConnection(stack.postgresUrl());
                PreparedStatement statement = connection.prepareStatement(
                        "SELECT computed_by, amount_minor, line_items, fence_token, fence_seq FROM " + table
                                + " WHERE resource_key = ?")) {
            statement.setString(1, CUSTOMER);
            try (ResultSet rows = statement.executeQuery()) {
                if (!rows.next()) {
                    return Optional.empty();
                }
                long seq = rows.getLong(5);
                Long fenceSeq = rows.wasNull() ? null : seq;
                return Optional.of(new SummaryRow(rows.getString(1), rows.getLong(2), rows.getInt(3), rows.getLong(4), fenceSeq));
            }
        } catch (SQLException e) {
            if ("42P01".equals(e.getSQLState()) || "42703".equals(e.getSQLState())) { // no table, or no data columns yet
                return Optional.empty();
            }
            throw e;
        }
    }

    /**
     * What happened to A's write when it is not on the rejected topic: whether it is on the accepted
     * topic (read committed, a short look), and the enforcer's outcome counters, so a failed run says why.
     */
    private String whereWasIt(long token) {
        StringBuilder found = new StringBuilder();
        try (KafkaConsumer<String, byte[]> consumer = committedConsumer()) {
            consumer.subscribe(List.of(FenceTopics.ACCEPTED, FenceTopics.MARKERS));
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (System.nanoTime() < deadline) {
                for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    if (CUSTOMER.equals(record.key())) {
                        found.append(' ').append(record.topic()).append('@').append(record.offset()).append('=')
                                .append(header(record, FenceHeaders.TOKEN)).append('.').append(header(record, FenceHeaders.SEQ));
                    }
                }
            }
        } catch (RuntimeException e) {
            found.append(" (could not read: ").append(e.getMessage()).append(')');
        }
        String counters;
        try {
            counters = Http.get(stack.enforcerUrl() + "/metrics").body().lines()
                    .filter(line -> (line.startsWith("fence_enforcer_records_fenced_total")
                            || line.startsWith("fence_enforcer_token_verifications_total")
                            || line.startsWith("fence_enforcer_records_accepted_total")
                            || line.startsWith("fence_enforcer_markers_accepted_total"))
                            && !line.endsWith(" 0.0"))
                    .collect(Collectors.joining(", "));
        } catch (IOException | InterruptedException e) {
            counters = "enforcer metrics unavailable: " + e.getMessage();
        }
        return "token " + token + "; " + CUSTOMER + " on the accepted and markers topics:"
                + (found.length() == 0 ? " nothing" : found)
                + "; enforcer counters: " + counters;
    }

    /** A consumer of committed records from the beginning, in a group of its own. */
    private KafkaConsumer<String, byte[]> committedConsumer() {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafkaBootstrap());
        props.put(ConsumerConfig.GROUP_ID_CONFIG, "fence-demo-" + UUID.randomUUID());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        return new KafkaConsumer<>(props, new StringDeserializer(), new ByteArrayDeserializer());
    }

    private Optional<ConsumerRecord<String, byte[]>> findRejected(long token) throws InterruptedException {
        try (KafkaConsumer<String, byte[]> consumer = committedConsumer()) {
            consumer.subscribe(List.of(FenceTopics.REJECTED));
            long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
            while (System.nanoTime() < deadline) {
                for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    if (CUSTOMER.equals(record.key()) && Long.toString(token).equals(header(record, FenceHeaders.TOKEN))) {
                        return Optional.of(record);
                    }
                }
            }
        }
        return Optional.empty();
    }

    private static String header(ConsumerRecord<?, ?> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? null : FenceHeaders.decode(header.value());
    }

    private double staleCounter() throws IOException, InterruptedException {
        Matcher matcher = STALE_COUNTER.matcher(Http.get(stack.enforcerUrl() + "/metrics").body());
        return matcher.find() ? Double.parseDouble(matcher.group(1)) : -1;
    }
}
