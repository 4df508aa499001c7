package dev.fencedwrites.demo;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.schemas.FenceHeaders;
import dev.fencedwrites.schemas.FenceTopics;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code ./fence rejected}: what was fenced, one line per record of the rejected topic.
 */
@Command(name = "fence rejected", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Reads the rejected topic and prints one line per fenced record: when, key, its token.seq, the key's fence that refused it,",
                "the reason, the stage (enforcer or sink), the writer, and where the record came from (topic-partition@offset).", ""},
        footer = {"", "Examples:",
                "  ./fence rejected                       everything rejected so far, then exit",
                "  ./fence rejected --since 15m --follow  the last 15 minutes, then new rejections as they come (Ctrl-C to stop)",
                "  ./fence rejected --json | jq .reason   one JSON object per line, for scripts",
                "", "Reads KAFKA_BOOTSTRAP from .fence/stack.env (written by ./fence up), else .fence/demo.env (written by ./fence demo while it runs),",
                "unless --bootstrap or the environment gives it. With --follow it waits for either file to appear.",
                "Exit status: 0 when done (or stopped with Ctrl-C), 1 with a one-line reason when Kafka or the topic cannot be read."})
public final class RejectedCommand implements Callable<Integer> {
    private static final Pattern DURATION = Pattern.compile("(\\d+)(ms|s|m|h|d)");
    private static final ObjectMapper JSON = new ObjectMapper();

    @Option(names = "--bootstrap", paramLabel = "HOST:PORT", description = "Kafka bootstrap servers (default: KAFKA_BOOTSTRAP from the environment or the env file).")
    String bootstrap;
    @Option(names = "--topic", defaultValue = FenceTopics.REJECTED, description = "The rejected topic (default: ${DEFAULT-VALUE}).")
    String topic;
    @Option(names = "--since", paramLabel = "DURATION", description = "Only records newer than this, e.g. 90s, 15m, 2h, 1d (default: from the beginning).")
    String since;
    @Option(names = {"-f", "--follow"}, description = "Keep reading new records until Ctrl-C.")
    boolean follow;
    @Option(names = "--json", description = "One JSON object per line instead of text.")
    boolean json;
    @Option(names = "--env-file", paramLabel = "FILE",
            description = "Settings of a running stack (default: .fence/stack.env from ./fence up, else .fence/demo.env from ./fence demo).")
    Path envFile;

    @Spec
    CommandSpec spec;

