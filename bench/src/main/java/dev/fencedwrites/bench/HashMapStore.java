package dev.fencedwrites.bench;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.processor.internals.RecordBatchingStateRestoreCallback;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * A bytes store held in a hash map on the heap: a get and a put are one hash lookup each, where Kafka Streams' in-memory
 * store ({@code Stores.inMemoryKeyValueStore}) walks a {@code TreeMap} under the store's monitor and RocksDB crosses JNI.
 * Not persistent: Kafka Streams restores it from its changelog on every start. A range or a scan copies and sorts the
 * matching entries (O(n log n)); the stateful baseline never asks for one.
 */
final class HashMapStore implements KeyValueStore<Bytes, byte[]> {
    private final String name;
    private final Map<Bytes, byte[]> map = new ConcurrentHashMap<>();
    private volatile boolean open;

    HashMapStore(String name) {
        this.name = name;
    }

    /** A supplier of these stores named {@code name}, for {@code Stores.keyValueStoreBuilder}. */
    static KeyValueBytesStoreSupplier supplier(String name) {
        return new KeyValueBytesStoreSupplier() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public KeyValueStore<Bytes, byte[]> get() {
                return new HashMapStore(name);
            }

            @Override
            public String metricsScope() {
                return "in-memory-hash-map";
            }
        };
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public void init(StateStoreContext context, StateStore root) {
        context.register(root, (RecordBatchingStateRestoreCallback) records -> records.forEach(record -> {
            if (record.value() == null) {
                map.remove(Bytes.wrap(record.key()));
            } else {
                map.put(Bytes.wrap(record.key()), record.value());
            }
        }));
        open = true;
    }

    @Override
    public boolean persistent() {
        return false;
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    @Override
    public void close() {
        map.clear();
        open = false;
    }

    @Override
    public <R> QueryResult<R> query(Query<R> query, PositionBound positionBound, QueryConfig config) {
        return QueryResult.forUnknownQueryType(query, this);
    }

    @Override
    public Position getPosition() {
        return Position.emptyPosition();
    }

    @Override
    public byte[] get(Bytes key) {
        return map.get(key);
    }

    @Override
    public void put(Bytes key, byte[] value) {
        if (value == null) {
            map.remove(key);
        } else {
            map.put(key, value);
        }
    }

    @Override
    public byte[] putIfAbsent(Bytes key, byte[] value) {
        return value == null ? map.get(key) : map.putIfAbsent(key, value);
    }

    @Override
    public void putAll(List<KeyValue<Bytes, byte[]>> entries) {
        entries.forEach(entry -> put(entry.key, entry.value));
    }

    @Override
    public byte[] delete(Bytes key) {
        return map.remove(key);
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> range(Bytes from, Bytes to) {
        return sorted(from, to, false);
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> reverseRange(Bytes from, Bytes to) {
        return sorted(from, to, true);
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> all() {
        return sorted(null, null, false);
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> reverseAll() {
        return sorted(null, null, true);
    }

    @Override
    public long approximateNumEntries() {
        return map.size();
    }

    /** A sorted copy of the entries from {@code from} to {@code to}, both inclusive ({@code null}: unbounded). */
    private KeyValueIterator<Bytes, byte[]> sorted(Bytes from, Bytes to, boolean reverse) {
        List<KeyValue<Bytes, byte[]>> entries = new ArrayList<>();
        map.forEach((key, value) -> {
            if ((from == null || key.compareTo(from) >= 0) && (to == null || key.compareTo(to) <= 0)) {
                entries.add(KeyValue.pair(key, value));
            }
        });
        Comparator<KeyValue<Bytes, byte[]>> byKey = Comparator.comparing(entry -> entry.key);
        entries.sort(reverse ? byKey.reversed() : byKey);
        return new KeyValueIterator<>() {
            private int next;

            @Override
            public boolean hasNext() {
                return next < entries.size();
            }

            @Override
            public KeyValue<Bytes, byte[]> next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                return entries.get(next++);
            }

            @Override
            public Bytes peekNextKey() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                return entries.get(next).key;
            }

            @Override
            public void close() {
            }
        };
    }
}
