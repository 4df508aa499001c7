package dev.fencedwrites.devtools.chaos;

import dev.fencedwrites.avro.AvroSerializer;
import dev.fencedwrites.avro.RestSchemaRegistryClient;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceOp;
import dev.fencedwrites.contract.FenceTopics;
import dev.fencedwrites.demo.BillingSummary;
import dev.fencedwrites.etcd.EtcdSettings;
import dev.fencedwrites.producer.FencedProducer;
import dev.fencedwrites.producer.FencingLease;
import dev.fencedwrites.producer.FencingLeaseClient;
import dev.fencedwrites.producer.LeaseAcquisitionException;
import dev.fencedwrites.producer.LeaseLostException;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * One worker process of {@code fence chaos} and of the failover tests: {@code threads} producer-lib writers
 * that contend for the keys' real etcd locks with a short TTL, publish the acquisition marker (producer-lib's
 * {@code acquire}), write a few Avro billing summaries under each lease and release it, until the
 * stop file appears. Each write's value carries a unique write id in {@code amountMinor}.
 *
 * <p>A real stale write: now and then a writer, after {@link FencedProducer#send}'s lease check
 * passed and just before the record enters the Kafka producer, has its whole process stopped with
 * {@code SIGSTOP} by the {@link WriterFleet} (keep-alives included, like a GC pause or a frozen VM), which resumes
 * it once the lease expired and another writer took the lock, and the record then reaches the broker
 * with the old token.
 *
 * <p>Everything it did goes to its ledger file, one line per event, {@link WriterLedger}'s format.
 * Arguments: {@code name=value} pairs, see {@link WriterFleet#command}.
 */
public final class ChaosWriter {
    private final Map<String, String> args;
    private final PrintWriter ledger;
    private final AtomicLong writeIds;
    private final List<String> keys;
    private final Duration ttl;
    private final double stallChance;
    private final Path stopFile;
    private final long pauseNanos;
    private final Path ledgerFile;
    private final AtomicInteger stalls = new AtomicInteger();
    /**
     * The real wall clock's offset from {@link System#nanoTime} (CLOCK_MONOTONIC, the same for every process on the host),
     * from the parent, so the ledger holds real times under libfaketime too; {@code null}: the process's own clock.
     */
    private final Long clockOffsetNanos;

    private ChaosWriter(Map<String, String> args) throws IOException {
        this.args = args;
        this.ledgerFile = Path.of(args.get("ledger"));
        this.ledger = new PrintWriter(Files.newBufferedWriter(ledgerFile, StandardCharsets.UTF_8), true);
        this.writeIds = new AtomicLong(Long.parseLong(args.get("first.id")));
        this.keys = Arrays.asList(args.get("keys").split(","));
        this.ttl = Duration.ofMillis(Long.parseLong(args.get("ttl.ms")));
        this.stallChance = Double.parseDouble(args.get("stall.chance"));
        this.stopFile = Path.of(args.get("stop.file"));
        this.clockOffsetNanos = args.containsKey("clock.offset.ns") ? Long.parseLong(args.get("clock.offset.ns")) : null;
        this.pauseNanos = Duration.ofMillis(Long.parseLong(args.get("pause.ms"))).toNanos();
    }

    /** Runs the writers until the stop file exists, then releases and exits 0. */
    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new HashMap<>();
        for (String arg : argv) {
            int eq = arg.indexOf('=');
            args.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        ChaosWriter writer = new ChaosWriter(args);
        int threads = Integer.parseInt(args.get("threads"));
        Thread[] running = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            String name = args.get("name") + "-" + t;
            running[t] = new Thread(() -> writer.run(name), name);
            running[t].start();
        }
        for (Thread thread : running) {
            thread.join();
        }
        writer.ledger.println("DONE");
        writer.ledger.close();
        System.exit(0);
    }

    private synchronized void log(String line) {
        long now = clockOffsetNanos == null ? System.currentTimeMillis() : (System.nanoTime() + clockOffsetNanos) / 1_000_000;
        ledger.println(now + " " + line);
    }

    private void run(String name) {
        Map<String, Object> kafka = new HashMap<>();
        kafka.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap"));
        kafka.put(ProducerConfig.ACKS_CONFIG, "all");
        kafka.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        kafka.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        AvroSerializer<BillingSummary> values = AvroSerializer
                .forValues(new RestSchemaRegistryClient(args.get("registry"), Duration.ofSeconds(10)));
        EtcdSettings etcd = EtcdSettings.builder(Arrays.asList(args.get("etcd").split(",")))
                .requestTimeout(Duration.ofSeconds(2)).build();
        try (FencingLeaseClient leases = new FencingLeaseClient(etcd, new SimpleMeterRegistry());
                FencedProducer<BillingSummary> producer = new FencedProducer<>(
                        new StallingProducer(kafka, values), FenceTopics.INPUT, name, FencedProducer.Takeover.PUBLISH_MARKER,
                        new SimpleMeterRegistry())) {
            while (!Files.exists(stopFile)) {
                holdOnce(name, leases, producer);
            }
        } catch (RuntimeException e) {
            log("CRASH " + name + " " + oneLine(e));
        }
    }

    /** One holding: acquire a random key (marker included), write a few summaries, release. */
    private void holdOnce(String name, FencingLeaseClient leases, FencedProducer<BillingSummary> producer) {
        String key = keys.get(ThreadLocalRandom.current().nextInt(keys.size()));
        FencingLease lease;
        try {
            lease = producer.acquire(leases, key, ttl, Duration.ofSeconds(15));
        } catch (LeaseAcquisitionException e) {
            log("ACQUIRE_FAILED " + name + " " + key + " " + oneLine(e));
            return;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        log("ACQUIRED " + name + " " + key + " " + lease.token() + " " + lease.leaseId());
        lease.onLoss((lost, cause) -> log("LOST " + name + " " + key + " " + lost.token() + " " + lost.leaseId() + " "
                + oneLine(new IllegalStateException(lost.lossCause()))));
        try (lease) {
            int writes = 2 + ThreadLocalRandom.current().nextInt(6);
            for (int w = 0; w < writes && !Files.exists(stopFile); w++) {
                long id = writeIds.getAndIncrement();
                STALL.set(ThreadLocalRandom.current().nextDouble() < stallChance);
                if (!write(name, key, lease, producer, id)) {
                    break;
                }
                LockSupport.parkNanos(pauseNanos); // the load's pace, not a wait for anything
            }
        } finally {
            STALL.remove();
            log("RELEASED " + name + " " + key + " " + lease.token() + " " + lease.leaseId());
        }
    }

    /** Sends one write and logs what became of it; false when the lease is lost. */
    private boolean write(String name, String key, FencingLease lease, FencedProducer<BillingSummary> producer, long id) {
        BillingSummary value = BillingSummary.newBuilder().setCustomerId(key).setBillingPeriod("2026-12").setAmountMinor(id)
                .setCurrency("EUR").setLineItems(1).setComputedAt(Instant.now()).setComputedBy(name).build();
        try {
            RecordMetadata at = producer.sendAndWait(lease, value);
            // Still valid once acknowledged: the record was appended while the lease, and so the lock key, lived.
            boolean held = lease.isValid();
            log("ACK " + name + " " + id + " " + key + " " + lease.token() + " " + SEQ.get() + " " + lease.leaseId() + " "
                    + at.partition() + " " + at.offset() + " " + (STALLED.get() ? 1 : 0) + " " + (held ? 1 : 0));
            return true;
        } catch (LeaseLostException e) {
            log("REFUSED " + name + " " + id + " " + key + " " + lease.token());
            return false;
        } catch (KafkaException e) {
            log("FAIL " + name + " " + id + " " + key + " " + lease.token() + " " + oneLine(e));
            return !(e.getCause() instanceof LeaseLostException);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } finally {
            STALLED.set(false);
        }
    }

    private static String oneLine(Exception e) {
        return String.valueOf(e.getMessage()).replace('\n', ' ');
    }

    /** Whether this thread's next write stops the process between the lease check and the send. */
    private static final ThreadLocal<Boolean> STALL = ThreadLocal.withInitial(() -> false);
    /** Whether this thread's last write did stop the process. */
    private static final ThreadLocal<Boolean> STALLED = ThreadLocal.withInitial(() -> false);
    /** The fence.seq producer-lib gave this thread's last write. */
    private static final ThreadLocal<Long> SEQ = ThreadLocal.withInitial(() -> -1L);

    /**
     * The Kafka producer under producer-lib's: notes each write's seq and, when asked, stops the
     * process (SIGSTOP to itself) after producer-lib checked the lease and before the record is sent.
     */
    private final class StallingProducer extends KafkaProducer<String, BillingSummary> {
        StallingProducer(Map<String, Object> config, AvroSerializer<BillingSummary> values) {
            super(config, new StringSerializer(), values);
        }

        @Override
        public Future<RecordMetadata> send(ProducerRecord<String, BillingSummary> record, Callback callback) {
            Header op = record.headers().lastHeader(FenceHeaders.OP);
            if (op != null && FenceOp.WRITE.name().equals(FenceHeaders.decode(op.value()))) {
                SEQ.set(Long.parseLong(FenceHeaders.decode(record.headers().lastHeader(FenceHeaders.SEQ).value())));
                if (STALL.get()) {
                    STALL.set(false);
                    STALLED.set(true);
                    stopThisProcess(record);
                }
            }
            return super.send(record, callback);
        }

        /**
         * Asks the test to stop this process and waits until the test has stopped it (SIGSTOP, seen in
         * /proc) and let it run again: a signal the process sent itself could land only after the send.
         */
        private void stopThisProcess(ProducerRecord<String, BillingSummary> record) {
            int stall = stalls.incrementAndGet();
            log("STALL " + record.key() + " " + FenceHeaders.decode(record.headers().lastHeader(FenceHeaders.TOKEN).value()) + " "
                    + FenceHeaders.decode(record.headers().lastHeader(FenceHeaders.LEASE).value()));
            Path resumed = WriterFleet.resumedFile(ledgerFile, stall);
            while (!Files.exists(resumed)) {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10)); // polls for the test's go-ahead
            }
        }
    }
}
