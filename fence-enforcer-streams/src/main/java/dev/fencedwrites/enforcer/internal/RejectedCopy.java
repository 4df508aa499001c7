package dev.fencedwrites.enforcer.internal;

import dev.fencedwrites.contract.FenceHeaders;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * The copy of a rejected record that fits the rejected topic, degraded in steps until it does:
 * the full record; without its value; without its largest own headers; finally a
 * reference record with no key, no value and none of its own headers. Every step but the first
 * adds the original sizes ({@code fence.source.key.bytes}, {@code .value.bytes},
 * {@code .headers.bytes}) and says what it left out ({@code fence.rejected.value.omitted},
 * {@code .headers.omitted}, {@code .key.omitted}), so the record is still accounted for; the
 * original stays on the input topic at the source offset.
 *
 * @param key     the copy's key, {@code null} in a reference record
 * @param value   the copy's value, {@code null} from {@link Step#WITHOUT_VALUE} on
 * @param headers the record's own headers that were kept, then the rejection headers
 * @param step    how far the copy had to be reduced
 */
public record RejectedCopy(byte[] key, byte[] value, Headers headers, Step step) {
    /** Room for a decimal long in a header value. */
    private static final int LONG_DIGITS = 20;

    /** How far a copy was reduced to fit. */
    public enum Step {
        /** Key, value and every header. */
        FULL,
        /** Key and every header; the value was left out. */
        WITHOUT_VALUE,
        /** Key and the headers that fit; the value and the largest own headers were left out. */
        WITHOUT_HEADERS,
        /** Only the rejection and source headers and the original sizes. */
        REFERENCE
    }

    /**
     * @param key       the input record's key, may be {@code null}
     * @param value     the input record's value, may be {@code null}
     * @param own       the input record's headers
     * @param rejection the headers the rejection adds ({@code fence.rejected.*}, {@code fence.source.*}), small
     * @param maxBytes  the largest record the rejected topic and the producer take
     *                  ({@link dev.fencedwrites.enforcer.FenceEnforcerTopology.Limits#rejectedMaxBytes()})
     * @throws IllegalStateException when not even the reference record fits, which
     *     {@link dev.fencedwrites.enforcer.FenceEnforcerTopology.Limits} rules out
     */
    public static RejectedCopy of(byte[] key, byte[] value, Header[] own, List<Header> rejection, long maxBytes) {
        List<Header> full = concat(Arrays.asList(own), rejection);
        if (RecordSize.upperBound(key, value, full) <= maxBytes) {
            return new RejectedCopy(key, value, new RecordHeaders(full.toArray(Header[]::new)), Step.FULL);
        }
        List<Header> sizes = List.of(
                header(FenceHeaders.SOURCE_KEY_BYTES, Long.toString(RecordSize.length(key))),
                header(FenceHeaders.SOURCE_VALUE_BYTES, Long.toString(RecordSize.length(value))),
                header(FenceHeaders.SOURCE_HEADERS_BYTES, Long.toString(RecordSize.headersBytes(Arrays.asList(own)))));
        List<Header> marks = new ArrayList<>(concat(rejection, sizes));
        if (value != null) {
            marks.add(header(FenceHeaders.REJECTED_VALUE_OMITTED, "true"));
            List<Header> withoutValue = concat(Arrays.asList(own), marks);
            if (RecordSize.upperBound(key, null, withoutValue) <= maxBytes) {
                return new RejectedCopy(key, null, new RecordHeaders(withoutValue.toArray(Header[]::new)), Step.WITHOUT_VALUE);
            }
        }
        RejectedCopy withoutHeaders = withoutLargestHeaders(key, own, marks, maxBytes);
        if (withoutHeaders != null) {
            return withoutHeaders;
        }
        // The record's own fencing headers, when short, still say whose write it was and with what token.
        List<Header> fencing = new ArrayList<>();
        for (Header header : own) {
            if (REFERENCE_FENCING_HEADERS.contains(header.key())
                    && RecordSize.headerBytes(header) <= REFERENCE_FENCING_HEADER_MAX_BYTES) {
                fencing.add(header);
            }
        }
        List<Header> reference = referenceHeaders(marks, fencing, own.length);
        if (RecordSize.upperBound(null, null, reference) > maxBytes) {
            reference = referenceHeaders(marks, List.of(), own.length);
        }
        if (RecordSize.upperBound(null, null, reference) > maxBytes) {
            throw new IllegalStateException("a reference record of " + RecordSize.upperBound(null, null, reference)
                    + " bytes does not fit the rejected topic's limit of " + maxBytes + " bytes");
        }
        return new RejectedCopy(null, null, new RecordHeaders(reference.toArray(Header[]::new)), Step.REFERENCE);
    }

    /**
     * The record's own headers a reference record keeps when each is at most {@value #REFERENCE_FENCING_HEADER_MAX_BYTES} bytes.
     */
    private static final Set<String> REFERENCE_FENCING_HEADERS = Set.of(FenceHeaders.TOKEN, FenceHeaders.SEQ,
            FenceHeaders.OP,
            FenceHeaders.LEASE, FenceHeaders.WRITER);
    static final int REFERENCE_FENCING_HEADER_MAX_BYTES = 128;

    private static List<Header> referenceHeaders(List<Header> marks, List<Header> fencing, int ownCount) {
        List<Header> reference = new ArrayList<>(fencing);
        reference.addAll(marks);
        if (ownCount > fencing.size()) {
            reference.add(header(FenceHeaders.REJECTED_HEADERS_OMITTED, Integer.toString(ownCount - fencing.size())));
        }
        reference.add(header(FenceHeaders.REJECTED_KEY_OMITTED, "true"));
        return reference;
    }

    /** The key and the record's own headers less the largest ones, or {@code null} when even the key alone does not fit. */
    private static RejectedCopy withoutLargestHeaders(byte[] key, Header[] own, List<Header> marks, long maxBytes) {
        Header omittedCount = header(FenceHeaders.REJECTED_HEADERS_OMITTED, "0".repeat(LONG_DIGITS));
        long size = RecordSize.upperBound(key, null, concat(concat(Arrays.asList(own), marks), List.of(omittedCount)));
        Integer[] largestFirst = new Integer[own.length];
        Arrays.setAll(largestFirst, i -> i);
        Arrays.sort(largestFirst, Comparator.comparingLong((Integer i) -> RecordSize.headerBytes(own[i])).reversed());
        boolean[] dropped = new boolean[own.length];
        int droppedCount = 0;
        for (int i = 0; i < largestFirst.length && size > maxBytes; i++) {
            dropped[largestFirst[i]] = true;
            droppedCount++;
            size -= RecordSize.headerBytes(own[largestFirst[i]]) + RecordSize.HEADER_OVERHEAD;
        }
        if (size > maxBytes) {
            return null;
        }
        List<Header> kept = new ArrayList<>();
        for (int i = 0; i < own.length; i++) {
            if (!dropped[i]) {
                kept.add(own[i]);
            }
        }
        kept.addAll(marks);
        kept.add(header(FenceHeaders.REJECTED_HEADERS_OMITTED, Integer.toString(droppedCount)));
        return new RejectedCopy(key, null, new RecordHeaders(kept.toArray(Header[]::new)), Step.WITHOUT_HEADERS);
    }

    private static List<Header> concat(List<Header> first, List<Header> second) {
        List<Header> all = new ArrayList<>(first.size() + second.size());
        all.addAll(first);
        all.addAll(second);
        return all;
    }

    private static Header header(String name, String value) {
        return new RecordHeader(name, FenceHeaders.encode(value));
    }
}
