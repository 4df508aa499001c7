package dev.fencedwrites.bench;

import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The minimal stateful baseline: per record, one read and one write of a number per key (the highest input
 * offset seen, 8 bytes) in a store built as the enforcer's fence store is ({@link StoreVariant#asTheFenceStore}:
 * persistent RocksDB key-value store with the fence store's options, bytes keys, record cache as the enforcer's, changelog
 * on with Kafka Streams' defaults), or as a {@link StoreVariant} says, and every record forwarded. What it costs beyond a
 * pass-through is what any stateful Kafka Streams application pays; what the enforcer costs beyond it is the fencing.
 */
final class MaxPerKey implements Processor<byte[], byte[], byte[], byte[]> {
    static final String STORE = "max-per-key";

    private ProcessorContext<byte[], byte[]> context;
    private KeyValueStore<Bytes, Long> store;

    /** Input, this processor with its store built as {@code variant} says, output. */
    static Topology topology(String input, String output, StoreVariant variant) {
        Topology topology = new Topology();
        topology.addSource("input", new ByteArrayDeserializer(),
                new ByteArrayDeserializer(), input);
        topology.addProcessor("max-per-key", MaxPerKey::new, "input");
        topology.addStateStore(variant.builder(STORE), "max-per-key");
        topology.addSink("output", output, new ByteArraySerializer(),
                new ByteArraySerializer(), "max-per-key");
        return topology;
    }

    @Override
    public void init(ProcessorContext<byte[], byte[]> context) {
        this.context = context;
        this.store = context.getStateStore(STORE);
    }

    @Override
    public void process(Record<byte[], byte[]> record) {
        Bytes key = Bytes.wrap(record.key());
        long offset = context.recordMetadata().map(RecordMetadata::offset).orElse(-1L);
        Long highest = store.get(key);
        if (highest == null || offset > highest) {
            store.put(key, offset);
        }
        context.forward(record);
    }
}
