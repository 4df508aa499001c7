package dev.fencedwrites.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.Redaction;
import dev.fencedwrites.demo.BillingSink;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Arrays;
import java.util.Base64;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code fence inspect KEY}: the key's fence in the enforcer's state store beside its row in the
 * sink's table, and what the difference means.
 */
@Command(name = "inspect", header = "The key's fence in the enforcer's state store beside its row in PostgreSQL.",
        usageHelpWidth = 130, mixinStandardHelpOptions = true, versionProvider = BuildVersion.class, sortOptions = false,
        description = {
                "Shows one key's fence as the enforcer holds it (its state store, asked through GET /fences/KEY on any instance)",
                "beside the key's row in the sink's table (fence_token, fence_seq, deleted, updated_at and the data columns),"
                        + " and says",
                "whether the two are in step.", ""},
        footer = {"", "Examples:",
                "  ./fence inspect customer-42",
                "  ./fence inspect customer-42 --json | jq .enforcer.fence",
                "  ./fence inspect customer-42 --table billing_summary_unfenced",
                "",
                "Reads ENFORCER_URL and POSTGRES_URL from .fence/stack.env (./fence up), else .fence/demo.env (./fence demo),",
                "unless the options or the environment give them.",
                "Exit status: 0 when both sides answered (also when the key has no fence or no row), 1 with a one-line reason",
                "when the enforcer or the database cannot be asked."})
