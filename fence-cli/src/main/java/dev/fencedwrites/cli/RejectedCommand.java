package dev.fencedwrites.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.contract.RejectionReason;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.connect.runtime.errors.DeadLetterQueueReporter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code fence rejected}: what was fenced, one line per record of the rejected topic.
 */
@Command(name = "rejected", header = "Print what was fenced: one line per record of the rejected topic.", usageHelpWidth = 130,
        mixinStandardHelpOptions = true, versionProvider = BuildVersion.class, sortOptions = false, description = {
                "Reads the rejected topic and prints one line per fenced record: when it was written, key, its token.seq, "
                        + "the key's fence that refused it,",
                "the reason, the stage (enforcer or sink), the writer, where the record came from (topic-partition@offset)",
                "and when the enforcer rejected it (rejected=); for a MALFORMED_VALUE, also the error the sink (or Connect) "
                        + "gave.",
                ""},
        footer = {"", "Examples:",
                "  ./fence rejected                       everything rejected so far, then exit",
                "  ./fence rejected --since 15m --follow  the last 15 minutes, then new rejections as they come (Ctrl-C to stop)",
                "  ./fence rejected --json | jq .reason   one JSON object per line, for scripts",
                "",
                "Reads KAFKA_BOOTSTRAP from .fence/stack.env (written by ./fence up), else .fence/demo.env (written by ./fence "
                        + "demo while it runs),",
                "unless --bootstrap or the environment gives it. With --follow it waits for either file to appear.",
                "Exit status: 0 when done (or stopped with Ctrl-C), 1 with a one-line reason when Kafka or the topic cannot be "
                        + "read."})
