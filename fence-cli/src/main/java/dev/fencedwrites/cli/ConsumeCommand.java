package dev.fencedwrites.cli;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.fencedwrites.avro.AvroDeserializer;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceTopics;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.Callable;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericContainer;
import org.apache.avro.generic.GenericData;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/** {@code fence consume}: the accepted topic decoded to JSON, one record per line. */
@Command(name = "consume", header = "Print the accepted topic decoded to JSON, one record per line.", usageHelpWidth = 130,
        mixinStandardHelpOptions = true, versionProvider = BuildVersion.class, sortOptions = false, description = {
                "Reads the accepted topic (what the enforcer let through) and prints one JSON object per record:",
                "time, key, partition, offset, its fence token and seq, and the value decoded from Avro (null for a delete).",
                ""},
        footer = {"", "Examples:",
                "  ./fence consume                          everything accepted so far, then exit",
                "  ./fence consume --since 5m --follow      the last 5 minutes, then new records until Ctrl-C",
                "  ./fence consume | jq 'select(.key == \"customer-42\")'",
                "",
                "Reads KAFKA_BOOTSTRAP and SCHEMA_REGISTRY_URL from .fence/stack.env (./fence up), else .fence/demo.env "
                        + "(./fence demo),",
                "unless the options or the environment give them. A value that does not decode is printed with \"value_error\" "
                        + "instead.",
                "Exit status: 0 when done (or stopped with Ctrl-C), 1 with a one-line reason when Kafka or the topic cannot be "
                        + "read."})
public final class ConsumeCommand implements Callable<Integer> {
    // Decimals as written (0.00000001, not 1E-8).
    private static final ObjectMapper JSON = new ObjectMapper().enable(JsonGenerator.Feature.WRITE_BIGDECIMAL_AS_PLAIN);

    @Option(names = "--topic", defaultValue = FenceTopics.ACCEPTED,
            description = "The topic to read (default: ${DEFAULT-VALUE}).")
    String topic;

    @Mixin
    ReaderOptions reader;
    @Spec
    CommandSpec spec;
    @ParentCommand
    FenceMain fence;

    @Override
    public Integer call() {
        return reader.print("fence consume", topic, fence.stack(), spec, err -> {
            String registryUrl = fence.stack().schemaRegistry(reader.follow, err);
            AvroDeserializer<Object> values = new AvroDeserializer<>(
                    new RestSchemaRegistryClient(registryUrl, Duration.ofSeconds(10)), null);
            return record -> json(record, values);
        });
    }

    static String json(ConsumerRecord<String, byte[]> record, AvroDeserializer<Object> values) {
        ObjectNode object = JSON.createObjectNode();
        object.put("time", Instant.ofEpochMilli(record.timestamp()).toString());
        object.put("key", record.key());
        object.put("partition", record.partition());
        object.put("offset", record.offset());
        object.put("token", header(record, FenceHeaders.TOKEN));
        object.put("seq", header(record, FenceHeaders.SEQ));
        if (record.value() == null) {
            object.putNull("value");
        } else {
            try {
                // Logical types as users read them: decimals as numbers, timestamps as ISO-8601 (AvroJson).
                Object decoded = values.deserialize(record.topic(), record.value());
                Schema schema = decoded instanceof GenericContainer container
                        ? container.getSchema()
                        : GenericData.get().induce(decoded);
                object.set("value", AvroJson.of(decoded, schema));
            } catch (RuntimeException e) {
                // SerializationException from the serde, which bounds what a hostile value can cost; whatever it is,
                // this record's line says why and reading goes on.
                object.put("value_error", e.getMessage() == null ? e.toString() : e.getMessage());
            }
        }
        try {
            return JSON.writeValueAsString(object);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot print a JSON tree", e); // a tree of plain nodes always prints
        }
    }

    private static String header(ConsumerRecord<?, ?> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null || header.value() == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }
}
