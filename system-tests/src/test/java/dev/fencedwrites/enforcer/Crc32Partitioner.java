package dev.fencedwrites.enforcer;

import java.util.Map;
import java.util.zip.CRC32;
import org.apache.kafka.clients.producer.Partitioner;
import org.apache.kafka.common.Cluster;

/**
 * librdkafka's default partitioner for keyed records ({@code consistent_random}: CRC32 of the key
 * bytes modulo the partition count), the one kcat, confluent-kafka-python, Go and .NET clients use
 * unless told otherwise: for most keys not the partition Kafka's murmur2 assigns.
 */
public final class Crc32Partitioner implements Partitioner {
    /** The partition librdkafka's {@code consistent_random} picks for {@code key}. */
    static int partition(byte[] key, int partitions) {
        CRC32 crc = new CRC32();
        crc.update(key);
        return (int) (crc.getValue() % partitions);
    }

    @Override
    public int partition(String topic, Object key, byte[] keyBytes, Object value, byte[] valueBytes, Cluster cluster) {
        return partition(keyBytes, cluster.partitionsForTopic(topic).size());
    }

    @Override
    public void configure(Map<String, ?> configs) {
    }

    @Override
    public void close() {
    }
}
