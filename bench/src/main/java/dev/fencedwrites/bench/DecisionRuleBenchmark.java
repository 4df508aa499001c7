package dev.fencedwrites.bench;

import dev.fencedwrites.contract.Decision;
import dev.fencedwrites.contract.Fence;
import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.FenceRule;
import dev.fencedwrites.contract.FenceStamp;
import dev.fencedwrites.contract.HeaderLookup;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * JMH: the per-record work of the enforcer's processor without Kafka Streams around it: parse the
 * fence headers ({@link FenceStamp#parse}), look up the key's fence, decide ({@link FenceRule#decide})
 * and raise it ({@link FenceRule#raise}), against a map standing in for the state store. The
 * baseline reads the same headers and touches the same map without deciding.
 * Nanoseconds per record; 1 024 records over 256 keys, a quarter of them stale, each with the four headers
 * {@code FencedProducer} writes (token, seq, lease, writer).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class DecisionRuleBenchmark {
    private static final int RECORDS = 1024;
    private static final int KEYS = 256;

    private final String[] keys = new String[RECORDS];
    private final HeaderLookup[] headers = new HeaderLookup[RECORDS];
    private final Map<String, Fence> store = new HashMap<>();
    private int next;

    @Setup(Level.Trial)
    public void records() {
        long[] token = new long[KEYS];
        Random random = new Random(7);
        for (int i = 0; i < RECORDS; i++) {
            int key = random.nextInt(KEYS);
            long t = random.nextInt(4) == 0 && token[key] > 1 ? token[key] - 1 : ++token[key];
            RecordHeaders recordHeaders = new RecordHeaders();
            recordHeaders.add(FenceHeaders.TOKEN, FenceHeaders.encode(t));
            recordHeaders.add(FenceHeaders.SEQ, FenceHeaders.encode(1));
            recordHeaders.add(FenceHeaders.LEASE, FenceHeaders.encode(7_587_869_054_862_721_000L + key));
            recordHeaders.add(FenceHeaders.WRITER, FenceHeaders.encode("worker-" + key));
            keys[i] = "customer-" + key;
            headers[i] = HeaderLookup.of(recordHeaders);
        }
    }

    @Setup(Level.Iteration)
    public void emptyStore() {
        store.clear();
        next = 0;
    }

    /** Parse, look up, decide, raise: what the enforcer does per record besides Kafka Streams' own work. */
    @Benchmark
    public Decision parseDecideRaise() {
        int i = next++ & (RECORDS - 1);
        FenceStamp.Parsed parsed = FenceStamp.parse(headers[i]);
        Fence incoming = parsed.stamp().fence();
        Fence stored = store.get(keys[i]);
        Decision decision = FenceRule.decide(stored, incoming);
        if (decision.accepted()) {
            store.put(keys[i], FenceRule.raise(stored, incoming));
        }
        return decision;
    }

    /** The baseline: the same header reads and map traffic with no fence: a pass-through's share. */
    @Benchmark
    public Object readHeadersAndStore() {
        int i = next++ & (RECORDS - 1);
        List<byte[]> token = headers[i].values(FenceHeaders.TOKEN);
        return store.put(keys[i], token.isEmpty() ? null : Fence.of(1));
    }
}
