package dev.fencedwrites.sink.internal;

import dev.fencedwrites.contract.FenceHeaders;
import dev.fencedwrites.contract.HeaderLookup;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.header.Headers;

/**
 * A {@link HeaderLookup} over Connect headers. Values arrive as strings with
 * {@code header.converter=org.apache.kafka.connect.storage.StringConverter}, as raw bytes with a
 * byte-array converter, or as numbers when Connect's SimpleHeaderConverter inferred a type; each
 * is turned back into its UTF-8 text.
 */
public final class ConnectHeaderLookup {
    private ConnectHeaderLookup() {
    }

    public static HeaderLookup of(Headers headers) {
        return name -> {
            List<byte[]> values = new ArrayList<>(1);
            for (Iterator<Header> it = headers.allWithName(name); it.hasNext();) {
                Object value = it.next().value();
                values.add(value == null ? null : value instanceof byte[] bytes ? bytes : FenceHeaders.encode(value.toString()));
            }
            return values;
        };
    }
}
