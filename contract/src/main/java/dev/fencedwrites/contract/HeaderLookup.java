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

    /** A lookup over Kafka client headers. */
    static HeaderLookup of(Headers headers) {
        return name -> {
            List<byte[]> values = new ArrayList<>(1);
            for (Header header : headers.headers(name)) {
                values.add(header.value());
            }
            return values;
        };
    }
}
