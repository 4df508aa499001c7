package dev.fencedwrites.cli;

import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.cli.Decisions.Sent;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.producer.FencedProducer;
import dev.fencedwrites.producer.FencingLease;
import dev.fencedwrites.producer.FencingLeaseClient;
import dev.fencedwrites.producer.LeaseAcquisitionException;
import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SerializationException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code fence produce KEY}: publishes {@code BillingSummary} writes under an etcd lease with
 * producer-lib, exactly as a worker does, and reports what the enforcer decided for each.
 */
@Command(name = "produce",
        header = "Write under KEY's lease, as a worker does, and print the enforcer's decision on each write.",
        usageHelpWidth = 130, mixinStandardHelpOptions = true, versionProvider = BuildVersion.class,
        sortOptions = false, description = {
                "Takes the lease on KEY in etcd (its revision is the fencing token), publishes the FENCE marker "
                        + "and then",
                "one or more BillingSummary writes to the input topic with the token and seq on every record, "
                        + "releases the lease,",
                "and waits for the enforcer's decision on each write: accepted (with where it landed) or rejected "
                        + "(with the reason).",
                ""},
        footer = {"", "Examples:",
                "  ./fence produce customer-42 --amount 1999                    one write: 19.99 EUR",
                "  ./fence produce customer-42 --value '{\"amountMinor\": 1999, \"lineItems\": 3}'",
                "  ./fence produce customer-42 --amount 500 --count 3           writes seq 1, 2, 3 under one lease",
                "  ./fence produce customer-42 --delete                         a delete (null value) under the lease",
                "", "--value takes the fields of BillingSummary as ./fence consume prints them; fields left out get defaults:",
                "customerId = KEY, billingPeriod = this month (UTC), currency = EUR, lineItems = 1, computedAt = now,",
                "computedBy = --writer. amountMinor is required (or --amount).",
                "Reads KAFKA_BOOTSTRAP, ETCD_ENDPOINTS and SCHEMA_REGISTRY_URL from .fence/stack.env (./fence up), else "
                        + ".fence/demo.env",
                "(./fence demo), unless the options or the environment give them.",
                "Exit status: 0 when every write was accepted, 3 when the enforcer rejected any (each is printed with its "
                        + "reason),",
                "1 with a one-line reason when a service cannot be reached, the lease cannot be had, or the value is invalid."})
