package dev.fencedwrites.sink.internal;

import dev.fencedwrites.contract.HeaderLookup;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.header.Headers;

/**
 * A {@link HeaderLookup} over Connect headers as {@code header.converter=ByteArrayConverter} gives them: raw bytes. A value
 * of any other type means a converter parsed it (Connect's SimpleHeaderConverter turns "10.50" into 10.5), so its text can
 * no longer be trusted; the connector refuses such a converter at start, and this throws rather than guess.
 */
public final class ConnectHeaderLookup {
    private ConnectHeaderLookup() {
    }

    /**
     * @throws ConnectException from a lookup, when a value is not {@code byte[]} (a header converter other than
     *         ByteArrayConverter)
     */
    public static HeaderLookup of(Headers headers) {
        return name -> {
            List<byte[]> values = new ArrayList<>(1);
            for (Iterator<Header> it = headers.allWithName(name); it.hasNext();) {
                Object value = it.next().value();
                if (value != null && !(value instanceof byte[])) {
                    throw new ConnectException("header " + name + " arrived as " + value.getClass().getName()
                            + ", parsed by a header converter: set header.converter="
                            + "org.apache.kafka.connect.converters.ByteArrayConverter in the connector's configuration");
                }
                values.add((byte[]) value);
            }
            return values;
        };
    }
}
