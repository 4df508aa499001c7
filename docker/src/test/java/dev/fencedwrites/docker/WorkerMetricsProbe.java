package dev.fencedwrites.docker;

import com.sun.net.httpserver.HttpServer;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.producer.FencedProducer;
import dev.fencedwrites.producer.FencingLease;
import dev.fencedwrites.producer.FencingLeaseClient;
import dev.fencedwrites.producer.LeaseAcquisitionException;
import dev.fencedwrites.producer.PauseDetector;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A worker JVM for {@link OperationsIT} to freeze: holds a lease on one key with producer-lib, runs the pause detector
 * against that lease's TTL, has a fenced producer (it sends nothing), and serves its Micrometer registry as Prometheus
 * text on {@code /metrics}, as the README tells workers to. Arguments: etcd endpoint, HTTP port, lease TTL in ms, Kafka
 * bootstrap servers. Prints {@code HOLDING} once the lease is held.
 */
public final class WorkerMetricsProbe {
    private WorkerMetricsProbe() {
    }

    public static void main(String[] args) throws Exception {
        Duration ttl = Duration.ofMillis(Long.parseLong(args[2]));
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new JvmMemoryMetrics().bindTo(registry);
        new JvmGcMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", Integer.parseInt(args[1])), 0);
        http.createContext("/metrics", exchange -> {
            byte[] body = registry.scrape().getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        http.start();
        try (FencingLeaseClient leases = new FencingLeaseClient(EtcdSettings.builder(List.of(args[0])).build(), registry);
                PauseDetector pauses = PauseDetector.start(Duration.ofMillis(20), ttl, registry);
                FencedProducer<byte[]> producer = FencedProducer.create(
                        Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[3]), new ByteArraySerializer(), FenceTopics.INPUT,
                        "worker-probe", FencedProducer.Takeover.PUBLISH_MARKER, registry);
                FencingLease lease = acquire(leases, ttl)) {
            System.out.println("HOLDING token=" + lease.token());
            System.out.flush();
            new CountDownLatch(1).await(); // until the test stops the process
        }
    }

    /** Acquires the lease, trying again when the first grant outlives its TTL in a slow, loaded JVM (gRPC start-up). */
    private static FencingLease acquire(FencingLeaseClient leases, Duration ttl) throws InterruptedException {
        for (int attempt = 1;; attempt++) {
            try {
                return leases.acquire("worker-probe", ttl, Duration.ofSeconds(30));
            } catch (LeaseAcquisitionException e) {
                if (attempt == 5) {
                    throw new IllegalStateException("no lease after 5 attempts", e);
                }
                System.out.println("RETRYING after " + e.getMessage());
            }
        }
    }
}
