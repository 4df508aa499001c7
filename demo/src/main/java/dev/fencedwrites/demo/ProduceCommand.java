package dev.fencedwrites.demo;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fencedwrites.producer.FencedProducer;
import dev.fencedwrites.producer.FencingLease;
import dev.fencedwrites.producer.FencingLeaseClient;
import dev.fencedwrites.producer.LeaseAcquisitionException;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.YearMonth;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import org.apache.avro.Schema;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code ./fence produce KEY}: publishes {@code BillingSummary} writes under an etcd lease with
 * producer-lib, exactly as a worker does, and reports what the enforcer decided for each.
 */
@Command(name = "fence produce", usageHelpWidth = 130, mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Takes the lease on KEY in etcd (its revision is the fencing token), publishes the FENCE marker and then",
                "one or more BillingSummary writes to the input topic with the token and seq on every record, releases the lease,",
                "and waits for the enforcer's decision on each write: accepted (with where it landed) or rejected (with the reason).", ""},
        footer = {"", "Examples:",
                "  ./fence produce customer-42 --amount 1999                    one write: 19.99 EUR",
                "  ./fence produce customer-42 --value '{\"amountMinor\": 1999, \"lineItems\": 3}'",
                "  ./fence produce customer-42 --amount 500 --count 3           writes seq 1, 2, 3 under one lease",
                "  ./fence produce customer-42 --delete                         a delete (null value) under the lease",
                "", "--value takes the fields of BillingSummary as ./fence consume prints them; fields left out get defaults:",
                "customerId = KEY, billingPeriod = this month (UTC), currency = EUR, lineItems = 1, computedAt = now,",
                "computedBy = --writer. amountMinor is required (or --amount).",
                "Reads KAFKA_BOOTSTRAP, ETCD_ENDPOINTS and SCHEMA_REGISTRY_URL from .fence/stack.env (./fence up), else .fence/demo.env",
                "(./fence demo), unless the options or the environment give them.",
                "Exit status: 0 when every write was accepted, 3 when the enforcer rejected any (each is printed with its reason),",
                "1 with a one-line reason when a service cannot be reached, the lease cannot be had, or the value is invalid."})