    public static void main(String[] args) {
        System.exit(new CommandLine(new RejectedCommand()).execute(args));
    }

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        try {
            Duration window = since == null ? null : parseDuration(since);
            String servers = bootstrap != null ? bootstrap : setting("KAFKA_BOOTSTRAP");
            read(servers, window, out);
            return 0;
        } catch (IllegalArgumentException | IllegalStateException | KafkaException | IOException e) {
            err.println("fence rejected: " + e.getMessage());
            err.flush();
            return 1;
        }
    }

    private void read(String servers, Duration window, PrintWriter out) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
        props.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        AtomicBoolean stopping = new AtomicBoolean();
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(props, new StringDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> partitions;
            try {
                var infos = consumer.partitionsFor(topic, Duration.ofSeconds(10));
                if (infos == null || infos.isEmpty()) {
                    throw new IllegalStateException("topic " + topic + " does not exist at " + servers);
                }
                partitions = infos.stream().map(p -> new TopicPartition(topic, p.partition())).toList();
            } catch (org.apache.kafka.common.errors.TimeoutException e) {
                throw new IllegalStateException("cannot reach Kafka at " + servers + " within 10 s (is ./fence up running?)");
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            if (window != null) {
                long from = System.currentTimeMillis() - window.toMillis();
                Map<TopicPartition, Long> query = new HashMap<>();
                partitions.forEach(p -> query.put(p, from));
                Map<TopicPartition, OffsetAndTimestamp> found = consumer.offsetsForTimes(query);
                Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
                for (TopicPartition partition : partitions) {
                    OffsetAndTimestamp at = found.get(partition);
                    consumer.seek(partition, at == null ? end.get(partition) : at.offset());
                }
            }
            Thread main = Thread.currentThread();
            Thread onCtrlC = new Thread(() -> {
                stopping.set(true);
                consumer.wakeup();
                try {
                    main.join(5_000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "fence-rejected-stop");
            Runtime.getRuntime().addShutdownHook(onCtrlC);
            try {
                Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
                while (follow || partitions.stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
                    for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                        out.println(json ? json(record) : text(record));
                    }
                    out.flush();
                }
            } catch (WakeupException e) {
                // Ctrl-C while following: done.
            } finally {
                if (!stopping.get()) {
                    Runtime.getRuntime().removeShutdownHook(onCtrlC);
                }
            }
        }
    }

    /** {@code 2026-11-29T14:00:01.123Z  customer-42  token=2.1  highest=4.1  STALE_TOKEN  stage=enforcer  writer=worker-A  source=fenced-writes-0@3} */
    static String text(ConsumerRecord<String, byte[]> record) {
        Map<String, String> f = fields(record);
        String token = f.get("token") == null ? "-" : f.get("token") + (f.get("seq") == null ? "" : "." + f.get("seq"));
        return String.join("  ", f.get("time"), String.valueOf(record.key()), "token=" + token, "highest=" + orDash(f.get("highest")),
                orDash(f.get("reason")), "stage=" + orDash(f.get("stage")), "writer=" + orDash(f.get("writer")),
                "source=" + orDash(f.get("source_topic")) + "-" + orDash(f.get("source_partition")) + "@" + orDash(f.get("source_offset")));
    }

    static String json(ConsumerRecord<String, byte[]> record) {
        Map<String, Object> object = new LinkedHashMap<>(fields(record));
        object.put("key", record.key());
        object.put("value_bytes", record.value() == null ? null : record.value().length);
        try {
            return JSON.writeValueAsString(object);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Map<String, String> fields(ConsumerRecord<String, byte[]> record) {
        Map<String, String> f = new LinkedHashMap<>();
        f.put("time", Instant.ofEpochMilli(record.timestamp()).toString());
        f.put("token", header(record, FenceHeaders.TOKEN));
        f.put("seq", header(record, FenceHeaders.SEQ));
        f.put("highest", blankToNull(header(record, FenceHeaders.REJECTED_HIGHEST)));
        f.put("reason", header(record, FenceHeaders.REJECTED_REASON));
        f.put("stage", header(record, FenceHeaders.REJECTED_STAGE));
        f.put("writer", header(record, FenceHeaders.WRITER));
        f.put("source_topic", header(record, FenceHeaders.SOURCE_TOPIC));
        f.put("source_partition", header(record, FenceHeaders.SOURCE_PARTITION));
        f.put("source_offset", header(record, FenceHeaders.SOURCE_OFFSET));
        return f;
    }

    private static String header(ConsumerRecord<?, ?> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null || header.value() == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    private static String blankToNull(String value) {
        return value == null || value.isBlank() ? null : value;
    }

    private static String orDash(String value) {
        return value == null ? "-" : value;
    }

    /** {@code 90s}, {@code 15m}, {@code 2h}, {@code 1d}, {@code 500ms}. */
    static Duration parseDuration(String text) {
        Matcher m = DURATION.matcher(text.trim());
        if (!m.matches()) {
            throw new IllegalArgumentException("--since '" + text + "' is not a duration like 90s, 15m, 2h or 1d");
        }
        long n = Long.parseLong(m.group(1));
        return switch (m.group(2)) {
            case "ms" -> Duration.ofMillis(n);
            case "s" -> Duration.ofSeconds(n);
            case "m" -> Duration.ofMinutes(n);
            case "h" -> Duration.ofHours(n);
            default -> Duration.ofDays(n);
        };
    }

    /** A setting from the environment, else from the env file ./fence up wrote. */
    private String setting(String name) throws IOException {
        String value = System.getenv(name);
        if (value != null && !value.isBlank()) {
            return value;
        }
        Path file = envFile;
        if (file == null) {
            file = findEnvFile();
            if (file == null && follow) {
                spec.commandLine().getErr().println("[fence rejected] waiting for ./fence up or ./fence demo to start"
                        + " (no .fence/stack.env or .fence/demo.env yet) ...");
                spec.commandLine().getErr().flush();
                while ((file = findEnvFile()) == null) {
                    try {
                        Thread.sleep(1_000);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException("interrupted while waiting for a stack");
                    }
                }
            }
            if (file == null) {
                throw new IllegalStateException("no " + name + ": start the stack with ./fence up (it writes .fence/stack.env), or pass --bootstrap");
            }
        } else if (!Files.isRegularFile(file)) {
            throw new IllegalStateException(file + " does not exist; start the stack with ./fence up, or pass --bootstrap");
        }
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            if (line.startsWith(name + "=")) {
                String raw = line.substring(name.length() + 1);
                if (raw.length() >= 2 && raw.startsWith("'") && raw.endsWith("'")) {
                    raw = raw.substring(1, raw.length() - 1).replace("'\\''", "'");
                }
                return raw;
            }
        }
        throw new IllegalStateException(file + " has no " + name + "; pass --bootstrap");
    }

    private static Path findEnvFile() {
        for (Path candidate : List.of(Path.of(".fence/stack.env"), Path.of(".fence/demo.env"))) {
            if (Files.isRegularFile(candidate)) {
                return candidate;
            }
        }
        return null;
    }
}
