package dev.fencedwrites.enforcer.internal;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.streams.processor.TimestampExtractor;

/**
 * Keeps a record's own timestamp, and gives a record with an invalid (negative) one the
 * partition's time, or the wall clock when the partition has none yet. The fence does not depend
 * on time, so such a record is decided like any other; Kafka Streams' default extractor would
 * instead stop the application on it, again after every restart.
 */
public final class LenientTimestampExtractor implements TimestampExtractor {
    @Override
    public long extract(ConsumerRecord<Object, Object> record, long partitionTime) {
        if (record.timestamp() >= 0) {
            return record.timestamp();
        }
        return partitionTime >= 0 ? partitionTime : System.currentTimeMillis();
    }
}
