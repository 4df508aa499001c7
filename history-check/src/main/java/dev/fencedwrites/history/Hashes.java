package dev.fencedwrites.history;

import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/**
 * 64-bit fingerprints that let {@code fence verify} compare a key's expected and actual decisions in memory bounded by the
 * number of keys: an order-sensitive chain of record contents, and an order-free sum of decisions by input position. Equal
 * fingerprints mean equal histories but for a collision (about 2^-64 a key); unequal ones send the key to the record-by-record
 * pass, which finds out what differs.
 */
final class Hashes {
    private static final long FNV_OFFSET = 0xcbf29ce484222325L;
    private static final long FNV_PRIME = 0x100000001b3L;

    private Hashes() {
    }

    /** The fingerprint of a record's key, value and headers (names, values and order): what the enforcer copies byte for byte. */
    static long content(ConsumerRecord<byte[], byte[]> record) {
        long h = bytes(FNV_OFFSET, record.key());
        h = bytes(h, record.value());
        for (Header header : record.headers()) {
            h = bytes(h, header.key().getBytes(StandardCharsets.UTF_8));
            h = bytes(h, header.value());
        }
        return mix(h);
    }

    /** {@code chain} extended by one more record's {@link #content}: equal chains hold equal records in equal order. */
    static long chain(long chain, long content) {
        return mix(chain * 31 + content);
    }

    /** The fingerprint of one decision: the input position it is about, and what it was ({@code ACCEPTED}, a reason, ...). */
    static long decision(int partition, long offset, String what) {
        return mix(mix(((long) partition << 48) ^ offset) + what.hashCode());
    }

    private static long bytes(long h, byte[] data) {
        if (data == null) {
            return (h ^ 0xff) * FNV_PRIME * FNV_PRIME;
        }
        long out = (h ^ data.length) * FNV_PRIME;
        for (byte b : data) {
            out = (out ^ (b & 0xff)) * FNV_PRIME;
        }
        return out;
    }

    /** SplitMix64's finalizer: spreads every input bit over the output. */
    private static long mix(long z) {
        long x = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        x = (x ^ (x >>> 27)) * 0x94d049bb133111ebL;
        return x ^ (x >>> 31);
    }
}