public final class ProduceCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "KEY", description = "The record key, also the lease's resource, e.g. customer-42.")
    String key;
    @Option(names = "--amount", paramLabel = "MINOR", description = "amountMinor of the summary, in cents.")
    Long amount;
    @Option(names = "--value", paramLabel = "JSON", description = "The summary as a JSON object (see below); --amount overrides "
            + "its amountMinor.")
    String value;
    @Option(names = "--delete", description = "Publish a delete (null value) instead of a summary.")
    boolean delete;
    @Option(names = "--count", defaultValue = "1", description = "Writes to publish under the one lease, seq 1..N (default: "
            + "${DEFAULT-VALUE}).")
    int count;
    @Option(names = "--ttl", defaultValue = "10s", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "The lease's TTL, e.g. 10s, 1m; at least 1s, a fraction of a second rounded up, as etcd grants "
                    + "whole seconds "
                    + "(default: ${DEFAULT-VALUE}).")
    Duration ttl;
    @Option(names = "--writer", defaultValue = "fence-produce", description = "Writer id in the fence.writer header and "
            + "computedBy (default: ${DEFAULT-VALUE}).")
    String writer;
    @Option(names = "--wait", defaultValue = "30s", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "How long to wait for the enforcer's "
                    + "decisions; 0s does not wait (default: ${DEFAULT-VALUE}).")
    Duration wait;
    @Spec
    CommandSpec spec;
    @ParentCommand
    FenceMain fence;

    /**
     * Checks the options picocli cannot: {@code --count} at least 1, {@code --ttl} at least 1s, one of {@code --amount},
     * {@code --value} or {@code --delete}.
     *
     * @throws ParameterException a usage error, so it exits 2 like picocli's own
     */
    private void checkUsage() {
        try {
            if (count < 1) {
                throw new IllegalArgumentException("--count must be at least 1, got " + count);
            }
            DurationConverter.leaseTtl("--ttl", ttl);
            if (delete == (amount != null || value != null)) {
                throw new IllegalArgumentException(
                        delete ? "--delete takes no --amount or --value" : "give --amount MINOR or --value JSON (or --delete)");
            }
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage(), e);
        }
    }

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        KafkaRefusal.quietClientLogs();
        checkUsage();
        try {
            BillingSummary summary = delete ? null : SummaryJson.summary(key, value, amount, writer, Instant.now());
            StackOptions stack = fence.stack();
            String servers = stack.bootstrap(false, err);
            String endpoints = stack.etcd(err);
            String registryUrl = stack.schemaRegistry(false, err);

            try (Decisions decisions = new Decisions(servers, stack.kafkaClient())) {
                Map<TopicPartition, Long> from = wait.isZero() ? Map.of() : decisions.endOffsets();
                List<Sent> sent = publish(servers, stack.kafkaClient(), endpoints, registryUrl, summary, ttl, out);
                if (wait.isZero()) {
                    return 0;
                }
                return decisions.await(key, from, sent, wait, DurationConverter.format(wait), out);
            }
        } catch (IllegalArgumentException | IllegalStateException | IOException | KafkaException | LeaseAcquisitionException e) {
            String cause = e.getCause() == null || e.getCause().getMessage() == null
                    || e.getMessage().contains(e.getCause().getMessage())
                            ? ""
                            : ": " + e.getCause().getMessage();
            String refusal = KafkaRefusal.describe(e, fence.stack().kafkaClientForErrors());
            err.println("fence produce: " + (refusal != null ? refusal : e.getMessage() + cause));
            err.flush();
            return 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("fence produce: interrupted");
            err.flush();
            return 1;
        }
    }

    private List<Sent> publish(String servers, Map<String, Object> client, String endpoints, String registryUrl,
            BillingSummary summary, Duration leaseTtl, PrintWriter out)
            throws LeaseAcquisitionException, InterruptedException {
        Map<String, Object> kafka = new HashMap<>(client);
        kafka.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
        kafka.putIfAbsent(ProducerConfig.CLIENT_ID_CONFIG, writer);
        kafka.putIfAbsent(ProducerConfig.MAX_BLOCK_MS_CONFIG, 15_000);
        List<Sent> sent = new ArrayList<>();
        AvroSerializer<BillingSummary> values = AvroSerializer
                .forValues(new RestSchemaRegistryClient(registryUrl, Duration.ofSeconds(10)));
        if (summary != null) {
            // Register the schema before taking the lease: a registry problem then fails here, before
            // the marker raises the key's fence with no write behind it (and never under the lease).
            try {
                values.serialize(FenceTopics.INPUT, summary);
            } catch (SerializationException e) {
                throw new IllegalStateException(e.getMessage(), e);
            }
        }
        try (FencingLeaseClient leases = new FencingLeaseClient(List.of(endpoints.split(",")),
                FencingLeaseClient.DEFAULT_LOCK_PREFIX);
                FencedProducer<BillingSummary> producer = FencedProducer.create(kafka, values, FenceTopics.INPUT, writer)) {
            try (FencingLease lease = producer.acquire(leases, key, leaseTtl, Duration.ofSeconds(30))) {
                out.printf(
                        "lease    %s  token=%d  ttl=%ds  (FENCE marker published: it raises the key's fence to %d.0 unless the "
                                + "fence is already higher)%n",
                        key, lease.token(), lease.ttl().toSeconds(), lease.token());
                for (long seq = 1; seq <= count; seq++) {
                    RecordMetadata where = producer.sendAndWait(lease, summary);
                    out.printf("sent     %s  token=%d.%d  -> %s-%d@%d%n", key, lease.token(), seq, where.topic(),
                            where.partition(), where.offset());
                    out.flush();
                    sent.add(new Sent(lease.token(), seq, where));
                }
                return sent;
            }
        }
    }
}
