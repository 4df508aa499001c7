package example.worker;

import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.producer.FencedProducer;
import dev.fencedwrites.producer.FencingLease;
import dev.fencedwrites.producer.FencingLeaseClient;
import dev.fencedwrites.producer.PauseDetector;
import dev.fencedwrites.producer.WriteDecisions;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.RecordMetadata;

/**
 * A fenced worker: takes the lease of one resource, publishes a few billing summaries under its fencing token, and
 * stops as soon as it loses the lease or hears from the enforcer that a newer holder fenced it. Every setting comes from
 * the environment ({@link WorkerSettings}). Exit status: 0 when every write was accepted, 3 when one was fenced or
 * rejected, 1 on a failure.
 */
public final class Worker {
    private Worker() {
    }

    public static void main(String[] args) throws Exception {
        WorkerSettings settings;
        EtcdSettings etcd;
        try {
            settings = WorkerSettings.from(System.getenv());
            // etcd.* from the file when there is one, else from FENCE_ETCD_* alone (FENCE_ETCD_ENDPOINTS at least).
            etcd = EtcdSettings.load(Path.of(settings.propertiesFile()), System.getenv());
        } catch (IllegalArgumentException e) {
            System.err.println("worker: " + e.getMessage());
            System.exit(2);
            return;
        }
        PrometheusMeterRegistry meters = Metrics.registry();
        try (MetricsServer metrics = MetricsServer.start(meters, settings.metricsPort())) {
            say("metrics", metrics.url());
            System.exit(run(settings, etcd, meters));
        }
    }

    private static int run(WorkerSettings settings, EtcdSettings etcd, PrometheusMeterRegistry meters) throws Exception {
        Decisions heard = new Decisions();
        Map<String, Object> kafka = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, settings.bootstrap());
        // tag::run[]
        try (FencingLeaseClient leases = new FencingLeaseClient(etcd, meters);
                FencedProducer<BillingSummary> producer = FencedProducer.create(producerConfig(settings),
                        AvroSerializer.forValues(new RestSchemaRegistryClient(settings.registryUrl(), Duration.ofSeconds(10))),
                        FenceTopics.INPUT, settings.workerId(), FencedProducer.Takeover.PUBLISH_MARKER, meters);
                WriteDecisions decisions = WriteDecisions.start(kafka, settings.workerId(), heard);
                PauseDetector pauses = PauseDetector.start(Duration.ofMillis(100), settings.ttl(), meters)) {
            decisions.watch(settings.resource(), Duration.ofSeconds(30)); // before the first write, or its decision is missed
            FencingLease lease = producer.acquire(leases, settings.resource(), settings.ttl(), Duration.ofMinutes(5));
            say("lease", settings.resource() + "  token=" + lease.token() + "  ttl=" + settings.ttl().toMillis() + "ms");
            CompletableFuture<String> stop = new CompletableFuture<>();
            lease.onLoss((lost, cause) -> stop.complete("lost its lease: " + cause.lossCause()));
            heard.onFenced(decision -> stop.complete("was fenced: " + decision));
            int sent = write(settings, producer, lease, stop);
            if (stop.isDone()) {
                say("stopping", settings.workerId() + " " + stop.getNow(""));
            }
            lease.close(); // releases the lock for the next holder (nothing to do once lost)
            producer.close(); // delivers what is still queued: a write checked before a pause leaves now
            heard.awaitAtLeast(sent, settings.decisionWait());
            return heard.exitStatus(sent);
        }
        // end::run[]
    }

    /** Sends up to the configured number of writes, each waited for, until {@code stop} completes; returns how many were sent. */
    private static int write(WorkerSettings settings, FencedProducer<BillingSummary> producer, FencingLease lease,
            CompletableFuture<String> stop) throws Exception {
        int sent = 0;
        for (int i = 1; i <= settings.writes() && !stop.isDone(); i++) {
            BillingSummary summary = BillingSummary.newBuilder().setCustomerId(settings.resource()).setBillingPeriod("2026-11")
                    .setAmountMinor(1_000L * i).setCurrency("EUR").setLineItems(i).setComputedAt(Instant.now())
                    .setComputedBy(settings.workerId()).build();
            // tag::send[]
            CompletableFuture<RecordMetadata> write = producer.send(lease, summary); // refused once the lease is lost
            say("queued", settings.resource() + "  write " + i + " under token " + lease.token());
            CompletableFuture.anyOf(write, stop).exceptionally(e -> null).join();
            if (write.isCompletedExceptionally()) {
                Throwable refused = write.handle((at, error) -> error).join();
                say("refused", settings.resource() + "  write " + i + ": " + refused.getMessage());
                break;
            }
            // end::send[]
            sent++;
            if (write.isDone()) {
                RecordMetadata at = write.join();
                say("sent", settings.resource() + "  write " + i + " -> " + at.topic() + "-" + at.partition() + "@" + at.offset());
            }
            try {
                stop.get(settings.interval().toMillis(), TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                // the interval passed without a reason to stop: next write
            }
        }
        return sent;
    }

    private static Map<String, Object> producerConfig(WorkerSettings settings) {
        return Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, settings.bootstrap(), ProducerConfig.LINGER_MS_CONFIG,
                settings.lingerMs(), ProducerConfig.CLIENT_ID_CONFIG, settings.workerId());
    }

    static void say(String what, String detail) {
        System.out.printf("%-9s %s%n", what, detail);
        System.out.flush();
    }
}
