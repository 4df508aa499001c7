package dev.fencedwrites.cli;

import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.demo.BillingSink;
import dev.fencedwrites.history.PipelineVerifier;
import dev.fencedwrites.history.VerifyReport;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.common.KafkaException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code fence verify}: the history checker and production audit of a pipeline; the checks are
 * {@link PipelineVerifier}'s.
 */
@Command(name = "verify",
        header = "Check a pipeline's history: every input decided once, as the rule decides, and the table in step.",
        usageHelpWidth = 130, mixinStandardHelpOptions = true, versionProvider = BuildVersion.class, sortOptions = false,
        description = {
                "Reads the input, accepted, rejected and markers topics (read_committed, from their beginning or --since) and "
                        + "the sink's table,",
                "and checks that:",
                "  - every input record the enforcer has committed past was decided exactly once: accepted, rejected (stage",
                "    enforcer), or absorbed as a winning marker (published on the markers topic);",
                "  - each decision is the decision rule's, replayed over the input log partition by partition (a rejection by",
                "    token verification or a size limit is taken from the enforcer where the rule would accept);",
                "  - per key, the accepted topic's (token, seq) only rises;",
                "  - each row of the table holds the fence and data of its key's winning accepted write (or a winning marker",
                "    above it), deletes included, once the sink has committed past them; a row ahead of the accepted topic",
                "    was written around the enforcer.",
                "Memory grows with the number of keys, not records: a first pass compares fingerprints per key, a second",
                "reads the records of the keys that differ.",
                "It cannot see input records deleted by retention (their decisions are then reported as naming no input",
                "record), nor tell a hand edit from a write by another program: both are rows unlike the accepted topic.",
                ""},
        footer = {"", "Examples:",
                "  ./fence verify",
                "  ./fence verify --json | jq .violations",
                "  ./fence verify --since 24h                  # a nightly audit of the last day",
                "  ./fence verify --bootstrap kafka:9092 --command-config client.properties --no-table",
                "",
                "Reads KAFKA_BOOTSTRAP, SCHEMA_REGISTRY_URL and POSTGRES_URL from .fence/stack.env (./fence up), else"
                        + " .fence/demo.env,",
                "unless the options or the environment give them. Without a PostgreSQL URL the table is not checked.",
                "Exit status: 0 when every check held, 3 when any violation was found, 1 with a one-line reason when the",
                "topics or the table cannot be read."})
public final class VerifyCommand implements Callable<Integer> {
    /** The exit status when any violation was found. */
    public static final int VIOLATIONS = 3;

    @Option(names = "--input-topic", defaultValue = FenceTopics.INPUT, description = "Default: ${DEFAULT-VALUE}.")
    String input;
    @Option(names = "--accepted-topic", defaultValue = FenceTopics.ACCEPTED, description = "Default: ${DEFAULT-VALUE}.")
    String accepted;
    @Option(names = "--rejected-topic", defaultValue = FenceTopics.REJECTED, description = "Default: ${DEFAULT-VALUE}.")
    String rejected;
    @Option(names = "--markers-topic", defaultValue = FenceTopics.MARKERS, description = "Default: ${DEFAULT-VALUE}; "
            + "when it does not exist, winning markers are not checked.")
    String markers;
    @Option(names = "--application-id", defaultValue = "fence-enforcer", description = "The enforcer's application.id: "
            + "its committed input offsets say which records it has decided (default: ${DEFAULT-VALUE}).")
    String applicationId;
    @Option(names = "--partition-mismatch-policy", defaultValue = "reroute", paramLabel = "reroute|reject",
            description = "The enforcer's partition.mismatch.policy (default: ${DEFAULT-VALUE}).")
    String mismatch;
    @Option(names = "--processing-guarantee", defaultValue = "exactly_once_v2", paramLabel = "exactly_once_v2|at_least_once",
            description = "The enforcer's processing.guarantee. Under at_least_once a decision may be written more than once "
                    + "(the records after a crashed instance's last commit are decided again): only the first copy of each is "
                    + "checked, and the others are counted (default: ${DEFAULT-VALUE}).")
    String guarantee;
    @Option(names = "--table", defaultValue = BillingSink.TABLE,
            description = "The sink's table (default: ${DEFAULT-VALUE}).")
    String table;
    @Option(names = "--no-table", description = "Check only the topics.")
    boolean noTable;
    @Option(names = "--connector", defaultValue = BillingSink.CONNECTOR, description = "The sink connector's name: "
            + "its consumer group connect-NAME says how far it has written the table (default: ${DEFAULT-VALUE}).")
    String connector;
    @Option(names = "--postgres", paramLabel = "JDBC_URL", description = "The sink's database (default: POSTGRES_URL from "
            + "the environment or the env file).")
    String postgresUrl;
    @Option(names = "--since", paramLabel = "TIME", description = "Check the input records from this time on: a duration "
            + "ago (90s, 15m, 2h, 1d) or an ISO-8601 time (2026-12-02T18:00:00Z). Each key's fence where the window starts "
            + "comes from the accepted records and winning markers before it, which are read but not checked; the input "
            + "records before it are not read (default: the whole history).")
    String since;
    @Option(names = "--json", description = "One JSON object instead of the table.")
    boolean json;
    @Spec
    CommandSpec spec;
    @ParentCommand
    FenceMain fence;

