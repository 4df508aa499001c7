package dev.fencedwrites.enforcer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceRule;
import dev.fencedwrites.contract.RejectionReason;
import dev.fencedwrites.enforcer.internal.FenceExpiry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Fence expiry's two claims (docs/concepts/fence-expiry.md), over random histories of an etcd lock service: acquisitions
 * (a waiter queues behind the holder, as etcd's Mutex does), releases and lease expiries (of holders and of waiters), writes
 * and markers by live holders, writes by holders whose tenure ended (zombies), writes at a later revision of a tenure (a
 * writer that knows the lease), expiry passes (M read from the live keys) and scan steps interleaved with the writes. Two
 * enforcers see the same records: one with expiry, one without. Claims:
 * <ol>
 *   <li>a live holder's write gets the same verdict from both (expiry never rejects a write a live holder makes);</li>
 *   <li>every write the enforcer without expiry rejects, the one with expiry rejects too.</li>
 * </ol>
 * And each rejection by the rule is what the rule gives against the fence it reports ({@code fence.rejected.highest}), as
 * {@code fence verify} checks: a key without a fence is fenced at {@code (floor, no seq)}.
 * The control history ({@link #controlAFloorFromTheCurrentRevisionRejectsALiveHolder}) reads M as etcd's current revision
 * + 1, as if the oldest live lock were not checked: claim 1 then fails, so the check can fail.
 */
class FenceExpiryModelTest {
    private static final int RESOURCES = 4;

    /** One step of a history; {@code pick} chooses among what exists when it runs. */
    record Op(Kind kind, int pick) {
    }

    enum Kind {
        ACQUIRE, RELEASE, EXPIRE_WAITER, WRITE, MARKER, ZOMBIE_WRITE, LATER_TOKEN, PASS, STEP
    }

    @Provide
    Arbitrary<List<Op>> histories() {
        Arbitrary<Kind> kinds = Arbitraries.frequencyOf(
                Tuple.of(4, Arbitraries.just(Kind.ACQUIRE)),
                Tuple.of(3, Arbitraries.just(Kind.RELEASE)),
                Tuple.of(1, Arbitraries.just(Kind.EXPIRE_WAITER)),
                Tuple.of(5, Arbitraries.just(Kind.WRITE)),
                Tuple.of(1, Arbitraries.just(Kind.MARKER)),
                Tuple.of(4, Arbitraries.just(Kind.ZOMBIE_WRITE)),
                Tuple.of(2, Arbitraries.just(Kind.LATER_TOKEN)),
                Tuple.of(2, Arbitraries.just(Kind.PASS)),
                Tuple.of(3, Arbitraries.just(Kind.STEP)));
        return Combinators.combine(kinds, Arbitraries.integers().between(0, 1_000)).as(Op::new).list().ofMinSize(10)
                .ofMaxSize(120);
    }

    @Property(tries = 100)
    void expiryNeverRejectsALiveHolderAndNeverAcceptsWhatTheRuleRejects(@ForAll("histories") List<Op> history)
            throws Exception {
        try (Model model = new Model(false)) {
            for (Op op : history) {
                model.apply(op);
            }
            assertThat(model.violations).isEmpty();
        }
    }

    /** A long fixed history, so the store does shrink: keys written once by tenures that then end, then a full pass. */
    @Example
    void fencesOfEndedTenuresAreDroppedAndTheirStaleWritesStayRejected() throws Exception {
        try (Model model = new Model(false)) {
            for (int round = 0; round < 30; round++) {
                model.apply(new Op(Kind.ACQUIRE, round));
                model.apply(new Op(Kind.WRITE, round));
                model.apply(new Op(Kind.RELEASE, round));
            }
            assertThat(model.storedKeys(model.withExpiry)).isEqualTo(RESOURCES);
            model.apply(new Op(Kind.PASS, 0));
            for (int i = 0; i < 10; i++) {
                model.apply(new Op(Kind.STEP, 0));
            }
            model.apply(new Op(Kind.ZOMBIE_WRITE, 7));
            model.apply(new Op(Kind.ACQUIRE, 1));
            model.apply(new Op(Kind.WRITE, 1));

            assertThat(model.storedKeys(model.withExpiry)).as("one fence left: the live holder's").isEqualTo(1);
            assertThat(model.verdicts).endsWith("STALE_TOKEN", "accepted");
            assertThat(model.violations).isEmpty();
        }
    }

    @Example
    void controlAFloorFromTheCurrentRevisionRejectsALiveHolder() throws Exception {
        try (Model model = new Model(true)) {
            model.apply(new Op(Kind.ACQUIRE, 0));
            model.apply(new Op(Kind.PASS, 0));
            model.apply(new Op(Kind.WRITE, 0));
            assertThat(model.violations).as("the check catches a floor that ignores the live lock").isNotEmpty();
        }
    }

    /** A tenure: the lock of {@code resource} held by {@code lease} from revision {@code start} (its token) to {@code end}. */
    static final class Tenure {
        final int resource;
        final long lease;
        final long created;
        long start = -1;
        long end = Long.MAX_VALUE;
        long seq;

        Tenure(int resource, long lease, long created) {
            this.resource = resource;
            this.lease = lease;
            this.created = created;
        }
    }

    /** etcd's lock keys and history, the two enforcers and the checks. */
    static final class Model implements AutoCloseable {
        final List<List<Tenure>> queues = new ArrayList<>();
        final List<Tenure> tenures = new ArrayList<>();
        final List<String> violations = new ArrayList<>();
        final List<String> verdicts = new ArrayList<>();
        final boolean control;
        final AtomicLong wallClock = new AtomicLong(1_000_000);
        final FenceExpiry expiry;
        final Enforcer withExpiry;
        final Enforcer without;
        long revision = 1;
        long nextLease = 100;

        Model(boolean control) throws IOException {
            this.control = control;
            for (int i = 0; i < RESOURCES; i++) {
                queues.add(new ArrayList<>());
            }
            expiry = new FenceExpiry(this::oldest, new FenceExpiry.Offsets() {
                @Override
                public Map<TopicPartition, Long> ends(String topic) {
                    return Map.of();
                }

                @Override
                public Map<TopicPartition, Long> committed() {
                    return Map.of();
                }
            }, List.of("in"), Duration.ofSeconds(1), 3, new SimpleMeterRegistry(), wallClock::get);
            withExpiry = new Enforcer(expiry);
            without = new Enforcer(null);
        }

        FenceExpiry.OldestLock oldest() {
            if (control) {
                return new FenceExpiry.OldestLock(revision, null, revision + 1);
            }
            return queues.stream().flatMap(List::stream).min(Comparator.comparingLong(t -> t.created))
                    .map(t -> new FenceExpiry.OldestLock(revision, "lock/" + t.resource + "/" + t.lease, t.created))
                    .orElse(new FenceExpiry.OldestLock(revision, null, revision + 1));
        }

        void apply(Op op) throws Exception {
            int resource = op.pick() % RESOURCES;
            List<Tenure> queue = queues.get(resource);
            switch (op.kind()) {
                case ACQUIRE -> {
                    Tenure tenure = new Tenure(resource, nextLease++, ++revision);
                    queue.add(tenure);
                    tenures.add(tenure);
                    if (queue.size() == 1) {
                        tenure.start = revision;
                    }
                }
                case RELEASE -> {
                    if (!queue.isEmpty()) {
                        remove(queue, 0);
                    }
                }
                case EXPIRE_WAITER -> {
                    if (queue.size() > 1) {
                        remove(queue, 1 + op.pick() % (queue.size() - 1));
                    }
                }
                case WRITE, MARKER -> {
                    if (!queue.isEmpty()) {
                        write(queue.get(0), queue.get(0).start, op.kind() == Kind.MARKER, true);
                    }
                }
                case ZOMBIE_WRITE -> {
                    List<Tenure> ended = tenures.stream().filter(t -> t.end != Long.MAX_VALUE).toList();
                    if (!ended.isEmpty()) {
                        Tenure zombie = ended.get(op.pick() % ended.size());
                        write(zombie, zombie.start, false, false);
                    }
                }
                case LATER_TOKEN -> {
                    // A writer that knows a lease sends another revision of the lease's tenure (every revision of it reads
                    // as held): the enforcer refuses a raise inside the tenure of the key's fence.
                    List<Tenure> held = tenures.stream().filter(t -> t.start >= 0).toList();
                    if (!held.isEmpty()) {
                        Tenure tenure = held.get(op.pick() % held.size());
                        long last = Math.min(tenure.end - 1, revision);
                        write(tenure, tenure.start + op.pick() % (last - tenure.start + 1), false,
                                tenure.end == Long.MAX_VALUE);
                    }
                }
                case PASS -> {
                    wallClock.addAndGet(2_000);
                    expiry.tick();
                    withExpiry.driver.advanceWallClockTime(expiry.pickUpInterval());
                }
                case STEP -> withExpiry.driver.advanceWallClockTime(Duration.ofMillis(100));
                default -> throw new IllegalStateException();
            }
        }

        /** Deletes the lock key at {@code index}: a holder's tenure ends and the next waiter's begins at the same revision. */
        private void remove(List<Tenure> queue, int index) {
            Tenure gone = queue.remove(index);
            revision++;
            if (gone.start >= 0) {
                gone.end = revision;
                if (!queue.isEmpty()) {
                    queue.get(0).start = revision;
                }
            } else {
                tenures.remove(gone);
            }
        }

        private void write(Tenure writer, long token, boolean marker, boolean live) {
            long seq = marker ? 0 : ++writer.seq;
            RecordHeaders headers = new RecordHeaders();
            headers.add(FenceHeaders.TOKEN, utf8(Long.toString(token)));
            headers.add(FenceHeaders.SEQ, utf8(Long.toString(seq)));
            headers.add(FenceHeaders.LEASE, utf8(Long.toString(writer.lease)));
            if (marker) {
                headers.add(FenceHeaders.OP, utf8("FENCE"));
            }
            String key = "resource-" + writer.resource;
            String expired = withExpiry.decide(key, marker, headers);
            if (withExpiry.highest != null && List.of("STALE_TOKEN", "DUPLICATE", "OUT_OF_ORDER").contains(expired)) {
                RejectionReason rule = FenceRule.decide(Fence.parse(withExpiry.highest),
                        new Fence(token, seq)).reason();
                if (rule == null || !rule.name().equals(expired)) {
                    violations.add("rejected " + expired + " against " + withExpiry.highest + ", but the rule says " + rule);
                }
            }
            String plain = without.decide(key, marker, headers);
            verdicts.add(expired);
            String what = (live ? "live holder" : "ended tenure") + " of " + key + " (token " + token + ", seq " + seq
                    + ", lease " + writer.lease + ", at revision " + revision + ")";
            if (live && !expired.equals(plain)) {
                violations.add("claim 1: " + what + ": " + expired + " with expiry, " + plain + " without");
            }
            if (!"accepted".equals(plain) && "accepted".equals(expired)) {
                violations.add("claim 2: " + what + ": accepted with expiry, " + plain + " without");
            }
            // A rejection only expiry gives is one below the floor, and only those name it (fence verify reads them so).
            boolean onlyExpiry = "STALE_TOKEN".equals(expired) && !expired.equals(plain);
            if (onlyExpiry && withExpiry.floor == null || withExpiry.floor != null
                    && (!"STALE_TOKEN".equals(expired) || !withExpiry.floor.equals(withExpiry.highest))) {
                violations.add("fence.rejected.floor: " + what + ": " + expired + " with expiry (floor header "
                        + withExpiry.floor + ", highest " + withExpiry.highest + "), " + plain + " without");
            }
        }

        /** The lock of {@code resource} was held by {@code lease} at revision {@code token}, as etcd's history says. */
        TokenVerifier.Verdict verify(byte[] key, long token, long lease) {
            if (token > revision) {
                return new TokenVerifier.Verdict(RejectionReason.FUTURE_TOKEN, "above " + revision);
            }
            int resource = Integer.parseInt(new String(key, StandardCharsets.UTF_8).substring("resource-".length()));
            return tenures.stream()
                    .filter(t -> t.resource == resource && t.lease == lease && t.start >= 0 && t.start <= token
                            && token < t.end)
                    .findFirst().map(t -> TokenVerifier.Verdict.verified("held", t.created))
                    .orElse(new TokenVerifier.Verdict(RejectionReason.LOCK_NOT_HELD, "not held"));
        }

        long storedKeys(Enforcer enforcer) {
            long count = 0;
            try (var all = enforcer.driver.getKeyValueStore(FenceEnforcerTopology.STORE).all()) {
                while (all.hasNext()) {
                    if (!all.next().key.equals(FenceExpiry.FLOOR_KEY)) {
                        count++;
                    }
                }
            }
            return count;
        }

        @Override
        public void close() throws IOException {
            withExpiry.close();
            without.close();
            expiry.close();
        }

        /** One enforcer under the test driver, exactly_once_v2, one partition, deciding with the model's etcd. */
        final class Enforcer implements AutoCloseable {
            final Path stateDir = Files.createTempDirectory("fence-expiry-model");
            final TopologyTestDriver driver;
            final TestInputTopic<byte[], byte[]> input;
            final TestOutputTopic<byte[], byte[]> accepted;
            final TestOutputTopic<byte[], byte[]> rejected;
            final TestOutputTopic<byte[], byte[]> markers;
            /** The last rejection's {@code fence.rejected.highest}, or {@code null}. */
            String highest;
            /** The last rejection's {@code fence.rejected.floor}, or {@code null}. */
            String floor;

            Enforcer(FenceExpiry expiry) throws IOException {
                TokenVerifier verifier = new TokenVerifier() {
                    @Override
                    public Verdict verify(byte[] key, long token, long leaseId) {
                        return Model.this.verify(key, token, leaseId);
                    }

                    @Override
                    public void close() {
                    }
                };
                FenceEnforcerTopology.Settings settings = FenceEnforcerTopology.Settings
                        .of("in", "ok", "dlq", FenceEnforcerTopology.Limits.unbounded(1)).withMarkers("marks")
                        .withPartitionMismatch(PartitionMismatch.REJECT).withVerifier(verifier);
                Properties props = new Properties();
                props.put(StreamsConfig.APPLICATION_ID_CONFIG, "fence-expiry-model");
                props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
                props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
                props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
                driver = new TopologyTestDriver(FenceEnforcerTopology.build(
                        expiry == null ? settings : settings.withExpiry(expiry), new SimpleMeterRegistry()), props);
                input = driver.createInputTopic("in", new ByteArraySerializer(), new ByteArraySerializer());
                accepted = driver.createOutputTopic("ok", new ByteArrayDeserializer(), new ByteArrayDeserializer());
                rejected = driver.createOutputTopic("dlq", new ByteArrayDeserializer(), new ByteArrayDeserializer());
                markers = driver.createOutputTopic("marks", new ByteArrayDeserializer(), new ByteArrayDeserializer());
            }

            /** "accepted", or the rejection reason. */
            String decide(String key, boolean marker, RecordHeaders headers) {
                input.pipeInput(new TestRecord<>(utf8(key), marker ? null : utf8("v"), new RecordHeaders(headers.toArray())));
                List<TestRecord<byte[], byte[]>> rejections = rejected.readRecordsToList();
                accepted.readRecordsToList();
                markers.readRecordsToList();
                highest = null;
                floor = null;
                if (rejections.isEmpty()) {
                    return "accepted";
                }
                Header reported = rejections.get(0).headers().lastHeader(FenceHeaders.REJECTED_HIGHEST);
                highest = reported == null || reported.value().length == 0
                        ? null
                        : new String(reported.value(), StandardCharsets.UTF_8);
                Header below = rejections.get(0).headers().lastHeader(FenceHeaders.REJECTED_FLOOR);
                floor = below == null ? null : new String(below.value(), StandardCharsets.UTF_8);
                Header reason = rejections.get(0).headers().lastHeader(FenceHeaders.REJECTED_REASON);
                return new String(reason.value(), StandardCharsets.UTF_8);
            }

            @Override
            public void close() throws IOException {
                driver.close();
                Utils.delete(stateDir.toFile());
            }
        }
    }

    static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
