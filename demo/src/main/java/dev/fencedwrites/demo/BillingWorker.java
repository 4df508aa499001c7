package dev.fencedwrites.demo;

import dev.fencedwrites.producer.FencedProducer;
import dev.fencedwrites.producer.FencingLease;
import dev.fencedwrites.producer.FencingLeaseClient;
import dev.fencedwrites.schemas.FenceTopics;
import dev.fencedwrites.schemas.billing.BillingSummary;
import dev.fencedwrites.schemas.registry.AvroSerializer;
import dev.fencedwrites.schemas.registry.RestSchemaRegistryClient;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.RecordMetadata;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * One billing worker, run as its own JVM so the demo can pause it with a real SIGSTOP: acquires the
 * customer's lease, checks it, computes the summary, and publishes it with its fencing token.
 * Prints one {@code EVENT <name> key=value ...} line per step on stdout for the demo to follow.
 */
@Command(name = "billing-worker", mixinStandardHelpOptions = true,
        description = "Acquires the lease for a customer, computes its billing summary and publishes it under the fencing token.")
public final class BillingWorker implements Callable<Integer> {
    @Option(names = "--name", required = true, description = "Worker identity (fence.writer).")
    String name;
    @Option(names = "--resource", defaultValue = "customer-42", description = "Customer to bill (the lease and the record key).")
    String resource;
    @Option(names = "--ttl-seconds", defaultValue = "2", description = "Lease TTL in seconds.")
    long ttlSeconds;
    @Option(names = "--compute-ms", defaultValue = "1000", description = "How long computing the summary takes, in milliseconds.")
    long computeMs;
    @Option(names = "--amount-minor", required = true, description = "Computed total in minor units (cents).")
    long amountMinor;
    @Option(names = "--line-items", defaultValue = "1", description = "Number of line items summed.")
    int lineItems;
    @Option(names = "--etcd", required = true, description = "etcd endpoints, comma-separated.")
    String etcd;
    @Option(names = "--bootstrap", required = true, description = "Kafka bootstrap servers.")
    String bootstrap;
    @Option(names = "--schema-registry", required = true, description = "Schema registry URL.")
    String registry;

    public static void main(String[] args) {
        System.exit(new CommandLine(new BillingWorker()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        try (FencingLeaseClient leases = new FencingLeaseClient(List.of(etcd.split(",")), FencingLeaseClient.DEFAULT_LOCK_PREFIX);
             FencedProducer<BillingSummary> producer = FencedProducer.create(
                     Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ProducerConfig.CLIENT_ID_CONFIG, name),
                     new AvroSerializer<>(new RestSchemaRegistryClient(registry, Duration.ofSeconds(10)), false), FenceTopics.INPUT, name)) {
            event("acquiring", "resource=" + resource);
            try (FencingLease lease = leases.acquire(resource, Duration.ofSeconds(ttlSeconds), Duration.ofSeconds(60))) {
                event("acquired", "token=" + lease.token() + " lease=" + Long.toHexString(lease.leaseId()) + " ttl=" + lease.ttl().toSeconds());
                if (!lease.isValid()) {
                    event("aborted", "reason=lease-invalid-before-compute");
                    return 3;
                }
                event("computing", "ms=" + computeMs);
                Thread.sleep(computeMs);
                BillingSummary summary = BillingSummary.newBuilder()
                        .setCustomerId(resource).setBillingPeriod("2026-11").setAmountMinor(amountMinor).setCurrency("EUR")
                        .setLineItems(lineItems).setComputedAt(Instant.now()).setComputedBy(name).build();
                // Like most real code, the worker checked its lease before the long step, not after:
                // a pause between that check and this send is exactly the gap the fence closes.
                event("writing", "token=" + lease.token() + " lease_valid=" + lease.isValid());
                RecordMetadata sent = producer.send(lease, summary).get(30, TimeUnit.SECONDS);
                event("sent", "partition=" + sent.partition() + " offset=" + sent.offset());
            }
        }
        return 0;
    }

    private static void event(String name, String fields) {
        System.out.println("EVENT " + name + " " + fields);
        System.out.flush();
    }
}