    @Override
    public Integer call() throws InterruptedException {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (!mismatch.equals("reroute") && !mismatch.equals("reject")) {
            throw new ParameterException(spec.commandLine(),
                    "--partition-mismatch-policy must be reroute or reject, not '" + mismatch + "'");
        }
        if (!guarantee.equals("exactly_once_v2") && !guarantee.equals("at_least_once")) {
            throw new ParameterException(spec.commandLine(),
                    "--processing-guarantee must be exactly_once_v2 or at_least_once, not '" + guarantee + "'");
        }
        Instant from = since == null ? null : since(since);
        if (noTable && spec.commandLine().getParseResult().hasMatchedOption("--table")) {
            throw new ParameterException(spec.commandLine(), "--table and --no-table together: give one of them");
        }
        KafkaRefusal.quietClientLogs();
        StackOptions stack = fence.stack();
        try {
            Map<String, Object> client = new HashMap<>(stack.kafkaClient());
            client.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, stack.bootstrap(false, err));
            String jdbcUrl = noTable ? null : postgres(stack, err);
            PipelineVerifier.Options options = new PipelineVerifier.Options(input, accepted, rejected, markers, applicationId,
                    mismatch.equals("reroute"), "connect-" + connector, jdbcUrl == null ? null : table, from)
                    .atLeastOnce(guarantee.equals("at_least_once"));
            PipelineVerifier.Result result;
            try (Connection connection = jdbcUrl == null ? null : DriverManager.getConnection(jdbcUrl)) {
                PipelineVerifier.Database database = null;
                if (connection != null) {
                    database = PipelineVerifier.Database.withRegistry(connection, stack.schemaRegistry(false, err));
                }
                result = PipelineVerifier.run(client, options, database, err);
            } catch (SQLException e) {
                if (e.getSQLState() != null && e.getSQLState().startsWith("08")) {
                    throw InspectCommand.unreachable(jdbcUrl, e);
                }
                throw new IllegalStateException("cannot read table " + table + ": " + e.getMessage(), e);
            }
            if (json) {
                out.println(VerifyReport.json(result));
                out.flush();
            } else {
                out.println("Checked as an enforcer under processing.guarantee=" + guarantee
                        + (guarantee.equals("at_least_once") ? " (a decision written twice to the same topic counts once)" : ""));
                VerifyReport.text(result, out);
            }
            return result.violations() == 0 ? 0 : VIOLATIONS;
        } catch (IllegalArgumentException | IllegalStateException | KafkaException | IOException e) {
            String refusal = KafkaRefusal.describe(e, stack.kafkaClientForErrors());
            err.println("fence verify: " + (refusal != null ? refusal : e.getMessage()) + (e.toString().contains("Timeout")
                    ? " (is Kafka at " + bootstrapForErrors(stack) + " reachable?)"
                    : ""));
            err.flush();
            return 1;
        }
    }

    private static String bootstrapForErrors(StackOptions stack) {
        try {
            return stack.bootstrap(false, new PrintWriter(Writer.nullWriter()));
        } catch (IOException | IllegalStateException e) {
            return "the bootstrap address";
        }
    }

    /** {@code --since}'s time: a duration ago, or an ISO-8601 time with its offset. */
    private Instant since(String text) {
        Optional<Duration> ago = DurationConverter.parse(text);
        if (ago.isPresent()) {
            return Instant.now().minus(ago.get());
        }
        try {
            return OffsetDateTime.parse(text.trim()).toInstant();
        } catch (DateTimeParseException e) {
            throw new ParameterException(spec.commandLine(), "--since '" + text + "' is neither a duration like 90s, 15m, "
                    + "2h or 1d nor an ISO-8601 time like 2026-12-02T18:00:00Z", e);
        }
    }

    /** {@code --postgres}, else {@code POSTGRES_URL}, else {@code null} (the table is then not checked). */
    private String postgres(StackOptions stack, PrintWriter err) throws IOException {
        if (postgresUrl != null) {
            return postgresUrl;
        }
        try {
            return stack.setting("POSTGRES_URL", "--postgres", null, false, err);
        } catch (IllegalStateException e) {
            err.println("[verify] no PostgreSQL URL (--postgres, POSTGRES_URL): the table is not checked");
            return null;
        }
    }
}