public final class InspectCommand implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern TABLE_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)?");

    @Parameters(index = "0", paramLabel = "KEY", description = "The record key, e.g. customer-42.")
    String key;
    @Option(names = "--table", defaultValue = BillingSink.TABLE, description = "The sink's table (default: "
            + "${DEFAULT-VALUE}).")
    String table;
    @Option(names = "--json", description = "One JSON object instead of text.")
    boolean json;
    @Option(names = "--enforcer", paramLabel = "URL", description = "Any enforcer instance's HTTP address, with "
            + "USER:PASSWORD@ before the host for one with http.auth.basic.* (default: ENFORCER_URL from the environment or the "
            + "env file).")
    String enforcerUrl;
    @Option(names = "--postgres", paramLabel = "JDBC_URL", description = "The sink's database (default: POSTGRES_URL from the "
            + "environment or the env file).")
    String postgresUrl;
    @Spec
    CommandSpec spec;
    @ParentCommand
    FenceMain fence;

    /**
     * The enforcer's answer: its fence for the key ({@code null}: none), the instance that served it, and under fence expiry
     * the floor of the key's partition ({@code null}: none; a key without a higher fence is fenced at it).
     */
    record EnforcerView(Fence fence, String servedBy, Long floor) {
        EnforcerView(Fence fence, String servedBy) {
            this(fence, servedBy, null);
        }
    }

    /** The key's row: its fence ({@code null}: no row), whether it is a delete, and the whole row as JSON. */
    record RowView(Fence fence, boolean deleted, ObjectNode row) {
    }

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        try {
            if (!TABLE_NAME.matcher(table).matches()) {
                throw new IllegalArgumentException("--table '" + table + "' is not a plain table name");
            }
            String enforcer = fence.stack().setting("ENFORCER_URL", "--enforcer", enforcerUrl, false, err);
            String postgres = fence.stack().setting("POSTGRES_URL", "--postgres", postgresUrl, false, err);
            EnforcerView enforced = askEnforcer(enforcer, key);
            RowView stored = readRow(postgres, table, key);
            String verdict = verdict(enforced.fence(), stored.fence(), enforced.floor());
            if (json) {
                ObjectNode object = JSON.createObjectNode();
                object.put("key", key);
                ObjectNode e = object.putObject("enforcer");
                e.put("fence", enforced.fence() == null ? null : enforced.fence().toString());
                e.put("served_by", enforced.servedBy());
                e.put("floor", enforced.floor());
                ObjectNode d = object.putObject("database");
                d.put("table", table);
                d.put("fence", stored.fence() == null ? null : stored.fence().toString());
                d.put("deleted", stored.fence() == null ? null : stored.deleted());
                d.set("row", stored.row());
                object.put("verdict", verdict);
                out.println(object);
            } else {
                out.printf("key              %s%n", key);
                out.printf("enforcer fence   %s%n", enforced.fence() == null
                        ? enforced.floor() == null
                                ? "none (no write or marker accepted for this key)"
                                : "none (no write or marker accepted for this key, or its fence expired)"
                        : enforced.fence() + "   (state store, served by " + enforced.servedBy() + ")");
                if (enforced.floor() != null) {
                    out.printf("enforcer floor   %d   (fence expiry: tokens below it are rejected for this key unless its"
                            + " fence is higher)%n", enforced.floor());
                }
                out.printf("database fence   %s%n", stored.fence() == null
                        ? "none (no row in " + table + ")"
                        : stored.fence() + (stored.deleted() ? "   (deleted)" : "") + "   (table " + table + ")");
                if (stored.row() != null) {
                    out.printf("database row     %s%n", stored.row());
                }
                out.printf("verdict          %s%n", verdict);
            }
            out.flush();
            return 0;
        } catch (IllegalArgumentException | IllegalStateException | IOException | SQLException e) {
            err.println("fence inspect: " + e.getMessage());
            err.flush();
            return 1;
        }
    }

    /** What the enforcer's fence and the row's fence say together; the rule is the enforcer's (token, then seq). */
    static String verdict(Fence enforced, Fence stored) {
        return verdict(enforced, stored, null);
    }

    /**
     * The same, under fence expiry: a key without a fence whose row's token is below the partition's {@code floor}
     * had its fence expired (docs/concepts/fence-expiry.md).
     */
    static String verdict(Fence enforced, Fence stored, Long floor) {
        if (enforced == null && stored != null && floor != null && stored.token() < floor) {
            return "fence expired: the row's token is below the enforcer's floor " + floor + ", so its lock tenure has "
                    + "ended and the enforcer dropped the key's fence; writes below the floor are rejected, and the row "
                    + "keeps its own fence";
        }
        if (enforced == null && stored == null && floor != null) {
            return "no fence and no row: never written, or its fence expired below the enforcer's floor " + floor
                    + " (tokens below it are rejected for this key)";
        }
        if (enforced == null && stored == null) {
            return "unknown key: no fence in the enforcer and no row";
        }
        if (enforced == null) {
            return "the row has a fence the enforcer does not know: it was written around the enforcer, or the enforcer's state "
                    + "was reset";
        }
        if (stored == null) {
            return "no row: the accepted writes are still on their way to the sink, or the sink dead-lettered them (./fence "
                    + "rejected"
                    + " shows them with stage=sink), or only a FENCE marker has been accepted";
        }
        int order = enforced.token() != stored.token()
                ? Long.compare(enforced.token(), stored.token())
                : Long.compare(enforced.seq(), stored.seq());
        if (order == 0) {
            return "in step: the row holds the enforcer's latest accepted write";
        }
        if (order > 0) {
            return "row behind the enforcer: newer accepted writes are on their way to the sink, the sink refused the newest one"
                    + " (./fence rejected lists it with stage=sink), or a FENCE marker (seq 0) raised the fence while the sink"
                    + " lagged";
        }
        return "row AHEAD of the enforcer: a write reached the table around the enforcer, or the enforcer's state was reset";
    }

    static EnforcerView askEnforcer(String baseUrl, String key) throws IOException {
        String raw = baseUrl.endsWith("/") ? baseUrl.substring(0, baseUrl.length() - 1) : baseUrl;
        URI given;
        try {
            given = URI.create(raw);
        } catch (IllegalArgumentException e) {
            // Not the URL itself: it may carry a password.
            throw new IllegalStateException("the enforcer's address (ENFORCER_URL, --enforcer) is not a URL: "
                    + String.valueOf(e.getMessage()).replace(raw, "(the address)"));
        }
        // http://user:password@host:port, as curl takes it, for an enforcer with http.auth.basic.*.
        String userInfo = given.getRawUserInfo();
        String base = userInfo == null ? given.toString() : given.toString().replace(userInfo + "@", "");
        URI uri = URI.create(base + "/fences/" + URLEncoder.encode(key, StandardCharsets.UTF_8).replace("+", "%20"));
        HttpResponse<String> response;
        try {
            HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
            HttpRequest.Builder request = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10));
            if (userInfo != null) {
                request.header("Authorization", "Basic " + Base64.getEncoder()
                        .encodeToString(URLDecoder.decode(userInfo.replace("+", "%2B"), StandardCharsets.UTF_8)
                                .getBytes(StandardCharsets.UTF_8)));
            }
            response = http.send(request.GET().build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new IllegalStateException("cannot reach the enforcer at " + base + " (" + e.getClass().getSimpleName()
                    + (e.getMessage() == null ? "" : ": " + e.getMessage()) + "); is ./fence up running?");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while asking the enforcer");
        }
        if (response.statusCode() == 401) {
            throw new IllegalStateException("the enforcer at " + base + " asks for credentials (its http.auth.basic.user and "
                    + "http.auth.basic.password): give them in the URL, --enforcer http://USER:PASSWORD@host:port");
        }
        JsonNode body;
        try {
            body = JSON.readTree(response.body());
        } catch (IOException e) {
            throw new IllegalStateException(
                    "the enforcer at " + base + " answered HTTP " + response.statusCode() + " with no JSON: " + response.body());
        }
        String servedBy = body.path("served_by").asText(null);
        if (response.statusCode() == 404) {
            // Only the enforcer's own answer means "no fence"; any other 404 means the URL is not an enforcer.
            if (servedBy == null || !key.equals(body.path("key").asText(null))) {
                throw new IllegalStateException(base + " answered HTTP 404 without the enforcer's answer for " + key
                        + "; is it an enforcer's address (ENFORCER_URL, --enforcer)?");
            }
            return new EnforcerView(null, servedBy, floor(body));
        }
        if (response.statusCode() != 200) {
            throw new IllegalStateException(
                    "the enforcer at " + base + " cannot answer for " + key + " now (HTTP " + response.statusCode() + "): "
                            + body.path("error").asText(response.body()));
        }
        JsonNode seq = body.path("seq");
        Fence fence = seq.isNull() || seq.isMissingNode()
                ? Fence.of(body.path("token").asLong())
                : new Fence(body.path("token").asLong(), seq.asLong());
        return new EnforcerView(fence, servedBy, floor(body));
    }

    /** The {@code floor} of an enforcer's answer, or {@code null} when it has none (fence expiry off, or no floor yet). */
    private static Long floor(JsonNode body) {
        JsonNode floor = body.path("floor");
        return floor.isNumber() ? floor.asLong() : null;
    }

    private static RowView readRow(String jdbcUrl, String table, String key) throws SQLException {
        if (!jdbcUrl.startsWith("jdbc:postgresql:")) {
            throw new IllegalArgumentException("'" + withoutPassword(jdbcUrl)
                    + "' is not a PostgreSQL JDBC URL (jdbc:postgresql://HOST:PORT/DB?user=...&password=...)");
        }
        try (Connection connection = DriverManager.getConnection(jdbcUrl);
                PreparedStatement select = connection
                        .prepareStatement("SELECT * FROM " + quoted(table) + " WHERE resource_key = ?")) {
            connection.setReadOnly(true);
            select.setString(1, key);
            try (ResultSet rows = select.executeQuery()) {
                if (!rows.next()) {
                    return new RowView(null, false, null);
                }
                ResultSetMetaData meta = rows.getMetaData();
                ObjectNode row = JSON.createObjectNode();
                for (int i = 1; i <= meta.getColumnCount(); i++) {
                    Object value = rows.getObject(i);
                    if (value instanceof Number || value instanceof Boolean) {
                        // numbers and booleans stay JSON numbers and booleans
                        row.set(meta.getColumnName(i), JSON.valueToTree(value));
                    } else {
                        row.put(meta.getColumnName(i), value == null ? null : value.toString());
                    }
                }
                long token = rows.getLong("fence_token");
                long seq = rows.getLong("fence_seq");
                Fence fence = rows.wasNull() ? Fence.of(token) : new Fence(token, seq);
                return new RowView(fence, rows.getBoolean("deleted"), row);
            }
        } catch (SQLException e) {
            if ("42P01".equals(e.getSQLState())) {
                throw new IllegalStateException("table " + table + " does not exist in " + withoutPassword(jdbcUrl)
                        + " (the sink creates it with its first write; --table names another)");
            }
            if (e.getSQLState() != null && e.getSQLState().startsWith("08")) {
                throw unreachable(jdbcUrl, e);
            }
            throw e;
        }
    }

    /**
     * {@code table} or {@code schema.table} as the sink writes it: each part folded to lower case as
     * PostgreSQL folds an unquoted name, then quoted, so a table named like a keyword ({@code order}) is read too.
     */
    static String quoted(String table) {
        return Arrays.stream(table.split("\\.")).map(part -> '"' + part.toLowerCase(Locale.ROOT) + '"')
                .collect(Collectors.joining("."));
    }

    /**
     * The one-line error for a connection failure (SQLSTATE class 08), with the URL's password redacted also where the
     * driver quotes the URL: DriverManager's "No suitable driver found for jdbc:...?password=...".
     */
    static IllegalStateException unreachable(String jdbcUrl, SQLException e) {
        String reason = String.valueOf(e.getMessage()).replace(jdbcUrl, withoutPassword(jdbcUrl));
        return new IllegalStateException("cannot reach PostgreSQL at " + withoutPassword(jdbcUrl) + ": " + reason
                + "; is PostgreSQL running there (./fence up starts one)?");
    }

    private static String withoutPassword(String jdbcUrl) {
        return Redaction.url(jdbcUrl);
    }
}