public final class ProduceCommand implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Parameters(index = "0", paramLabel = "KEY", description = "The record key, also the lease's resource, e.g. customer-42.")
    String key;
    @Option(names = "--amount", paramLabel = "MINOR", description = "amountMinor of the summary, in cents.")
    Long amount;
    @Option(names = "--value", paramLabel = "JSON", description = "The summary as a JSON object (see below); --amount overrides its amountMinor.")
    String value;
    @Option(names = "--delete", description = "Publish a delete (null value) instead of a summary.")
    boolean delete;
    @Option(names = "--count", defaultValue = "1", description = "Writes to publish under the one lease, seq 1..N (default: ${DEFAULT-VALUE}).")
    int count;
    @Option(names = "--ttl", defaultValue = "10s", paramLabel = "DURATION", description = "The lease's TTL, e.g. 10s, 1m (default: ${DEFAULT-VALUE}).")
    String ttl;
    @Option(names = "--writer", defaultValue = "fence-produce", description = "Writer id in the fence.writer header and computedBy (default: ${DEFAULT-VALUE}).")
    String writer;
    @Option(names = "--wait", defaultValue = "30s", paramLabel = "DURATION",
            description = "How long to wait for the enforcer's decisions; 0s does not wait (default: ${DEFAULT-VALUE}).")
    String wait;
    @Option(names = "--bootstrap", paramLabel = "HOST:PORT", description = "Kafka bootstrap servers (default: KAFKA_BOOTSTRAP from the environment or the env file).")
    String bootstrap;
    @Option(names = "--etcd", paramLabel = "URLS", description = "etcd endpoints, comma-separated (default: ETCD_ENDPOINTS from the environment or the env file).")
    String etcd;
    @Option(names = "--schema-registry", paramLabel = "URL", description = "Schema registry URL (default: SCHEMA_REGISTRY_URL from the environment or the env file).")
    String registry;
    @picocli.CommandLine.Mixin
    EnvFileOption env;
    @Spec
    CommandSpec spec;

    /** One published write: its fence and where the input topic took it. */
    private record Sent(long token, long seq, RecordMetadata where) {
    }

    public static void main(String[] args) {
        System.exit(Cli.commandLine("fence produce", new ProduceCommand()).execute(args));
    }

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        try {
            if (count < 1) {
                throw new IllegalArgumentException("--count must be at least 1");
            }
            if (delete == (amount != null || value != null)) {
                throw new IllegalArgumentException(delete ? "--delete takes no --amount or --value" : "give --amount MINOR or --value JSON (or --delete)");
            }
            Duration leaseTtl = TopicReader.parseDuration("--ttl", ttl);
            Duration decisionWait = TopicReader.parseDuration("--wait", wait);
            BillingSummary summary = delete ? null : summary(key, value, amount, writer, Instant.now());
            String servers = setting("KAFKA_BOOTSTRAP", "--bootstrap", bootstrap, err);
            String endpoints = setting("ETCD_ENDPOINTS", "--etcd", etcd, err);
            String registryUrl = setting("SCHEMA_REGISTRY_URL", "--schema-registry", registry, err);

            Map<TopicPartition, Long> from;
            try (KafkaConsumer<String, byte[]> decisions = decisionConsumer(servers)) {
                from = decisionWait.isZero() ? Map.of() : endOffsets(decisions, servers);
                List<Sent> sent = publish(servers, endpoints, registryUrl, summary, leaseTtl, out);
                if (decisionWait.isZero()) {
                    return 0;
                }
                return awaitDecisions(decisions, from, sent, decisionWait, out);
            }
        } catch (IllegalArgumentException | IllegalStateException | IOException | KafkaException | LeaseAcquisitionException e) {
            String cause = e.getCause() == null || e.getCause().getMessage() == null || e.getMessage().contains(e.getCause().getMessage())
                    ? "" : ": " + e.getCause().getMessage();
            err.println("fence produce: " + e.getMessage() + cause);
            err.flush();
            return 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("fence produce: interrupted");
            err.flush();
            return 1;
        }
    }

    private List<Sent> publish(String servers, String endpoints, String registryUrl, BillingSummary summary, Duration leaseTtl, PrintWriter out)
            throws LeaseAcquisitionException, InterruptedException {
        Map<String, Object> kafka = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, servers, ProducerConfig.CLIENT_ID_CONFIG, writer,
                ProducerConfig.MAX_BLOCK_MS_CONFIG, 15_000);
        List<Sent> sent = new ArrayList<>();
        AvroSerializer<BillingSummary> values = new AvroSerializer<>(new RestSchemaRegistryClient(registryUrl, Duration.ofSeconds(10)), false);
        if (summary != null) {
            // Register the schema before taking the lease: a registry problem then fails here, before
            // the marker raises the key's fence with no write behind it (and never under the lease).
            try {
                values.serialize(FenceTopics.INPUT, summary);
            } catch (SerializationException e) {
                throw new IllegalStateException(e.getMessage(), e);
            }
        }
        try (FencingLeaseClient leases = new FencingLeaseClient(List.of(endpoints.split(",")), FencingLeaseClient.DEFAULT_LOCK_PREFIX);
             FencedProducer<BillingSummary> producer = FencedProducer.create(kafka, values, FenceTopics.INPUT, writer)) {
            try (FencingLease lease = producer.acquire(leases, key, leaseTtl, Duration.ofSeconds(30))) {
                out.printf("lease    %s  token=%d  ttl=%ds  (FENCE marker published: it raises the key's fence to %d.0 unless the fence is already higher)%n",
                        key, lease.token(), leaseTtl.toSeconds(), lease.token());
                for (long seq = 1; seq <= count; seq++) {
                    RecordMetadata where = producer.sendAndWait(lease, summary);
                    out.printf("sent     %s  token=%d.%d  -> %s-%d@%d%n", key, lease.token(), seq, where.topic(), where.partition(), where.offset());
                    out.flush();
                    sent.add(new Sent(lease.token(), seq, where));
                }
                return sent;
            }
        }
    }

    /**
     * Reads the accepted and rejected topics from where they ended before the writes, until each
     * write (key, token, seq) shows up in one of them or {@code timeout} passes.
     *
     * @return 0 if all were accepted, 3 if any was rejected
     * @throws IllegalStateException if a decision did not arrive in time
     */
    private int awaitDecisions(KafkaConsumer<String, byte[]> consumer, Map<TopicPartition, Long> from, List<Sent> sent, Duration timeout,
                               PrintWriter out) {
        consumer.assign(from.keySet());
        from.forEach(consumer::seek);
        long token = sent.get(0).token();
        List<Long> pending = new ArrayList<>(sent.stream().map(Sent::seq).toList());
        boolean anyRejected = false;
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!pending.isEmpty() && System.nanoTime() < deadline) {
            for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(250))) {
                if (!key.equals(record.key()) || !Long.toString(token).equals(header(record, FenceHeaders.TOKEN))) {
                    continue;
                }
                String seqText = header(record, FenceHeaders.SEQ);
                Long seq = seqText == null ? null : Long.valueOf(seqText);
                if (seq == null || !pending.remove(seq)) {
                    continue;
                }
                if (FenceTopics.ACCEPTED.equals(record.topic())) {
                    out.printf("accepted %s  token=%d.%d  -> %s-%d@%d%n", key, token, seq, record.topic(), record.partition(), record.offset());
                } else {
                    anyRejected = true;
                    out.printf("rejected %s  token=%d.%d  %s  highest=%s  stage=%s%n", key, token, seq, header(record, FenceHeaders.REJECTED_REASON),
                            header(record, FenceHeaders.REJECTED_HIGHEST), header(record, FenceHeaders.REJECTED_STAGE));
                }
                out.flush();
            }
        }
        if (!pending.isEmpty()) {
            throw new IllegalStateException("no decision from the enforcer within " + wait + " for seq " + pending
                    + " (is the enforcer running? ./fence up starts one; --wait 0s does not wait)");
        }
        return anyRejected ? 3 : 0;
    }

    /**
     * The summary to publish: {@code json}'s fields over the defaults, then {@code amount}.
     *
     * @throws IllegalArgumentException naming the field when the JSON is not an object of BillingSummary's fields and types
     */
    static BillingSummary summary(String key, String json, Long amount, String writer, Instant now) {
        BillingSummary.Builder builder = BillingSummary.newBuilder().setCustomerId(key)
                .setBillingPeriod(YearMonth.now(ZoneOffset.UTC).toString()).setCurrency("EUR").setLineItems(1)
                .setComputedAt(now).setComputedBy(writer);
        boolean hasAmount = amount != null;
        if (json != null) {
            JsonNode object;
            try {
                object = JSON.readTree(json);
            } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                throw new IllegalArgumentException("--value is not JSON: " + e.getOriginalMessage());
            }
            if (object == null || !object.isObject()) {
                throw new IllegalArgumentException("--value must be a JSON object of BillingSummary fields, e.g. {\"amountMinor\": 1999}");
            }
            Schema schema = BillingSummary.getClassSchema();
            for (Iterator<Map.Entry<String, JsonNode>> fields = object.fields(); fields.hasNext(); ) {
                Map.Entry<String, JsonNode> field = fields.next();
                String name = field.getKey();
                JsonNode node = field.getValue();
                if (schema.getField(name) == null) {
                    throw new IllegalArgumentException("--value has unknown field '" + name + "'; BillingSummary has "
                            + schema.getFields().stream().map(Schema.Field::name).toList());
                }
                switch (name) {
                    case "customerId" -> builder.setCustomerId(text(name, node));
                    case "billingPeriod" -> builder.setBillingPeriod(text(name, node));
                    case "currency" -> builder.setCurrency(text(name, node));
                    case "computedBy" -> builder.setComputedBy(text(name, node));
                    case "amountMinor" -> {
                        builder.setAmountMinor(integral(name, node, Long.MIN_VALUE, Long.MAX_VALUE));
                        hasAmount = true;
                    }
                    case "lineItems" -> builder.setLineItems((int) integral(name, node, Integer.MIN_VALUE, Integer.MAX_VALUE));
                    case "computedAt" -> builder.setComputedAt(instant(name, node));
                    default -> throw new IllegalArgumentException("--value field '" + name + "' cannot be set from the command line");
                }
            }
        }
        if (amount != null) {
            builder.setAmountMinor(amount);
        }
        if (!hasAmount) {
            throw new IllegalArgumentException("amountMinor is required: give --amount MINOR or \"amountMinor\" in --value");
        }
        return builder.build();
    }

    private static String text(String name, JsonNode node) {
        if (!node.isTextual()) {
            throw new IllegalArgumentException("--value field '" + name + "' must be a string, got " + node);
        }
        return node.asText();
    }

    private static long integral(String name, JsonNode node, long min, long max) {
        if (!node.isIntegralNumber() || !node.canConvertToLong() || node.asLong() < min || node.asLong() > max) {
            throw new IllegalArgumentException("--value field '" + name + "' must be a whole number in [" + min + ", " + max + "], got " + node);
        }
        return node.asLong();
    }

    /** Epoch milliseconds (as {@code ./fence consume} prints it) or an ISO-8601 instant. */
    private static Instant instant(String name, JsonNode node) {
        if (node.isIntegralNumber() && node.canConvertToLong()) {
            return Instant.ofEpochMilli(node.asLong());
        }
        if (node.isTextual()) {
            try {
                return Instant.parse(node.asText());
            } catch (DateTimeParseException e) {
                // falls through to the error below
            }
        }
        throw new IllegalArgumentException("--value field '" + name + "' must be epoch milliseconds or an ISO-8601 instant like 2026-11-30T12:00:00Z, got " + node);
    }

    private String setting(String name, String option, String explicit, PrintWriter err) throws IOException {
        return env.setting(name, option, explicit, false, err);
    }

    private static KafkaConsumer<String, byte[]> decisionConsumer(String servers) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
        props.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        return new KafkaConsumer<>(props, new StringDeserializer(), new ByteArrayDeserializer());
    }

    /** Where the accepted and rejected topics end now: decisions on the writes about to be sent come after. */
    private static Map<TopicPartition, Long> endOffsets(KafkaConsumer<String, byte[]> consumer, String servers) {
        List<TopicPartition> partitions = new ArrayList<>();
        for (String topic : List.of(FenceTopics.ACCEPTED, FenceTopics.REJECTED)) {
            try {
                var infos = consumer.partitionsFor(topic, Duration.ofSeconds(10));
                if (infos == null || infos.isEmpty()) {
                    throw new IllegalStateException("topic " + topic + " does not exist at " + servers);
                }
                infos.forEach(p -> partitions.add(new TopicPartition(topic, p.partition())));
            } catch (org.apache.kafka.common.errors.TimeoutException e) {
                throw new IllegalStateException("cannot reach Kafka at " + servers + " within 10 s (is ./fence up running?)");
            }
        }
        return consumer.endOffsets(partitions);
    }

    private static String header(ConsumerRecord<?, ?> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null || header.value() == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }
}
