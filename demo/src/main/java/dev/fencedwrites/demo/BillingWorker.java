package dev.fencedwrites.demo;

import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.producer.FencedProducer;
import dev.fencedwrites.producer.FencingLease;
import dev.fencedwrites.producer.FencingLeaseClient;
import dev.fencedwrites.producer.LeaseAcquisitionException;
import dev.fencedwrites.producer.LeaseLostException;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.RecordMetadata;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * One billing worker, run as its own JVM so the demo can pause it with a real SIGSTOP: acquires the
 * customer's lease (raising the fence with its marker), computes the summary, and publishes it with
 * its fencing token; the send refuses if the lease is already lost.
 * Prints one {@code EVENT <name> key=value ...} line per step on stdout for the demo to follow.
 */
@Command(name = "billing-worker", mixinStandardHelpOptions = true, description = "Acquires the lease for a customer, computes "
        + "its billing summary and publishes it under the fencing token.")
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
    @Option(names = "--linger-ms", defaultValue = "0", description = "The producer's linger.ms: how long a queued write may "
            + "wait in this process.")
    long lingerMs;
    @Option(names = "--freeze-after-queue", description = "Freeze this JVM with SIGSTOP right after its write is queued, before "
            + "it leaves the "
            + "process (use with a long --linger-ms): the worst moment for a pause. Resume it with SIGCONT.")
    boolean freezeAfterQueue;

    public static void main(String[] args) {
        System.exit(new CommandLine(new BillingWorker()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        Map<String, Object> kafka = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ProducerConfig.CLIENT_ID_CONFIG,
                name,
                ProducerConfig.LINGER_MS_CONFIG, lingerMs);
        try (FencingLeaseClient leases = new FencingLeaseClient(List.of(etcd.split(",")), FencingLeaseClient.DEFAULT_LOCK_PREFIX);
                FencedProducer<BillingSummary> producer = FencedProducer.create(kafka,
                        AvroSerializer.forValues(new RestSchemaRegistryClient(registry, Duration.ofSeconds(10))),
                        FenceTopics.INPUT, name)) {
            event("acquiring", "resource=" + resource);
            // acquire() also publishes the FENCE marker that raises the key's fence to this token at once.
            try (FencingLease lease = acquire(producer, leases)) {
                event("acquired", "token=" + lease.token() + " lease=" + Long.toHexString(lease.leaseId()) + " ttl="
                        + lease.ttl().toSeconds());
                event("computing", "ms=" + computeMs);
                Thread.sleep(computeMs);
                BillingSummary summary = BillingSummary.newBuilder()
                        .setCustomerId(resource).setBillingPeriod("2026-11").setAmountMinor(amountMinor).setCurrency("EUR")
                        .setLineItems(lineItems).setComputedAt(Instant.now()).setComputedBy(name).build();
                // A careful worker: send() refuses if the lease is already lost. What no check can
                // cover is a pause after it, while the write is still in this process.
                CompletableFuture<RecordMetadata> write = producer.send(lease, summary);
                event("queued", "token=" + lease.token() + " lease_valid=" + lease.isValid());
                if (freezeAfterQueue) {
                    event("freezing", "pid=" + ProcessHandle.current().pid());
                    freeze();
                    event("resumed", "lease_valid=" + lease.isValid());
                }
                producer.flush();
                try {
                    RecordMetadata sent = write.get(30, TimeUnit.SECONDS);
                    event("sent", "partition=" + sent.partition() + " offset=" + sent.offset());
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof LeaseLostException lost) {
                        event("refused", "cause=" + lost.lossCause().replace(' ', '_'));
                        return 3;
                    }
                    throw e;
                }
            }
        }
        return 0;
    }

    /**
     * Acquires the lease and lock, with a new lease when the last one was lost while waiting for the lock (no keep-alive
     * renewal within the TTL: on a loaded machine a fresh JVM's first renewal can be late): no lock was held, so trying
     * again is safe, and it is what a worker should do. Gives up after three such losses.
     */
    private FencingLease acquire(FencedProducer<BillingSummary> producer, FencingLeaseClient leases) throws Exception {
        for (int attempt = 1;; attempt++) {
            try {
                return producer.acquire(leases, resource, Duration.ofSeconds(ttlSeconds), Duration.ofSeconds(60));
            } catch (LeaseAcquisitionException e) {
                if (attempt == 3 || !(e.getCause() instanceof LeaseLostException)) {
                    throw e;
                }
                event("retrying", "attempt=" + (attempt + 1) + " cause=lease_lost_while_waiting");
            }
        }
    }

    /** Stops this JVM with a real SIGSTOP, as a stop-the-world pause would, until someone sends SIGCONT. */
    private static void freeze() throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-STOP", Long.toString(ProcessHandle.current().pid())).inheritIO().start();
        kill.waitFor();
    }

    private static void event(String name, String fields) {
        System.out.println("EVENT " + name + " " + fields);
        System.out.flush();
    }
}
