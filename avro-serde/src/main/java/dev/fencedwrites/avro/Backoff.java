package dev.fencedwrites.avro;

/** Exponential backoff between registry retries: the first wait, doubling, capped. */
final class Backoff {
    private Backoff() {
    }

    /**
     * The wait before retry number {@code retry} (0 for the first retry), in milliseconds:
     * {@code initialMs * 2^retry}, at most {@code maxMs}.
     */
    static long delayMs(int retry, long initialMs, long maxMs) {
        if (initialMs <= 0) {
            return 0;
        }
        if (retry >= 62 || initialMs > (maxMs >> Math.min(retry, 62))) {
            return maxMs;
        }
        return Math.min(maxMs, initialMs << retry);
    }
}
