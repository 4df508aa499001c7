package dev.fencedwrites.contract;

import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * Read access to a record's headers by name, so the same parser serves Kafka clients, Kafka
 * Streams and Kafka Connect.
 */
@FunctionalInterface
public interface HeaderLookup {
    /**
     * All values of the header {@code name}, in record order; empty when absent. A value may be
     * {@code null} (a header present with no value).
     */
    List<byte[]> values(String name);

    /**
     * The fence headers of the record, for {@link FenceStamp#parse}. This default looks each name up with
     * {@link #values}; a lookup that can walk the headers once overrides it.
     */
    default FenceHeaderValues fenceHeaders() {
        FenceHeaderValues found = new FenceHeaderValues();
        for (String name : FenceHeaders.PARSED) {
            for (byte[] value : values(name)) {
                found.add(name, value);
            }
        }
        return found;
    }

    /** A lookup over Kafka client headers; {@link #fenceHeaders} walks them once. */
    static HeaderLookup of(Headers headers) {
        return new HeaderLookup() {
            @Override
            public List<byte[]> values(String name) {
                List<byte[]> values = new ArrayList<>(1);
                for (Header header : headers.headers(name)) {
                    values.add(header.value());
                }
                return values;
            }

            @Override
            public FenceHeaderValues fenceHeaders() {
                FenceHeaderValues found = new FenceHeaderValues();
                for (Header header : headers) {
                    found.add(header.key(), header.value());
                }
                return found;
            }
        };
    }
}