public final class RejectedCommand implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Longest error text on a line of the text output; {@code --json} has it whole. */
    static final int ERROR_WIDTH = 300;
    /** Characters of a key shown on a text line; a longer key is cut and its size shown. */
    static final int KEY_WIDTH = 80;

    @Option(names = "--topic", defaultValue = FenceTopics.REJECTED, description = "The rejected topic (default: "
            + "${DEFAULT-VALUE}).")
    String topic;
    @Option(names = "--json", description = "One JSON object per line instead of text.")
    boolean json;

    @Mixin
    ReaderOptions reader;
    @Spec
    CommandSpec spec;
    @ParentCommand
    FenceMain fence;

    @Override
    public Integer call() {
        return reader.print("fence rejected", topic, fence.stack(), spec, err -> record -> json ? json(record) : text(record));
    }

    /**
     * {@code 2026-11-29T14:00:01.123Z  customer-42  token=2.1  highest=4.1  STALE_TOKEN  stage=enforcer  writer=worker-A
     * source=fenced-writes-0@3}, then {@code floor=N} for a rejection below an expiry floor;
     * a record without a {@code fence.rejected.reason} or with {@code MALFORMED_VALUE} ends with {@code error=} and Connect's
     * exception
     * message on one line, at most {@value #ERROR_WIDTH} characters.
     */
    static String text(ConsumerRecord<String, byte[]> record) {
        Map<String, String> f = fields(record);
        String token = f.get("token") == null ? "-" : f.get("token") + (f.get("seq") == null ? "" : "." + f.get("seq"));
        String line = String.join("  ", f.get("time"), keyText(record), "token=" + token, "highest=" + orDash(f.get("highest")),
                orDash(f.get("reason")), "stage=" + orDash(f.get("stage")), "writer=" + orDash(f.get("writer")),
                "source=" + orDash(f.get("source_topic")) + "-" + orDash(f.get("source_partition")) + "@"
                        + orDash(f.get("source_offset")));
        if (f.get("floor") != null) {
            line += "  floor=" + f.get("floor");
        }
        if (f.get("rejected_time") != null) {
            line += "  rejected=" + f.get("rejected_time");
        }
        String omitted = omitted(record);
        if (omitted != null) {
            line += "  omitted=" + omitted;
        }
        String error = f.get("error");
        boolean says = f.get("reason") == null || RejectionReason.MALFORMED_VALUE.name().equals(f.get("reason"));
        if (error == null || !says) {
            return line;
        }
        String oneLine = error.replaceAll("\\s+", " ").strip();
        return line + "  error=" + (oneLine.length() > ERROR_WIDTH ? oneLine.substring(0, ERROR_WIDTH) + "..." : oneLine);
    }

    /**
     * The key for a text line: a key longer than {@value #KEY_WIDTH} characters is cut, with its size;
     * a reference record's omitted key is {@code (key omitted, N bytes)}.
     */
    static String keyText(ConsumerRecord<String, byte[]> record) {
        String key = record.key();
        if (key == null && "true".equals(header(record, FenceHeaders.REJECTED_KEY_OMITTED))) {
            return "(key omitted, " + orDash(header(record, FenceHeaders.SOURCE_KEY_BYTES)) + " bytes)";
        }
        if (key != null && key.length() > KEY_WIDTH) {
            return key.substring(0, KEY_WIDTH) + "...(" + key.getBytes(StandardCharsets.UTF_8).length
                    + " bytes)";
        }
        return String.valueOf(key);
    }

    /** What a reduced rejected copy left out, e.g. {@code value,headers(3),key}; {@code null} when nothing. */
    static String omitted(ConsumerRecord<String, byte[]> record) {
        List<String> parts = new ArrayList<>();
        if ("true".equals(header(record, FenceHeaders.REJECTED_VALUE_OMITTED))) {
            parts.add("value");
        }
        String headers = header(record, FenceHeaders.REJECTED_HEADERS_OMITTED);
        if (headers != null) {
            parts.add("headers(" + headers + ")");
        }
        if ("true".equals(header(record, FenceHeaders.REJECTED_KEY_OMITTED))) {
            parts.add("key");
        }
        return parts.isEmpty() ? null : String.join(",", parts);
    }

    static String json(ConsumerRecord<String, byte[]> record) {
        Map<String, Object> object = new LinkedHashMap<>(fields(record));
        object.put("key", record.key());
        object.put("value_bytes", record.value() == null ? null : record.value().length);
        object.put("omitted", omitted(record));
        object.put("source_key_bytes", header(record, FenceHeaders.SOURCE_KEY_BYTES));
        object.put("source_value_bytes", header(record, FenceHeaders.SOURCE_VALUE_BYTES));
        object.put("source_headers_bytes", header(record, FenceHeaders.SOURCE_HEADERS_BYTES));
        try {
            return JSON.writeValueAsString(object);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Map<String, String> fields(ConsumerRecord<String, byte[]> record) {
        Map<String, String> f = new LinkedHashMap<>();
        // The record's timestamp is the input record's (the enforcer keeps it): when the writer wrote it.
        f.put("time", Instant.ofEpochMilli(record.timestamp()).toString());
        f.put("rejected_time", rejectedTime(header(record, FenceHeaders.REJECTED_TIME)));
        f.put("token", header(record, FenceHeaders.TOKEN));
        f.put("seq", header(record, FenceHeaders.SEQ));
        f.put("highest", blankToNull(header(record, FenceHeaders.REJECTED_HIGHEST)));
        String reason = header(record, FenceHeaders.REJECTED_REASON);
        // Only a STALE_TOKEN rejection is below a floor; an ALREADY_REJECTED copy keeps the floor of its earlier rejection.
        f.put("floor", RejectionReason.STALE_TOKEN.name().equals(reason) ? header(record, FenceHeaders.REJECTED_FLOOR) : null);
        f.put("reason", reason);
        f.put("stage", header(record, FenceHeaders.REJECTED_STAGE));
        f.put("writer", header(record, FenceHeaders.WRITER));
        // A record Connect dead-lettered itself (e.g. a value its converter could not decode) may lack some fence.source.*
        // headers;
        // Connect's own context headers (errors.deadletterqueue.context.headers.enable=true) say the same.
        f.put("source_topic", header(record, FenceHeaders.SOURCE_TOPIC, DeadLetterQueueReporter.ERROR_HEADER_ORIG_TOPIC));
        f.put("source_partition",
                header(record, FenceHeaders.SOURCE_PARTITION, DeadLetterQueueReporter.ERROR_HEADER_ORIG_PARTITION));
        f.put("source_offset", header(record, FenceHeaders.SOURCE_OFFSET, DeadLetterQueueReporter.ERROR_HEADER_ORIG_OFFSET));
        f.put("error", header(record, DeadLetterQueueReporter.ERROR_HEADER_EXCEPTION_MESSAGE));
        return f;
    }

    private static String header(ConsumerRecord<?, ?> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null || header.value() == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    private static String header(ConsumerRecord<?, ?> record, String name, String fallback) {
        String value = header(record, name);
        return value != null ? value : header(record, fallback);
    }

    /** {@code fence.rejected.time} (epoch ms) as ISO-8601; null when absent (the sink's rejections, older enforcers). */
    private static String rejectedTime(String millis) {
        try {
            return millis == null ? null : Instant.ofEpochMilli(Long.parseLong(millis.trim())).toString();
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static String blankToNull(String value) {
        return value == null || value.isBlank() ? null : value;
    }

    private static String orDash(String value) {
        return value == null ? "-" : value;
    }

}
